#include "datasync/entry_spool.h"

#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cutover {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;
// No path, target or chunk list of a real entry comes near these; a record claiming more is
// corrupt (and allocating it would be the damage).
constexpr uint32_t kMaxText = uint32_t{1} << 20;
constexpr uint32_t kMaxChunks = uint32_t{1} << 28;

template <typename T>
void Put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void PutText(std::string& out, const std::string& s) {
  Put(out, static_cast<uint32_t>(s.size()));
  out += s;
}

}  // namespace

Result<std::unique_ptr<EntrySpool>> EntrySpool::Create() {
  const char* env = std::getenv("TMPDIR");
  std::string dir = env != nullptr && *env != '\0' ? env : "/tmp";
  std::string templ = dir + "/cutover-push-XXXXXX";
  int fd = ::mkstemp(templ.data());
  if (fd < 0) {
    return Status::IoError("cannot create a temporary file in " + dir + ": " +
                           std::strerror(errno));
  }
  ::unlink(templ.c_str());
  std::FILE* f = ::fdopen(fd, "w+b");
  if (f == nullptr) {
    ::close(fd);
    return Status::IoError("cannot open a temporary file in " + dir + ": " + std::strerror(errno));
  }
  std::setvbuf(f, nullptr, _IOFBF, kBufferBytes);
  return std::unique_ptr<EntrySpool>(new EntrySpool(f));
}

EntrySpool::~EntrySpool() { std::fclose(f_); }

Status EntrySpool::Write(const Record& r) {
  const Entry& e = r.entry;
  std::string b;
  b.reserve(104 + e.path.size() + e.target.size() + e.link.size() + e.chunks.size() * 81);
  Put(b, static_cast<uint8_t>(e.type));
  Put(b, static_cast<uint8_t>(e.sparse));
  Put(b, e.mode);
  Put(b, e.size);
  Put(b, e.mtime_ns);
  Put(b, r.key);
  Put(b, r.flags);
  PutText(b, e.path);
  PutText(b, e.target);
  PutText(b, e.link);
  Put(b, static_cast<uint32_t>(e.chunks.size()));
  for (const ChunkRef& c : e.chunks) {
    Put(b, c.id);
    Put(b, c.length);
    Put(b, static_cast<uint8_t>(c.packed));
    Put(b, c.pack);
    Put(b, c.pack_offset);
  }
  Put(b, static_cast<uint32_t>(r.fast.size()));
  b.append(reinterpret_cast<const char*>(r.fast.data()), r.fast.size() * sizeof(FastDigest));
  if (std::fwrite(b.data(), 1, b.size(), f_) != b.size()) {
    return Status::IoError(std::string("cannot write the push's temporary entry list: ") +
                           std::strerror(errno));
  }
  ++count_;
  return Status::Ok();
}

Status EntrySpool::Rewind() {
  if (std::fflush(f_) != 0 || std::fseek(f_, 0, SEEK_SET) != 0) {
    return Status::IoError(std::string("cannot write the push's temporary entry list: ") +
                           std::strerror(errno));
  }
  return Status::Ok();
}

Result<bool> EntrySpool::Read(Record* r) {
  auto get = [this](void* p, size_t n) { return std::fread(p, 1, n, f_) == n; };
  uint8_t type;
  if (std::fread(&type, 1, 1, f_) != 1) {
    if (std::ferror(f_)) return Status::IoError("cannot read the push's temporary entry list");
    return false;
  }
  const Status bad = Status::Corruption("the push's temporary entry list is corrupt");
  Entry& e = r->entry;
  if (type > static_cast<uint8_t>(EntryType::kSymlink)) return bad;
  e.type = static_cast<EntryType>(type);
  uint32_t len = 0, n = 0;
  uint8_t sparse = 0;
  if (!get(&sparse, 1) || sparse > 1) return bad;
  e.sparse = sparse != 0;
  if (!get(&e.mode, sizeof e.mode) || !get(&e.size, sizeof e.size) ||
      !get(&e.mtime_ns, sizeof e.mtime_ns) || !get(&r->key, sizeof r->key) ||
      !get(&r->flags, sizeof r->flags)) {
    return bad;
  }
  for (std::string* s : {&e.path, &e.target, &e.link}) {
    if (!get(&len, sizeof len) || len > kMaxText) return bad;
    s->resize(len);
    if (len > 0 && !get(s->data(), len)) return bad;
  }
  if (!get(&n, sizeof n) || n > kMaxChunks) return bad;
  e.chunks.resize(n);
  for (ChunkRef& c : e.chunks) {
    uint8_t packed = 0;
    if (!get(&c.id, sizeof c.id) || !get(&c.length, sizeof c.length) || !get(&packed, 1) ||
        !get(&c.pack, sizeof c.pack) || !get(&c.pack_offset, sizeof c.pack_offset)) {
      return bad;
    }
    c.packed = packed != 0;
  }
  if (!get(&n, sizeof n) || n > kMaxChunks) return bad;
  r->fast.resize(n);
  if (n > 0 && !get(r->fast.data(), n * sizeof(FastDigest))) return bad;
  return true;
}

}  // namespace cutover
