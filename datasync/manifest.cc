#include "datasync/manifest.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <istream>
#include <streambuf>
#include <unordered_map>

#include "core/sha256.h"
#include "datasync/shard.h"

#include <zstd.h>
#include <nlohmann/json.hpp>

namespace cutover {
namespace {

using nlohmann::json;

constexpr int kZstdLevel = 3;

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += len;
  }
  return true;
}

bool HexBytes(std::string_view hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    int a = nib(hex[i]), b = nib(hex[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}

// Stores a byte string as `key` when it is UTF-8, else as `key`_hex.
void PutName(json& obj, const std::string& key, const std::string& value) {
  if (ValidUtf8(value)) {
    obj[key] = value;
  } else {
    obj[key + "_hex"] = HexEncode(value);
  }
}

// Typed field access without exceptions. `where` starts every message.
class Fields {
 public:
  Fields(const json& obj, std::string where) : obj_(obj), where_(std::move(where)) {}

  Result<uint64_t> U64(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) return Missing(key);
    if (!it->is_number_unsigned()) {
      return Status::InvalidArgument(where_ + ": \"" + key + "\" is not a non-negative integer");
    }
    return it->get<uint64_t>();
  }
  Result<int64_t> I64(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) return Missing(key);
    if (it->is_number_unsigned()) {
      uint64_t v = it->get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX)) {
        return Status::InvalidArgument(where_ + ": \"" + key + "\" is out of range");
      }
      return static_cast<int64_t>(v);
    }
    if (!it->is_number_integer()) {
      return Status::InvalidArgument(where_ + ": \"" + key + "\" is not an integer");
    }
    return it->get<int64_t>();
  }
  Result<std::string> Str(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end()) return Missing(key);
    if (!it->is_string()) {
      return Status::InvalidArgument(where_ + ": \"" + key + "\" is not a string");
    }
    return it->get<std::string>();
  }
  // `key` as a string, or `key`_hex decoded; exactly one of them must be present.
  Result<std::string> Name(const std::string& key) const {
    std::string hex_key = key + "_hex";
    bool plain = obj_.contains(key), hex = obj_.contains(hex_key);
    if (plain && hex) {
      return Status::InvalidArgument(where_ + ": both \"" + key + "\" and \"" + hex_key +
                                     "\" are present");
    }
    if (!plain && !hex) return Missing(key.c_str());
    if (plain) return Str(key.c_str());
    CUTOVER_ASSIGN_OR_RETURN(std::string h, Str(hex_key.c_str()));
    std::string out;
    if (!HexBytes(h, &out)) {
      return Status::InvalidArgument(where_ + ": \"" + hex_key + "\" is not lower-case hex");
    }
    return out;
  }
  Result<ChunkId> Id(const char* key) const {
    CUTOVER_ASSIGN_OR_RETURN(std::string h, Str(key));
    auto id = ParseChunkId(h);
    if (!id.ok())
      return Status::InvalidArgument(where_ + ": \"" + key + "\": " + id.status().message());
    return *id;
  }
  bool Has(const char* key) const { return obj_.contains(key); }
  const std::string& where() const { return where_; }

 private:
  Status Missing(const char* key) const {
    return Status::InvalidArgument(where_ + ": no \"" + key + "\" field");
  }
  const json& obj_;
  std::string where_;
};

std::string EntryWhere(size_t i) { return "manifest entry " + std::to_string(i); }

Status CheckPath(const std::string& path, const std::string& where) {
  if (path.empty()) return Status::InvalidArgument(where + ": path is empty");
  if (path.find('\0') != std::string::npos) {
    return Status::InvalidArgument(where + ": path contains a NUL byte");
  }
  if (path[0] == '/')
    return Status::InvalidArgument(where + ": path " + Quote(path) + " is absolute");
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    std::string_view comp(path.data() + start,
                          (slash == std::string::npos ? path.size() : slash) - start);
    if (comp.empty()) {
      return Status::InvalidArgument(where + ": path " + Quote(path) + " has an empty component");
    }
    if (comp == "..") {
      return Status::InvalidArgument(where + ": path " + Quote(path) + " has a \"..\" component");
    }
    if (comp == ".") {
      return Status::InvalidArgument(where + ": path " + Quote(path) + " has a \".\" component");
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return Status::Ok();
}

// `max_chunk`: the chunker's max size; no chunk is longer (a longer one is a crafted manifest
// that would make a reader allocate it).
Status CheckEntry(const Entry& e, const std::string& where, uint64_t max_chunk) {
  CUTOVER_RETURN_IF_ERROR(CheckPath(e.path, where));
  if (e.mode > 07777) {
    return Status::InvalidArgument(where + ": mode " + std::to_string(e.mode) +
                                   " has bits outside 07777");
  }
  if (e.type != EntryType::kSymlink && !e.target.empty()) {
    return Status::InvalidArgument(where + ": a " + std::string(EntryTypeName(e.type)) +
                                   " has a symlink target");
  }
  if (e.type != EntryType::kFile && (!e.link.empty() || e.sparse)) {
    return Status::InvalidArgument(where + ": a " + std::string(EntryTypeName(e.type)) +
                                   " has a hard link or holes");
  }
  if (!e.link.empty()) {
    CUTOVER_RETURN_IF_ERROR(CheckPath(e.link, where + " link"));
    if (e.link == e.path) return Status::InvalidArgument(where + ": a hard link to itself");
  }
  if (e.type != EntryType::kFile && (!e.chunks.empty() || e.size != 0)) {
    return Status::InvalidArgument(where + ": a " + std::string(EntryTypeName(e.type)) +
                                   " has a size or chunks");
  }
  if (e.type == EntryType::kSymlink) {
    if (e.target.empty()) return Status::InvalidArgument(where + ": symlink target is empty");
    if (e.target.find('\0') != std::string::npos) {
      return Status::InvalidArgument(where + ": symlink target contains a NUL byte");
    }
  }
  if (e.type == EntryType::kFile) {
    uint64_t sum = 0;
    for (size_t k = 0; k < e.chunks.size(); ++k) {
      if (e.chunks[k].length == 0) {
        return Status::InvalidArgument(where + ": chunk " + std::to_string(k) + " is empty");
      }
      if (e.chunks[k].length > max_chunk) {
        return Status::InvalidArgument(where + ": chunk " + std::to_string(k) + " length " +
                                       std::to_string(e.chunks[k].length) +
                                       " is above the chunker's max size " +
                                       std::to_string(max_chunk));
      }
      if (e.chunks[k].length > UINT64_MAX - sum) {
        return Status::InvalidArgument(where + ": chunk lengths overflow");
      }
      sum += e.chunks[k].length;
    }
    if (sum != e.size) {
      return Status::InvalidArgument(where + ": chunk lengths sum to " + std::to_string(sum) +
                                     ", size is " + std::to_string(e.size));
    }
  }
  return Status::Ok();
}

Result<Entry> ParseEntry(const json& j, size_t index) {
  std::string where = EntryWhere(index);
  if (!j.is_object()) return Status::InvalidArgument(where + ": not an object");
  Fields f(j, where);
  Entry e;
  CUTOVER_ASSIGN_OR_RETURN(e.path, f.Name("path"));
  CUTOVER_ASSIGN_OR_RETURN(std::string type, f.Str("type"));
  if (type == "file") {
    e.type = EntryType::kFile;
  } else if (type == "dir") {
    e.type = EntryType::kDir;
  } else if (type == "symlink") {
    e.type = EntryType::kSymlink;
  } else {
    return Status::InvalidArgument(where + ": unknown type " + Quote(type));
  }
  CUTOVER_ASSIGN_OR_RETURN(uint64_t mode, f.U64("mode"));
  if (mode > 07777) {
    return Status::InvalidArgument(where + ": mode " + std::to_string(mode) +
                                   " has bits outside 07777");
  }
  e.mode = static_cast<uint32_t>(mode);
  CUTOVER_ASSIGN_OR_RETURN(e.mtime_ns, f.I64("mtime_ns"));
  if (e.type == EntryType::kFile) {
    CUTOVER_ASSIGN_OR_RETURN(e.size, f.U64("size"));
    auto it = j.find("chunks");
    if (it == j.end()) return Status::InvalidArgument(where + ": no \"chunks\" field");
    if (!it->is_array()) return Status::InvalidArgument(where + ": \"chunks\" is not an array");
    for (size_t k = 0; k < it->size(); ++k) {
      const json& c = (*it)[k];
      std::string cwhere = where + " chunk " + std::to_string(k);
      if (!c.is_object()) return Status::InvalidArgument(cwhere + ": not an object");
      Fields cf(c, cwhere);
      ChunkRef ref;
      CUTOVER_ASSIGN_OR_RETURN(ref.id, cf.Id("id"));
      CUTOVER_ASSIGN_OR_RETURN(ref.length, cf.U64("len"));
      if (cf.Has("pack") || cf.Has("off")) {
        ref.packed = true;
        CUTOVER_ASSIGN_OR_RETURN(ref.pack, cf.Id("pack"));
        CUTOVER_ASSIGN_OR_RETURN(ref.pack_offset, cf.U64("off"));
      }
      e.chunks.push_back(ref);
    }
  } else {
    for (const char* key : {"size", "chunks"}) {
      if (j.contains(key)) {
        return Status::InvalidArgument(where + ": a " + type + " has a \"" + key + "\" field");
      }
    }
  }
  if (e.type == EntryType::kSymlink) {
    CUTOVER_ASSIGN_OR_RETURN(e.target, f.Name("target"));
  } else if (j.contains("target") || j.contains("target_hex")) {
    return Status::InvalidArgument(where + ": a " + type + " has a symlink target");
  }
  if (j.contains("link") || j.contains("link_hex")) {
    if (e.type != EntryType::kFile) {
      return Status::InvalidArgument(where + ": a " + type + " has a hard link");
    }
    CUTOVER_ASSIGN_OR_RETURN(e.link, f.Name("link"));
  }
  if (auto it = j.find("sparse"); it != j.end()) {
    if (!it->is_boolean() || e.type != EntryType::kFile) {
      return Status::InvalidArgument(where + ": \"sparse\" must be true or false, on a file");
    }
    e.sparse = it->get<bool>();
  }
  return e;
}

// The manifest's text, decompressed piece by piece as the parser asks for it: never the whole
// text in memory. It refuses more text than the entries read so far can take (a zstd bomb of
// whitespace stops after ~1 MiB, not at kMaxManifestBytes), a corrupt or truncated frame and
// bytes after the frame; the reason is in status() and the parser sees the end of its input.
class ZstdSource : public std::streambuf {
 public:
  ZstdSource(std::string_view bytes, const uint64_t* items)
      : dctx_(ZSTD_createDCtx()),
        in_{bytes.data(), bytes.size(), 0},
        items_(items),
        buf_(ZSTD_DStreamOutSize(), '\0') {
    // Every zstd frame starts with the magic number 0xFD2FB528, little-endian.
    static constexpr unsigned char kMagic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
      status_ = Status::Corruption("manifest: not zstd data");
    } else if (dctx_ == nullptr) {
      status_ = Status::Internal("manifest: cannot allocate a zstd context");
    }
  }
  ~ZstdSource() override { ZSTD_freeDCtx(dctx_); }

  const Status& status() const { return status_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    while (status_.ok() && !done_) {
      ZSTD_outBuffer o{buf_.data(), buf_.size(), 0};
      const size_t ret = ZSTD_decompressStream(dctx_, &o, &in_);
      if (ZSTD_isError(ret)) {
        status_ = Status::Corruption(std::string("manifest: corrupt zstd data: ") +
                                     ZSTD_getErrorName(ret));
        break;
      }
      total_ += o.pos;
      const uint64_t allowed = kManifestBaseBytes + kManifestBytesPerItem * *items_;
      if (total_ > kMaxManifestBytes || total_ > allowed) {
        status_ = Status::Corruption(
            "manifest: larger than " + std::to_string(std::min(allowed, kMaxManifestBytes)) +
            " bytes (what " + std::to_string(*items_) + " entries and chunks can take)");
        break;
      }
      if (ret == 0) {  // the frame is complete
        done_ = true;
        if (in_.pos < in_.size) {
          status_ =
              Status::Corruption("manifest: corrupt zstd data: trailing bytes after the frame");
          break;
        }
      } else if (o.pos == 0 && in_.pos == in_.size) {
        status_ = Status::Corruption("manifest: corrupt zstd data: truncated frame");
        break;
      }
      if (o.pos > 0) {
        setg(buf_.data(), buf_.data(), buf_.data() + o.pos);
        return traits_type::to_int_type(*gptr());
      }
    }
    return traits_type::eof();
  }

 private:
  ZSTD_DCtx* dctx_;
  ZSTD_inBuffer in_;
  const uint64_t* items_;
  std::string buf_;
  uint64_t total_ = 0;
  bool done_ = false;
  Status status_;
};

// Builds the manifest's header as a small JSON document while its parser streams through the
// text, and hands over each element of the top-level "entries" array as soon as it is complete
// (parsed and checked alone with ParseEntry and CheckEntry), so no more than one entry is ever
// held as JSON. The header's "entries" stays an empty array.
class ManifestSax {
 public:
  using OnEntry = std::function<Status(Entry&&)>;
  explicit ManifestSax(const OnEntry& on_entry) : on_entry_(on_entry) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool v) { return Value(v); }
  bool number_integer(json::number_integer_t v) { return Value(v); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(v); }
  bool number_float(json::number_float_t v, const std::string&) { return Value(v); }
  bool string(std::string& v) { return Value(std::move(v)); }
  bool binary(json::binary_t&) { return Fail(Status::Corruption("manifest: not JSON")); }
  bool start_object(std::size_t) { return Open(json::object()); }
  bool start_array(std::size_t) { return Open(json::array()); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }
  bool key(std::string& k) {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return Fail(Status::Corruption("manifest: not JSON"));
  }

  json& root() { return root_; }
  const Status& status() const { return status_; }
  bool saw_entries() const { return saw_entries_; }
  // Entries and chunks read so far (what the text may grow with).
  const uint64_t* items() const { return &items_; }

 private:
  bool Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
    return false;
  }
  // Places `v` where the parser is: the root, the current entry, or inside the open container.
  json* Place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back();
    if (top == nullptr) {  // an element of "entries"
      entry_ = std::move(v);
      return &entry_;
    }
    if (top->is_object()) {
      json& slot = (*top)[key_];
      slot = std::move(v);
      return &slot;
    }
    top->push_back(std::move(v));
    return &top->back();
  }
  bool Value(json v) {
    json* placed = Place(std::move(v));
    if (!stack_.empty() && stack_.back() == nullptr) return EntryDone(*placed);
    return true;
  }
  bool Open(json v) {
    if (stack_.size() == 1 && stack_[0] == &root_ && root_.is_object() && key_ == "entries" &&
        v.is_array()) {
      if (saw_entries_) return Fail(Status::InvalidArgument("manifest: two \"entries\" arrays"));
      saw_entries_ = true;
      root_["entries"] = json::array();
      stack_.push_back(nullptr);
      return true;
    }
    stack_.push_back(Place(std::move(v)));
    return true;
  }
  bool Close() {
    json* closed = stack_.back();
    stack_.pop_back();
    if (closed == &entry_ && !stack_.empty() && stack_.back() == nullptr) return EntryDone(entry_);
    return true;
  }
  bool EntryDone(const json& j) {
    const size_t index = count_++;
    Result<Entry> e = ParseEntry(j, index);
    if (!e.ok()) return Fail(e.status());
    auto chunker = root_.find("chunker");
    if (chunker == root_.end() || !chunker->is_object() || !chunker->contains("max") ||
        !(*chunker)["max"].is_number_unsigned()) {
      return Fail(Status::InvalidArgument("manifest: no \"chunker\" before \"entries\""));
    }
    Status s = CheckEntry(*e, EntryWhere(index), (*chunker)["max"].get<uint64_t>());
    if (!s.ok()) return Fail(std::move(s));
    items_ += 1 + e->chunks.size();
    entry_ = json();
    s = on_entry_(std::move(e).value());
    return s.ok() || Fail(std::move(s));
  }

  const OnEntry& on_entry_;
  json root_;
  json entry_;                // the entry being built
  std::vector<json*> stack_;  // open containers; nullptr: the "entries" array
  std::string key_;
  bool saw_entries_ = false;
  size_t count_ = 0;
  uint64_t items_ = 0;
  Status status_;
};

}  // namespace

std::string_view EntryTypeName(EntryType type) {
  switch (type) {
    case EntryType::kFile:
      return "file";
    case EntryType::kDir:
      return "dir";
    case EntryType::kSymlink:
      return "symlink";
  }
  return "?";
}

namespace {

// The checks of everything but the entries.
Status ValidateHeader(const Manifest& m) {
  if (m.format != kManifestFormat) {
    return Status::InvalidArgument("manifest: format " + std::to_string(m.format) +
                                   " is not the one this cutover writes (" +
                                   std::to_string(kManifestFormat) + ")");
  }
  CUTOVER_RETURN_IF_ERROR(m.chunker.Validate().WithContext("manifest"));
  if (m.shard.has_value()) {
    const ShardInfo& sh = *m.shard;
    if (sh.count < 1 || sh.count > kMaxShards || sh.index < 1 || sh.index > sh.count) {
      return Status::InvalidArgument(
          "manifest: shard " + std::to_string(sh.index) + "/" + std::to_string(sh.count) +
          " is not I/N with 1 <= I <= N <= " + std::to_string(kMaxShards));
    }
  }
  return Status::Ok();
}

Status CheckShardSize(const Manifest& m, uint64_t entries) {
  if (m.shard.has_value() && m.shard->tree_entries < entries) {
    return Status::InvalidArgument("manifest: shard holds " + std::to_string(entries) +
                                   " entries of a tree of " +
                                   std::to_string(m.shard->tree_entries));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateManifest(const Manifest& m) {
  CUTOVER_RETURN_IF_ERROR(ValidateHeader(m));
  CUTOVER_RETURN_IF_ERROR(CheckShardSize(m, m.entries.size()));
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(m.entries.size());
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    CUTOVER_RETURN_IF_ERROR(CheckEntry(e, EntryWhere(i), m.chunker.max_size));
    auto [it, inserted] = index.emplace(e.path, i);
    if (!inserted) {
      return Status::InvalidArgument(EntryWhere(i) + ": path " + Quote(e.path) + " repeats entry " +
                                     std::to_string(it->second));
    }
  }
  // A hard link names an earlier file.
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    if (e.link.empty()) continue;
    auto it = index.find(e.link);
    if (it == index.end() || it->second >= i || m.entries[it->second].type != EntryType::kFile) {
      return Status::InvalidArgument(EntryWhere(i) + ": hard link " + Quote(e.link) +
                                     " is not an earlier file of the snapshot");
    }
  }
  // No entry may lie below a file or a symlink: writing it would go through that entry.
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const std::string& path = m.entries[i].path;
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      auto it = index.find(std::string_view(path.data(), slash));
      if (it != index.end() && m.entries[it->second].type != EntryType::kDir) {
        return Status::InvalidArgument(EntryWhere(i) + ": parent " + Quote(path.substr(0, slash)) +
                                       " of " + Quote(path) + " is a " +
                                       std::string(EntryTypeName(m.entries[it->second].type)) +
                                       ", not a directory");
      }
    }
  }
  return Status::Ok();
}

namespace {

// Compresses text handed to it piece by piece into one zstd frame, so a manifest of a million
// entries is never held as one JSON text (nor as one JSON document) in memory.
class ZstdWriter {
 public:
  ZstdWriter() : ctx_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, kZstdLevel);
  }
  ~ZstdWriter() { ZSTD_freeCCtx(ctx_); }
  ZstdWriter(const ZstdWriter&) = delete;
  ZstdWriter& operator=(const ZstdWriter&) = delete;

  Status Add(std::string_view text, bool last = false) {
    ZSTD_inBuffer in{text.data(), text.size(), 0};
    const ZSTD_EndDirective mode = last ? ZSTD_e_end : ZSTD_e_continue;
    while (true) {
      char buf[1 << 16];
      ZSTD_outBuffer o{buf, sizeof buf, 0};
      const size_t left = ZSTD_compressStream2(ctx_, &o, &in, mode);
      if (ZSTD_isError(left)) {
        return Status::Internal(std::string("manifest: zstd compression failed: ") +
                                ZSTD_getErrorName(left));
      }
      Append(std::string_view(buf, o.pos));
      if (last ? left == 0 : in.pos == in.size) return Status::Ok();
    }
  }
  // The compressed bytes, made into one string block by block, each block freed once copied:
  // the peak is the output's size and one block, not twice the output as a doubling string has.
  std::string Take() {
    size_t size = 0;
    for (const std::string& b : blocks_) size += b.size();
    std::string out;
    out.reserve(size);
    for (std::string& b : blocks_) {
      out += b;
      std::string().swap(b);
    }
    blocks_.clear();
    return out;
  }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;
  void Append(std::string_view bytes) {
    while (!bytes.empty()) {
      if (blocks_.empty() || blocks_.back().size() == kBlockBytes) {
        blocks_.emplace_back();
        blocks_.back().reserve(kBlockBytes);
      }
      std::string& b = blocks_.back();
      const size_t n = std::min(bytes.size(), kBlockBytes - b.size());
      b.append(bytes.data(), n);
      bytes.remove_prefix(n);
    }
  }

  ZSTD_CCtx* ctx_;
  std::vector<std::string> blocks_;
};

json EntryJson(const Entry& e) {
  json j = json::object();
  PutName(j, "path", e.path);
  j["type"] = EntryTypeName(e.type);
  j["mode"] = e.mode;
  j["mtime_ns"] = e.mtime_ns;
  if (e.type == EntryType::kFile) {
    j["size"] = e.size;
    json chunks = json::array();
    for (const ChunkRef& c : e.chunks) {
      json cj = {{"id", ToHex(c.id)}, {"len", c.length}};
      if (c.packed) {
        cj["pack"] = ToHex(c.pack);
        cj["off"] = c.pack_offset;
      }
      chunks.push_back(std::move(cj));
    }
    j["chunks"] = std::move(chunks);
    if (!e.link.empty()) PutName(j, "link", e.link);
    if (e.sparse) j["sparse"] = true;
  }
  if (e.type == EntryType::kSymlink) PutName(j, "target", e.target);
  return j;
}

}  // namespace

struct ManifestWriter::Impl {
  Manifest header;  // no entries
  bool check_order = true;
  ZstdWriter z;
  std::string frame;  // the header document, dumped with an empty entries array
  size_t at = 0;      // where the entries go in `frame`
  uint64_t count = 0;
  std::string last;       // the previous entry's path
  std::string last_leaf;  // the last file or symlink path, "" before one
  EntryType last_leaf_type = EntryType::kFile;
  std::string piece;
};

ManifestWriter::ManifestWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ManifestWriter::~ManifestWriter() = default;

Result<std::unique_ptr<ManifestWriter>> ManifestWriter::Begin(const Manifest& header) {
  CUTOVER_RETURN_IF_ERROR(ValidateHeader(header));
  auto impl = std::make_unique<Impl>();
  impl->header.format = header.format;
  impl->header.name = header.name;
  impl->header.created_ns = header.created_ns;
  impl->header.chunker = header.chunker;
  impl->header.shard = header.shard;
  // The document without its entries, dumped with an empty "entries" array that is then filled
  // in entry by entry: the same text a whole-document dump gives (keys sorted), streamed.
  json doc = json::object();
  doc["format"] = header.format;
  PutName(doc, "name", header.name);
  doc["created_ns"] = header.created_ns;
  doc["chunker"] = {{"version", kChunkerVersion},
                    {"min", header.chunker.min_size},
                    {"avg", header.chunker.avg_size},
                    {"max", header.chunker.max_size}};
  doc["hash"] = "sha256";
  doc["entries"] = json::array();
  if (header.shard.has_value()) {
    doc["shard"] = {{"index", header.shard->index},
                    {"count", header.shard->count},
                    {"tree_entries", header.shard->tree_entries},
                    {"tree_digest", ToHex(header.shard->tree_digest)}};
  }
  // Every string is valid UTF-8 (PutName), so dump cannot throw. A quote inside a string value
  // is escaped, so the first "entries":[] is the key's.
  impl->frame = doc.dump();
  constexpr std::string_view kEntries = "\"entries\":[";
  impl->at = impl->frame.find(kEntries) + kEntries.size();
  CUTOVER_RETURN_IF_ERROR(impl->z.Add(std::string_view(impl->frame).substr(0, impl->at)));
  return std::unique_ptr<ManifestWriter>(new ManifestWriter(std::move(impl)));
}

Status ManifestWriter::Add(const Entry& e) {
  Impl& w = *impl_;
  const std::string where = EntryWhere(w.count);
  CUTOVER_RETURN_IF_ERROR(CheckEntry(e, where, w.header.chunker.max_size));
  if (w.check_order) {
    if (w.count > 0 && !WalkOrderLess(w.last, e.path)) {
      return Status::InvalidArgument(where + ": path " + Quote(e.path) + " comes after " +
                                     Quote(w.last) + " (entries must be in walk order)");
    }
    // In walk order whatever lies below an entry follows it at once, so only the last file or
    // symlink can be the parent of a later entry.
    if (!w.last_leaf.empty() && e.path.size() > w.last_leaf.size() &&
        e.path.compare(0, w.last_leaf.size(), w.last_leaf) == 0 &&
        e.path[w.last_leaf.size()] == '/') {
      return Status::InvalidArgument(
          where + ": parent " + Quote(w.last_leaf) + " of " + Quote(e.path) + " is a " +
          std::string(EntryTypeName(w.last_leaf_type)) + ", not a directory");
    }
    w.last = e.path;
    if (e.type != EntryType::kDir) {
      w.last_leaf = e.path;
      w.last_leaf_type = e.type;
    }
  }
  w.piece.clear();
  if (w.count > 0) w.piece += ',';
  w.piece += EntryJson(e).dump();
  ++w.count;
  return w.z.Add(w.piece);
}

Result<std::string> ManifestWriter::Finish() {
  Impl& w = *impl_;
  CUTOVER_RETURN_IF_ERROR(CheckShardSize(w.header, w.count));
  CUTOVER_RETURN_IF_ERROR(w.z.Add(std::string_view(w.frame).substr(w.at), /*last=*/true));
  return w.z.Take();
}

Result<std::string> EncodeManifest(const Manifest& m) {
  CUTOVER_RETURN_IF_ERROR(ValidateManifest(m));
  CUTOVER_ASSIGN_OR_RETURN(auto w, ManifestWriter::Begin(m));
  w->impl_->check_order = false;  // checked as a whole above, in any order
  for (const Entry& e : m.entries) CUTOVER_RETURN_IF_ERROR(w->Add(e));
  return w->Finish();
}

namespace {

// The manifest's fields but its entries, from the document ManifestSax built.
Result<Manifest> ParseHeader(const json& doc) {
  if (!doc.is_object()) return Status::InvalidArgument("manifest: not a JSON object");
  Fields f(doc, "manifest");
  auto fmt = doc.find("format");
  if (fmt == doc.end()) return Status::InvalidArgument("manifest: no \"format\" field");
  if (!fmt->is_number_integer()) {
    return Status::InvalidArgument("manifest: \"format\" is not an integer");
  }
  int64_t format = fmt->get<int64_t>();
  if (format > kManifestFormat) {
    return Status::InvalidArgument("manifest: format " + std::to_string(format) +
                                   " is newer than this cutover reads (" +
                                   std::to_string(kManifestFormat) + ")");
  }
  if (format < 1) {
    return Status::InvalidArgument("manifest: format " + std::to_string(format) + " is not valid");
  }
  Manifest m;
  m.format = static_cast<int>(format);
  CUTOVER_ASSIGN_OR_RETURN(m.name, f.Name("name"));
  CUTOVER_ASSIGN_OR_RETURN(m.created_ns, f.I64("created_ns"));
  CUTOVER_ASSIGN_OR_RETURN(std::string hash, f.Str("hash"));
  if (hash != "sha256") {
    return Status::InvalidArgument("manifest: hash " + Quote(hash) + " is not \"sha256\"");
  }
  auto ch = doc.find("chunker");
  if (ch == doc.end() || !ch->is_object()) {
    return Status::InvalidArgument("manifest: no \"chunker\" object");
  }
  Fields cf(*ch, "manifest: chunker");
  CUTOVER_ASSIGN_OR_RETURN(uint64_t version, cf.U64("version"));
  if (version != static_cast<uint64_t>(kChunkerVersion)) {
    return Status::InvalidArgument("manifest: chunker version " + std::to_string(version) +
                                   " is not " + std::to_string(kChunkerVersion));
  }
  CUTOVER_ASSIGN_OR_RETURN(m.chunker.min_size, cf.U64("min"));
  CUTOVER_ASSIGN_OR_RETURN(m.chunker.avg_size, cf.U64("avg"));
  CUTOVER_ASSIGN_OR_RETURN(m.chunker.max_size, cf.U64("max"));
  if (auto sh = doc.find("shard"); sh != doc.end()) {
    if (!sh->is_object()) return Status::InvalidArgument("manifest: \"shard\" is not an object");
    Fields sf(*sh, "manifest: shard");
    CUTOVER_ASSIGN_OR_RETURN(uint64_t index, sf.U64("index"));
    CUTOVER_ASSIGN_OR_RETURN(uint64_t count, sf.U64("count"));
    if (index > kMaxShards || count > kMaxShards) {
      return Status::InvalidArgument("manifest: shard " + std::to_string(index) + "/" +
                                     std::to_string(count) + " is out of range");
    }
    ShardInfo info;
    info.index = static_cast<uint32_t>(index);
    info.count = static_cast<uint32_t>(count);
    CUTOVER_ASSIGN_OR_RETURN(info.tree_entries, sf.U64("tree_entries"));
    CUTOVER_ASSIGN_OR_RETURN(std::string digest, sf.Str("tree_digest"));
    Result<ChunkId> id = ParseChunkId(digest);
    if (!id.ok()) return Status::InvalidArgument("manifest: shard: bad \"tree_digest\"");
    info.tree_digest = *id;
    m.shard = info;
  }
  return m;
}

}  // namespace

Result<Manifest> ReadManifest(std::string_view bytes,
                              const std::function<Status(Entry&&)>& on_entry) {
  ManifestSax sax(on_entry);
  ZstdSource source(bytes, sax.items());
  if (!source.status().ok()) return source.status();
  std::istream text(&source);
  const bool parsed = json::sax_parse(text, &sax);
  if (!source.status().ok()) return source.status();  // the reason the text ended
  if (!sax.status().ok()) return sax.status();
  if (!parsed) return Status::Corruption("manifest: not JSON");
  if (sax.root().is_object() && !sax.saw_entries()) {
    return Status::InvalidArgument("manifest: no \"entries\" array");
  }
  return ParseHeader(sax.root());
}

Result<Manifest> DecodeManifest(std::string_view bytes) {
  std::vector<Entry> entries;
  CUTOVER_ASSIGN_OR_RETURN(Manifest m, ReadManifest(bytes, [&entries](Entry&& e) {
                             entries.push_back(std::move(e));
                             return Status::Ok();
                           }));
  m.entries = std::move(entries);
  CUTOVER_RETURN_IF_ERROR(ValidateManifest(m));
  return m;
}

}  // namespace cutover
