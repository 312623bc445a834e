#include "datasync/store_config.h"

#include <nlohmann/json.hpp>

namespace cutover {
namespace {

std::string Sizes(const ChunkerParams& p) {
  return std::to_string(p.min_size) + "/" + std::to_string(p.avg_size) + "/" +
         std::to_string(p.max_size);
}

}  // namespace

Result<ChunkerParams> ReadStoreConfig(Store& store) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, store.Get(kConfigKey));
  using nlohmann::json;
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::string where = "store config " + store.Url() + "/" + kConfigKey;
  // An HTTP server that is not WebDAV (a web site, an API) may answer GET config with a page:
  // say that, not only what the page lacks.
  const std::string not_dav = store.Url().starts_with("http")
                                  ? ": this HTTP server answers, but not as a WebDAV server "
                                    "holding a datasync store (is it WebDAV?)"
                                  : "";
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument(where + ": not a JSON object" + not_dav);
  }
  const json& fmt = doc.value("format", json());
  if (!fmt.is_number_integer()) {
    return Status::InvalidArgument(where + ": no integer \"format\"" + not_dav);
  }
  if (fmt.get<int64_t>() != kStoreFormat) {
    return Status::InvalidArgument(where + ": format " + std::to_string(fmt.get<int64_t>()) +
                                   " is not the one this cutover reads (" +
                                   std::to_string(kStoreFormat) + ")");
  }
  if (doc.value("hash", json()) != json("sha256")) {
    return Status::InvalidArgument(where + ": hash is not \"sha256\"");
  }
  const json& enc = doc.value("encryption", json());
  if (!enc.is_boolean()) return Status::InvalidArgument(where + ": no boolean \"encryption\"");
  const StoreEncryption* mine = store.Encryption();
  if (enc.get<bool>()) {
    const json& check = doc.value("key_check", json());
    if (!check.is_string() || check.get<std::string>().size() != 32) {
      return Status::InvalidArgument(where + ": encrypted, but no 32-hex-digit \"key_check\"");
    }
    if (mine == nullptr) {
      return Status::FailedPrecondition("store " + store.Url() +
                                        " is encrypted: pass --encrypt KEYFILE with its key");
    }
    if (check.get<std::string>() != mine->key_check) {
      return Status::FailedPrecondition("the key in " + mine->key_file +
                                        " is not the key of store " + store.Url());
    }
  } else if (mine != nullptr) {
    return Status::FailedPrecondition("store " + store.Url() +
                                      " is not encrypted: drop --encrypt (only a new store can be "
                                      "encrypted)");
  }
  const json& ch = doc.value("chunker", json());
  auto u64 = [&](const char* k) -> Result<uint64_t> {
    if (!ch.is_object() || !ch.contains(k) || !ch[k].is_number_unsigned()) {
      return Status::InvalidArgument(where + ": no chunker \"" + k + "\"");
    }
    return ch[k].get<uint64_t>();
  };
  CUTOVER_ASSIGN_OR_RETURN(uint64_t version, u64("version"));
  if (version != static_cast<uint64_t>(kChunkerVersion)) {
    return Status::InvalidArgument(where + ": chunker version " + std::to_string(version) +
                                   " is not " + std::to_string(kChunkerVersion));
  }
  ChunkerParams p;
  CUTOVER_ASSIGN_OR_RETURN(p.min_size, u64("min"));
  CUTOVER_ASSIGN_OR_RETURN(p.avg_size, u64("avg"));
  CUTOVER_ASSIGN_OR_RETURN(p.max_size, u64("max"));
  CUTOVER_RETURN_IF_ERROR(p.Validate().WithContext(where));
  return p;
}

Status CheckManifestChunker(Store& store, const ChunkerParams& manifest) {
  Result<ChunkerParams> have = ReadStoreConfig(store);
  if (!have.ok()) return have.status().code() == Code::kNotFound ? Status::Ok() : have.status();
  if (*have == manifest) return Status::Ok();
  return Status::InvalidArgument("manifest: chunker min/avg/max " + Sizes(manifest) +
                                 " is not the store's (" + Sizes(*have) + ")");
}

Result<ChunkerParams> EnsureStoreConfig(Store& store, const ChunkerParams& params, bool* created) {
  if (created != nullptr) *created = false;
  auto have = ReadStoreConfig(store);
  if (have.ok()) {
    if (!(*have == params)) {
      return Status::FailedPrecondition("store " + store.Url() +
                                        " was created with chunker min/avg/max " + Sizes(*have) +
                                        ", not " + Sizes(params));
    }
    return *have;
  }
  if (have.status().code() != Code::kNotFound) return have.status();
  nlohmann::json doc = {{"format", kStoreFormat},
                        {"chunker",
                         {{"version", kChunkerVersion},
                          {"min", params.min_size},
                          {"avg", params.avg_size},
                          {"max", params.max_size}}},
                        {"hash", "sha256"},
                        {"encryption", store.Encryption() != nullptr}};
  if (store.Encryption() != nullptr) doc["key_check"] = store.Encryption()->key_check;
  CUTOVER_RETURN_IF_ERROR(store.Put(kConfigKey, doc.dump()));
  if (created != nullptr) *created = true;
  return params;
}

}  // namespace cutover
