#include "datasync/verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_set>

#include "core/file_system.h"
#include "core/posix_io.h"
#include "core/units.h"
#include "datasync/extras.h"
#include "datasync/manifest.h"
#include "datasync/state.h"
#include "datasync/store_config.h"
#include "datasync/task_pool.h"

namespace cutover {
namespace {

class Verifier {
 public:
  Verifier(Store& store, std::string dest, DatasyncState* state)
      : store_(store), dest_(std::move(dest)), state_(state) {}

  void Fail(std::string line) {
    std::lock_guard<std::mutex> l(mu_);
    failures_.insert(std::move(line));
  }

  // Records a finding about a stored object and drops it from the journal.
  void FailObject(const std::string& key, std::string line) {
    if (state_ != nullptr) (void)state_->ForgetConfirmed(store_.Url(), key);  // a hint
    Fail(std::move(line));
  }

  // Reads one chunk back and checks it.
  Status CheckChunk(const Entry& e, const ChunkRef& c) {
    const std::string key = c.packed ? store_.Names().Pack(c.pack) : store_.Names().Chunk(c.id);
    Result<std::string> bytes =
        c.packed ? store_.GetRange(key, c.pack_offset, c.length) : store_.Get(key);
    std::string where = "file " + e.path + ": chunk " + ToHex(c.id) + ": ";
    if (!bytes.ok()) {
      if (bytes.status().code() == Code::kNotFound) {
        FailObject(key, where + "missing in the store: " + bytes.status().message());
        return Status::Ok();
      }
      if (bytes.status().code() == Code::kCorruption) {
        FailObject(key, where + "corrupt in the store: " + bytes.status().message());
        return Status::Ok();
      }
      return bytes.status();
    }
    if (bytes->size() != c.length || Sha256Of(*bytes) != c.id) {
      FailObject(key, where + "corrupt in the store (its SHA-256 does not match)");
    }
    ++chunks_;
    bytes_ += c.length;
    return Status::Ok();
  }

  // Compares one DEST entry with the manifest.
  Status CheckLocal(const Entry& e) {
    std::string full = dest_ + "/" + e.path;
    std::string where = "file " + e.path + ": differs from the manifest: ";
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0) {
      Fail(where + "missing in " + dest_ + " (" + std::strerror(errno) + ")");
      return Status::Ok();
    }
    bool type_ok = (e.type == EntryType::kDir && S_ISDIR(st.st_mode)) ||
                   (e.type == EntryType::kFile && S_ISREG(st.st_mode)) ||
                   (e.type == EntryType::kSymlink && S_ISLNK(st.st_mode));
    if (!type_ok) {
      const char* is = S_ISDIR(st.st_mode)   ? "a directory"
                       : S_ISLNK(st.st_mode) ? "a symlink"
                       : S_ISREG(st.st_mode) ? "a file"
                                             : "a special file";
      Fail(where + "is " + is + ", not a " + std::string(EntryTypeName(e.type)));
      return Status::Ok();
    }
    if (e.type == EntryType::kSymlink) {
      std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
      ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
      target.resize(n < 0 ? 0 : static_cast<size_t>(n));
      if (target != e.target) Fail(where + "symlink target \"" + target + "\"");
      return Status::Ok();
    }
    if ((st.st_mode & 07777) != e.mode) {
      Fail(where + "mode " + std::to_string(st.st_mode & 07777) + ", not " +
           std::to_string(e.mode));
    }
    if (e.type == EntryType::kDir) return Status::Ok();
    ++files_;
    if (FileInfoFromStat(st).mtime_ns != e.mtime_ns) Fail(where + "mtime differs");
    if (static_cast<uint64_t>(st.st_size) != e.size) {
      Fail(where + "size " + std::to_string(st.st_size) + ", not " + std::to_string(e.size));
      return Status::Ok();
    }
    int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      Fail(where + "cannot open: " + std::strerror(errno));
      return Status::Ok();
    }
    std::string buf;
    uint64_t off = 0;
    for (const ChunkRef& c : e.chunks) {
      buf.resize(c.length);
      const ssize_t got = PreadFull(fd, buf.data(), c.length, off);
      if (got != static_cast<ssize_t>(c.length) || Sha256Of(buf) != c.id) {
        Fail(where + "bytes at offset " + std::to_string(off) + " do not match chunk " +
             ToHex(c.id));
        break;
      }
      off += c.length;
    }
    ::close(fd);
    return Status::Ok();
  }

  std::mutex mu_;
  std::set<std::string> failures_;
  std::atomic<uint64_t> chunks_{0}, bytes_{0}, files_{0};

 private:
  Store& store_;
  std::string dest_;
  DatasyncState* state_;
};

}  // namespace

Result<VerifyResult> Verify(Store& store, const SnapshotSelector& snapshot,
                            const std::string& dest_dir, int jobs, DatasyncState* state,
                            bool allow_extra) {
  Result<SnapshotRef> ref = ResolveSnapshot(store, snapshot);
  if (!ref.ok()) return ref.status().WithContext("verify");
  const std::string name = snapshot.Label();
  auto bytes = store.Get(ref->key);
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kNotFound) {
      return Status::NotFound("verify: no snapshot " + name + " in " + store.Url());
    }
    return bytes.status();
  }
  auto decoded = DecodeManifest(*bytes);
  if (!decoded.ok()) return decoded.status().WithContext("verify: snapshot " + name);
  const Manifest& m = *decoded;
  CUTOVER_RETURN_IF_ERROR(
      CheckManifestChunker(store, m.chunker).WithContext("verify: snapshot " + name));
  std::string dest = dest_dir;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  Verifier v(store, dest, state);
  {
    TaskPool pool(jobs, static_cast<size_t>(jobs) * 4);
    std::set<std::pair<ChunkId, std::pair<ChunkId, uint64_t>>> seen;  // each stored place once
    for (const Entry& e : m.entries) {
      for (const ChunkRef& c : e.chunks) {
        if (!seen.insert({c.id, {c.pack, c.packed ? c.pack_offset + 1 : 0}}).second) continue;
        pool.Submit([&v, &e, &c] { return v.CheckChunk(e, c); });
      }
      if (!dest.empty()) pool.Submit([&v, &e] { return v.CheckLocal(e); });
    }
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
  }
  if (!dest.empty() && !allow_extra) {
    std::unordered_set<std::string_view> named;
    for (const Entry& e : m.entries) named.insert(e.path);
    CUTOVER_RETURN_IF_ERROR(ForEachExtra(
        dest, [&named](const std::string& path) { return named.count(path) != 0; },
        [&v](const std::string& path, bool is_dir) {
          v.Fail((is_dir ? "dir " : "file ") + path + ": in DEST but not in the snapshot");
        },
        /*remove=*/false));
  }
  VerifyResult r;
  r.snapshot = *ref;
  r.chunks_checked = v.chunks_.load();
  r.bytes_checked = v.bytes_.load();
  r.files_checked = v.files_.load();
  r.failures.assign(v.failures_.begin(), v.failures_.end());
  return r;
}

nlohmann::json VerifyResultToJson(const VerifyResult& r, std::string_view store_url,
                                  std::string_view dest) {
  return {{"schema", "cutover.datasync-verify/1"},
          {"snapshot", r.snapshot.name},
          {"id", r.snapshot.id},
          {"store", store_url},
          {"dest", dest},
          {"chunks_checked", r.chunks_checked},
          {"bytes_checked", r.bytes_checked},
          {"files_checked", r.files_checked},
          {"failures", r.failures},
          {"ok", r.failures.empty()}};
}

std::string RenderVerifyResult(const VerifyResult& r, std::string_view /*store_url*/,
                               std::string_view dest) {
  std::string table;
  for (const std::string& f : r.failures) table += "FAIL " + f + "\n";
  table +=
      std::string(r.failures.empty() ? "verified" : "FAILED") + " snapshot " + r.snapshot.name +
      " " + r.snapshot.id + ": " + std::to_string(r.chunks_checked) + " chunks (" +
      FormatBytes(r.bytes_checked) + ")" +
      (dest.empty() ? ""
                    : ", " + std::to_string(r.files_checked) + " files in " + std::string(dest)) +
      ", " + std::to_string(r.failures.size()) + " failures\n";
  return table;
}

}  // namespace cutover
