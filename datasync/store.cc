#include "datasync/store.h"

#include <openssl/crypto.h>

#include "core/sha256.h"

#include "datasync/file_store.h"
#include "datasync/s3_store.h"
#include "datasync/webdav_store.h"

namespace cutover {
namespace {

std::string SpreadKey(const char* dir, const ChunkId& id) {
  std::string hex = ToHex(id);
  return std::string(dir) + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
}

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

ObjectNames::ObjectNames(const std::array<uint8_t, 32>& name_key) : keyed_(true), key_(name_key) {}

ObjectNames::~ObjectNames() { OPENSSL_cleanse(key_.data(), key_.size()); }

std::string ObjectNames::Chunk(const ChunkId& id) const {
  if (!keyed_) return ChunkKey(id);
  std::string_view k(reinterpret_cast<const char*>(key_.data()), key_.size());
  return ChunkKey(
      HmacSha256(k, std::string_view(reinterpret_cast<const char*>(id.data()), id.size())));
}

std::string ObjectNames::Pack(const ChunkId& id) const {
  if (!keyed_) return PackKey(id);
  std::string_view k(reinterpret_cast<const char*>(key_.data()), key_.size());
  return PackKey(
      HmacSha256(k, std::string_view(reinterpret_cast<const char*>(id.data()), id.size())));
}

const ObjectNames& Store::Names() const {
  static const ObjectNames* plain = new ObjectNames();
  return *plain;
}

Result<bool> Store::Exists(std::string_view key) {
  auto r = Head(key);
  if (r.ok()) return true;
  if (r.status().code() == Code::kNotFound) return false;
  return r.status();
}

Status ValidateKey(std::string_view key) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("bad store key \"" + std::string(key) + "\": " + why);
  };
  if (key.empty()) return bad("empty");
  if (key.size() > 1024) return bad("longer than 1024 bytes");
  size_t start = 0;
  for (;;) {
    size_t slash = key.find('/', start);
    std::string_view comp =
        key.substr(start, slash == std::string_view::npos ? key.npos : slash - start);
    if (comp.empty()) return bad("empty component");
    if (comp[0] == '.') return bad("component starts with '.'");
    for (char c : comp) {
      if (!KeyChar(c)) return bad("character outside [A-Za-z0-9._-]");
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

std::string ChunkKey(const ChunkId& id) { return SpreadKey("chunks", id); }
std::string PackKey(const ChunkId& id) { return SpreadKey("packs", id); }

Result<std::string> SnapshotKey(std::string_view name) {
  if (name.find('/') != std::string_view::npos || ValidateKey(name).ok() == false) {
    return Status::InvalidArgument("bad snapshot name \"" + std::string(name) +
                                   "\": use letters, digits, '.', '_' and '-', not starting "
                                   "with '.'");
  }
  return "snapshots/" + std::string(name);
}

Result<std::unique_ptr<Store>> OpenStore(std::string_view url) { return OpenStore(url, {}); }

Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options) {
  if (url.starts_with("file://")) {
    CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<FileStore> fs, FileStore::Open(url));
    return std::unique_ptr<Store>(std::move(fs));
  }
  if (url.starts_with("http://") || url.starts_with("https://")) {
    return OpenWebDavStore(url, options);
  }
  if (url.starts_with("s3://")) return OpenS3Store(url, options);
  // Only the scheme is echoed: the rest of a URL may hold a credential.
  size_t colon = url.find("://");
  std::string scheme = colon == std::string_view::npos ? "" : std::string(url.substr(0, colon));
  return Status::InvalidArgument("bad store URL (scheme \"" + scheme +
                                 "\"): expected file:///path, http(s)://host/path or "
                                 "s3://bucket/prefix");
}

}  // namespace cutover
