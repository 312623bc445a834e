#include "datasync/pull.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "core/posix_io.h"
#include "core/units.h"
#include "datasync/chunk_hasher.h"
#include "datasync/extras.h"
#include "datasync/manifest.h"
#include "datasync/state.h"
#include "datasync/store_config.h"
#include "datasync/task_pool.h"

namespace cutover {
namespace {

// Writes `data` at file offset `at` of a file opened empty, leaving every 4 KiB block of the
// file that `data` fills with zeros unwritten, so it stays a hole. False with errno on failure.
bool WriteLeavingHoles(int fd, uint64_t at, std::string_view data) {
  constexpr uint64_t kBlock = 4096;
  size_t pos = 0, run = 0;  // data[run, pos) is waiting to be written
  auto flush = [&]() {
    while (run < pos) {
      ssize_t k = ::pwrite(fd, data.data() + run, pos - run, static_cast<off_t>(at + run));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      run += static_cast<size_t>(k);
    }
    return true;
  };
  while (pos < data.size()) {
    const uint64_t block_end = ((at + pos) / kBlock + 1) * kBlock;
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(block_end - (at + pos), data.size() - pos));
    const bool whole = n == kBlock;
    const bool zero = whole && std::all_of(data.begin() + static_cast<ptrdiff_t>(pos),
                                           data.begin() + static_cast<ptrdiff_t>(pos + n),
                                           [](char c) { return c == 0; });
    if (zero) {
      if (!flush()) return false;
      pos += n;
      run = pos;
    } else {
      pos += n;
    }
  }
  return flush();
}

struct timespec Ts(int64_t ns) {
  struct timespec t;
  int64_t sec = ns / 1000000000, rem = ns % 1000000000;
  if (rem < 0) {
    rem += 1000000000;
    --sec;
  }
  t.tv_sec = static_cast<time_t>(sec);
  t.tv_nsec = static_cast<long>(rem);
  return t;
}

// The private directory, directly under DEST, that holds a pull's temporaries while they are
// written: the first of ".cutover-pull", ".cutover-pull.1", ... that the snapshot does not name
// at its top level and that DEST does not hold as anything but a directory. Temporaries never
// sit beside the entries, so no name a snapshot may hold (".x.cutover-tmp" included) is ever
// created, truncated or removed by the pull, and a temporary's name does not grow with the
// entry's (a 255-byte name restores like any other).
constexpr char kTempDirName[] = ".cutover-pull";

// A temporary's name in the private directory: 32 hex digits of the SHA-256 of the entry's path.
// The same name in every run, so a pull that was killed leaves at most one temporary per file,
// and the next pull of the same snapshot reads what it had written and replaces it.
std::string TempLeafFor(const std::string& path) { return ToHex(Sha256Of(path)).substr(0, 32); }

// Reads exactly `len` bytes at `offset` of the open file `fd`; false on a short read or error.
bool ReadAt(int fd, uint64_t offset, std::string* out, size_t len) {
  out->assign(len, '\0');
  return PreadFull(fd, out->data(), len, offset) == static_cast<ssize_t>(len);
}

// Holds an exclusive flock on the destination directory itself (no lock file in DEST) for
// the lifetime of the pull; the kernel drops it when the process dies, even by kill -9.
class DestLock {
 public:
  ~DestLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  Status Acquire(const std::string& dest) {
    fd_ = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return Status::IoError(ErrnoMessage("cannot open", dest));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return Status::Ok();
    if (errno == EWOULDBLOCK) {
      return Status::Unavailable("pull: another pull is writing " + dest + "; wait for it to end");
    }
    return Status::IoError(ErrnoMessage("cannot lock", dest));
  }

 private:
  int fd_ = -1;
};

class Puller {
 public:
  Puller(Store& store, std::string dest) : store_(store), dest_(std::move(dest)) {}

  // Picks and creates the private directory for temporaries (kTempDirName above), avoiding
  // the snapshot's own top-level names and anything in DEST that is not a directory.
  Status MakeTempDir(const std::set<std::string>& top_level) {
    for (int i = 0;; ++i) {
      std::string leaf = kTempDirName + (i == 0 ? std::string() : "." + std::to_string(i));
      if (top_level.count(leaf) != 0) continue;
      std::string full = dest_ + "/" + leaf;
      struct stat st;
      if (::lstat(full.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) continue;  // the user's file: left alone
      } else if (errno != ENOENT) {
        return Status::IoError(ErrnoMessage("cannot stat", full));
      } else if (::mkdir(full.c_str(), 0700) != 0) {
        return Status::IoError(ErrnoMessage("cannot create directory", full));
      }
      temp_leaf_ = leaf;
      temp_dir_ = full;
      return Status::Ok();
    }
  }

  // Removes the private directory and whatever temporaries are left in it (its names are only
  // ever pull's own). Nothing else in DEST is touched.
  void RemoveTempDir() {
    if (temp_dir_.empty()) return;
    if (DIR* d = ::opendir(temp_dir_.c_str())) {
      while (struct dirent* ent = ::readdir(d)) {
        if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) {
          ::unlinkat(::dirfd(d), ent->d_name, 0);
        }
      }
      ::closedir(d);
    }
    ::rmdir(temp_dir_.c_str());
  }

  std::string TempFor(const Entry& e) const { return temp_dir_ + "/" + TempLeafFor(e.path); }

  // Removes (lists, in a dry run) what DEST holds that `m` does not name, but for the private
  // directory of temporaries (datasync/extras.h: never through a symlink).
  Status DeleteExtras(const Manifest& m) {
    std::unordered_set<std::string_view> named;
    for (const Entry& e : m.entries) named.insert(e.path);
    return ForEachExtra(
        dest_,
        [this, &named](const std::string& path) {
          return path == temp_leaf_ || named.count(path) != 0;
        },
        [this](const std::string& path, bool is_dir) {
          result_.deleted.push_back(is_dir ? path + "/" : path);
        },
        /*remove=*/opts_ == nullptr || !opts_->dry_run);
  }

  // Records that `e` was not restored. Store-wide failures (the store unreachable) stop the
  // pull; anything else about one entry is recorded and the others go on.
  Status Record(const Entry& e, Status s) {
    if (s.ok() || s.code() == Code::kUnavailable || s.code() == Code::kInternal) return s;
    std::string text = s.message();
    if (text.starts_with("pull: ")) text.erase(0, 6);
    if (text.find(e.path) == std::string::npos) text = e.path + ": " + text;
    std::lock_guard<std::mutex> l(failures_mu_);
    failures_.emplace_back(e.path, Status(s.code(), std::move(text)));
    return Status::Ok();
  }

  // One status naming every entry not restored (OK when none): its code is Corruption when
  // every failure is a corrupt or missing chunk (a finding), else the first other failure's.
  Status Failures() {
    std::lock_guard<std::mutex> l(failures_mu_);
    if (failures_.empty()) return Status::Ok();
    std::sort(failures_.begin(), failures_.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    Code code = Code::kCorruption;
    std::string text = "pull: " + std::to_string(failures_.size()) +
                       (failures_.size() == 1 ? " entry" : " entries") + " not restored";
    constexpr size_t kListed = 20;
    for (size_t i = 0; i < failures_.size(); ++i) {
      if (failures_[i].second.code() != Code::kCorruption && code == Code::kCorruption) {
        code = failures_[i].second.code();
      }
      if (i < kListed) text += (i == 0 ? ": " : "; ") + failures_[i].second.message();
    }
    if (failures_.size() > kListed) {
      text += "; and " + std::to_string(failures_.size() - kListed) + " more";
    }
    return Status(code, text);
  }

  // Makes sure every parent of `path` under DEST is a real directory (creating missing ones).
  Status PrepareParents(const std::string& path) {
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      std::string full = dest_ + "/" + path.substr(0, slash);
      struct stat st;
      if (::lstat(full.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
          return Status::InvalidArgument("pull: " + full + " is in the way of " + path +
                                         ": not a directory (symlinks are never followed)");
        }
        continue;
      }
      if (errno != ENOENT) return Status::IoError(ErrnoMessage("cannot stat", full));
      if (::mkdir(full.c_str(), 0700) != 0 && errno != EEXIST) {
        return Status::IoError(ErrnoMessage("cannot create directory", full));
      }
    }
    return Status::Ok();
  }

  Status Dir(const Entry& e) {
    std::string full = dest_ + "/" + e.path;
    struct stat st;
    if (::lstat(full.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return Status::InvalidArgument("pull: " + full +
                                       " exists and is not a directory; remove it first");
      }
      // A directory an earlier pull made read-only (mode 555) is made writable for its owner
      // while its entries are written; FinishDirs gives it the snapshot's mode again.
      if ((st.st_mode & (S_IWUSR | S_IXUSR)) != (S_IWUSR | S_IXUSR) &&
          ::chmod(full.c_str(), (st.st_mode & 07777) | S_IRWXU) != 0) {
        return Status::IoError(ErrnoMessage("cannot make writable", full));
      }
      return Status::Ok();
    }
    if (::mkdir(full.c_str(), 0700) != 0)
      return Status::IoError(ErrnoMessage("cannot create directory", full));
    return Status::Ok();
  }

  // Drops a chunk or pack the store proved missing or corrupt from the journal.
  void Disproved(const std::string& key) {
    if (opts_ == nullptr || opts_->state == nullptr) return;
    (void)opts_->state->ForgetConfirmed(store_.Url(), key);  // a hint: failing costs nothing
  }

  Result<std::string> FetchChunk(const Entry& e, const ChunkRef& c) {
    const std::string key = c.packed ? store_.Names().Pack(c.pack) : store_.Names().Chunk(c.id);
    Result<std::string> bytes =
        c.packed ? store_.GetRange(key, c.pack_offset, c.length) : store_.Get(key);
    if (!bytes.ok()) {
      if (bytes.status().code() == Code::kCorruption || bytes.status().code() == Code::kNotFound) {
        Disproved(key);
        return Status::Corruption("pull: file " + e.path + ": chunk " + ToHex(c.id) + ": " +
                                  bytes.status().message());
      }
      return bytes.status();
    }
    if (bytes->size() != c.length || Sha256Of(*bytes) != c.id) {
      Disproved(key);
      return Status::Corruption("pull: file " + e.path + ": chunk " + ToHex(c.id) +
                                " is corrupt in the store (its SHA-256 does not match)");
    }
    downloaded_bytes_ += bytes->size();
    if (opts_ != nullptr && opts_->on_confirmed) opts_->on_confirmed(bytes->size());
    return bytes;
  }

  // The chunks of the regular file already at `full` (an earlier pull, or the user's copy),
  // found with the snapshot's chunker: what a re-pull need not download. Empty when there is no
  // such file or it cannot be read (then everything is downloaded).
  std::vector<Chunk> LocalChunks(const std::string& full) {
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    auto chunks = ChunkFile(full, chunker_);
    return chunks.ok() ? std::move(chunks).value() : std::vector<Chunk>{};
  }

  // Indexes the chunks of DEST's regular files that the snapshot does not name but that have
  // the size of one of its files (`sizes`): a file moved or renamed since the last pull. Those
  // files are never written by the pull, so they stay valid sources. Files of other sizes are
  // not read at all (a large unrelated file in DEST costs nothing); unreadable files and
  // directories are skipped: their chunks are downloaded instead.
  Status IndexOthers(const std::set<std::string>& named, const std::set<uint64_t>& sizes,
                     int jobs) {
    std::vector<std::string> files;
    std::vector<std::string> pending = {""};
    while (!pending.empty()) {
      std::string rel = std::move(pending.back());
      pending.pop_back();
      const std::string dir = rel.empty() ? dest_ : dest_ + "/" + rel;
      DIR* d = ::opendir(dir.c_str());
      if (d == nullptr) continue;
      while (struct dirent* ent = ::readdir(d)) {
        const std::string name = ent->d_name;
        if (name == "." || name == ".." || (rel.empty() && name == temp_leaf_)) continue;
        const std::string path = rel.empty() ? name : rel + "/" + name;
        struct stat st;
        if (::fstatat(::dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
          pending.push_back(path);
        } else if (S_ISREG(st.st_mode) && st.st_size > 0 && named.count(path) == 0 &&
                   sizes.count(static_cast<uint64_t>(st.st_size)) != 0) {
          files.push_back(path);
        }
      }
      ::closedir(d);
    }
    std::mutex mu;
    TaskPool pool(jobs, static_cast<size_t>(jobs) * 2);
    for (const std::string& path : files) {
      pool.Submit([this, &mu, &path] {
        auto chunks = ChunkFile(dest_ + "/" + path, chunker_);
        if (!chunks.ok()) return Status::Ok();
        std::lock_guard<std::mutex> lock(mu);
        for (const Chunk& c : *chunks) others_.emplace(c.id, Elsewhere{path, c.offset, c.length});
        return Status::Ok();
      });
    }
    return pool.Wait();
  }

  // `c`'s bytes from the old file at the same path, else from another file of DEST (checked
  // against the chunk's SHA-256 either way, so a file that changed since it was chunked is
  // never trusted).
  std::optional<std::string> ReadLocal(int old_fd, const std::map<ChunkId, Chunk>& local,
                                       const ChunkRef& c) {
    std::string bytes;
    auto it = local.find(c.id);
    if (old_fd >= 0 && it != local.end() && it->second.length == c.length &&
        ReadAt(old_fd, it->second.offset, &bytes, c.length) && Sha256Of(bytes) == c.id) {
      return bytes;
    }
    auto other = others_.find(c.id);
    if (other == others_.end() || other->second.length != c.length) return std::nullopt;
    const std::string full = dest_ + "/" + other->second.path;
    int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return std::nullopt;
    const bool read = ReadAt(fd, other->second.offset, &bytes, c.length);
    ::close(fd);
    if (!read || Sha256Of(bytes) != c.id) return std::nullopt;
    return bytes;
  }

  // Whether a chunk can come from DEST without downloading (for --dry-run).
  bool Reusable(const std::map<ChunkId, Chunk>& local, const ChunkRef& c) const {
    auto it = local.find(c.id);
    if (it != local.end() && it->second.length == c.length) return true;
    auto other = others_.find(c.id);
    return other != others_.end() && other->second.length == c.length;
  }

  Status File(const Entry& e) {
    std::string full = dest_ + "/" + e.path;
    std::vector<Chunk> old_chunks = LocalChunks(full);
    std::map<ChunkId, Chunk> local;
    for (const Chunk& c : old_chunks) local.emplace(c.id, c);
    bool same = old_chunks.size() == e.chunks.size();
    for (size_t i = 0; same && i < old_chunks.size(); ++i) {
      same = old_chunks[i].id == e.chunks[i].id && old_chunks[i].length == e.chunks[i].length;
    }
    if (opts_ != nullptr && opts_->dry_run) {
      for (const ChunkRef& c : e.chunks) {
        (Reusable(local, c) ? reused_bytes_ : downloaded_bytes_) += c.length;
      }
      bytes_ += e.size;
      return Status::Ok();
    }
    if (same && (!old_chunks.empty() || e.size == 0)) {
      // The file holds the snapshot's bytes already: only its mode and mtime may differ.
      struct stat st;
      if (::lstat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
          static_cast<uint64_t>(st.st_size) == e.size) {
        struct timespec times[2] = {Ts(e.mtime_ns), Ts(e.mtime_ns)};
        if ((st.st_mode & 07777) != e.mode && ::chmod(full.c_str(), e.mode) != 0) {
          return Status::IoError(ErrnoMessage("cannot chmod", full));
        }
        if (::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
          return Status::IoError(ErrnoMessage("cannot set mtime", full));
        }
        reused_bytes_ += e.size;
        bytes_ += e.size;
        if (opts_ != nullptr && opts_->on_confirmed) opts_->on_confirmed(e.size);
        return Status::Ok();
      }
    }
    int old_fd = local.empty() ? -1 : ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    std::string tmp = TempFor(e);
    // A pull killed while writing this file left the chunks it had written in the temporary:
    // they are read from there (each checked against its hash), so a resumed pull downloads
    // again at most the chunk each worker had in flight. The old temporary is unlinked and read
    // through its descriptor while the new one is written under the same name.
    int killed_fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (killed_fd >= 0) ::unlink(tmp.c_str());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      if (old_fd >= 0) ::close(old_fd);
      if (killed_fd >= 0) ::close(killed_fd);
      return Status::IoError(ErrnoMessage("cannot create", tmp));
    }
    Status s;
    uint64_t offset = 0;
    for (const ChunkRef& c : e.chunks) {
      Result<std::string> bytes = Status::NotFound("");
      std::string written;
      const uint64_t at = offset;
      offset += c.length;
      if (killed_fd >= 0 && ReadAt(killed_fd, at, &written, c.length) &&
          Sha256Of(written) == c.id) {
        reused_bytes_ += written.size();
        if (opts_ != nullptr && opts_->on_confirmed) opts_->on_confirmed(written.size());
        bytes = std::move(written);
      } else if (killed_fd >= 0) {
        ::close(killed_fd);  // it was written in order: nothing after this chunk is there
        killed_fd = -1;
      }
      if (!bytes.ok()) {
        if (std::optional<std::string> mine = ReadLocal(old_fd, local, c)) {
          reused_bytes_ += mine->size();
          if (opts_ != nullptr && opts_->on_confirmed) opts_->on_confirmed(mine->size());
          bytes = std::move(*mine);
        } else {
          bytes = FetchChunk(e, c);
        }
      }
      if (!bytes.ok()) {
        s = bytes.status();
        break;
      }
      const bool wrote = e.sparse ? WriteLeavingHoles(fd, at, *bytes)
                                  : WriteFull(fd, bytes->data(), bytes->size()) >= 0;
      if (!wrote) s = Status::IoError(ErrnoMessage("cannot write", tmp));
      if (!s.ok()) break;
    }
    // Blocks of zeros at the end were left unwritten: the size says where the file ends.
    if (s.ok() && e.sparse && ::ftruncate(fd, static_cast<off_t>(e.size)) != 0) {
      s = Status::IoError(ErrnoMessage("cannot write", tmp));
    }
    if (s.ok() && ::fchmod(fd, e.mode) != 0) s = Status::IoError(ErrnoMessage("cannot chmod", tmp));
    if (s.ok() && ::fsync(fd) != 0) s = Status::IoError(ErrnoMessage("cannot fsync", tmp));
    CUTOVER_FAILPOINT("pull.file.after_fsync");
    struct timespec times[2] = {Ts(e.mtime_ns), Ts(e.mtime_ns)};
    if (s.ok() && ::futimens(fd, times) != 0)
      s = Status::IoError(ErrnoMessage("cannot set mtime", tmp));
    ::close(fd);
    if (old_fd >= 0) ::close(old_fd);
    if (killed_fd >= 0) ::close(killed_fd);
    CUTOVER_FAILPOINT("pull.file.before_rename");
    if (s.ok()) s = ReplaceWith(tmp, full);
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    bytes_ += e.size;
    return Status::Ok();
  }

  // A hard link to `file` (restored by this pull) when `e` is one with the same bytes; else, as
  // when the file system refuses links, `e` is restored as a file of its own. A crafted link to a
  // file with other bytes never makes one file show another's.
  Status HardLink(const Entry& e, const Entry& file) {
    if (file.chunks != e.chunks || file.size != e.size || Failed(file.path)) return File(e);
    std::string full = dest_ + "/" + e.path, target = dest_ + "/" + file.path;
    struct stat ts, fs;
    if (::lstat(target.c_str(), &ts) != 0 || !S_ISREG(ts.st_mode)) return File(e);
    bytes_ += e.size;
    if (opts_ != nullptr && opts_->dry_run) return Status::Ok();
    if (::lstat(full.c_str(), &fs) == 0 && fs.st_dev == ts.st_dev && fs.st_ino == ts.st_ino) {
      reused_bytes_ += e.size;  // linked by an earlier pull
      return Status::Ok();
    }
    std::string tmp = TempFor(e);
    ::unlink(tmp.c_str());
    if (::link(target.c_str(), tmp.c_str()) != 0) {
      bytes_ -= e.size;
      if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP) return File(e);
      return Status::IoError(ErrnoMessage("cannot link", full));
    }
    Status s = ReplaceWith(tmp, full);
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      bytes_ -= e.size;
    }
    return s;
  }

  // Whether the entry at `path` failed in this pull.
  bool Failed(const std::string& path) {
    std::lock_guard<std::mutex> l(failures_mu_);
    return std::any_of(failures_.begin(), failures_.end(),
                       [&](const auto& f) { return f.first == path; });
  }

  Status Symlink(const Entry& e) {
    std::string full = dest_ + "/" + e.path;
    std::string tmp = TempFor(e);
    ::unlink(tmp.c_str());
    if (::symlink(e.target.c_str(), tmp.c_str()) != 0)
      return Status::IoError(ErrnoMessage("cannot create symlink", tmp));
    struct timespec times[2] = {Ts(e.mtime_ns), Ts(e.mtime_ns)};
    ::utimensat(AT_FDCWD, tmp.c_str(), times, AT_SYMLINK_NOFOLLOW);
    Status s = ReplaceWith(tmp, full);
    if (!s.ok()) ::unlink(tmp.c_str());
    return s;
  }

  // Renames tmp over full unless full is a directory.
  Status ReplaceWith(const std::string& tmp, const std::string& full) {
    struct stat st;
    if (::lstat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("pull: " + full + " is a directory; remove it first");
    }
    if (::rename(tmp.c_str(), full.c_str()) != 0)
      return Status::IoError(ErrnoMessage("cannot rename into", full));
    return Status::Ok();
  }

  Status FinishDirs(const std::vector<const Entry*>& dirs) {
    // Deepest first, so setting a child's times does not disturb its parent's.
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      std::string full = dest_ + "/" + (*it)->path;
      Status s;
      struct timespec times[2] = {Ts((*it)->mtime_ns), Ts((*it)->mtime_ns)};
      if (::chmod(full.c_str(), (*it)->mode) != 0) {
        s = Status::IoError(ErrnoMessage("cannot chmod", full));
      } else if (::utimensat(AT_FDCWD, full.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
        s = Status::IoError(ErrnoMessage("cannot set mtime", full));
      }
      CUTOVER_RETURN_IF_ERROR(Record(**it, std::move(s)));
    }
    return Status::Ok();
  }

  PullResult result_;
  std::atomic<uint64_t> bytes_{0}, downloaded_bytes_{0}, reused_bytes_{0};
  const PullOptions* opts_ = nullptr;
  ChunkerParams chunker_;

 private:
  struct Elsewhere {
    std::string path;  // relative to DEST
    uint64_t offset = 0;
    uint64_t length = 0;
  };

  Store& store_;
  std::string dest_;
  std::string temp_leaf_, temp_dir_;     // the private directory (MakeTempDir)
  std::map<ChunkId, Elsewhere> others_;  // filled by IndexOthers, read-only after it
  std::mutex failures_mu_;
  std::vector<std::pair<std::string, Status>> failures_;  // guarded by failures_mu_
};

// Directories first (sorted order puts a parent before its children), then the files in
// parallel, then the symlinks (so no file is ever written through a symlink just made), then,
// with delete_extra and nothing failed, what the snapshot lacks, then the directories' modes
// and times. An entry that fails is recorded (Puller::Record) and the others go on (an entry
// whose parent is not a directory is not attempted: nothing is written through what is in the
// way); only a store-wide failure returns early.
Status RestoreAll(Puller& p, const Manifest& m, const PullOptions& opts) {
  std::vector<const Entry*> dirs;
  std::vector<char> blocked(m.entries.size(), 0);
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const Entry& e = m.entries[i];
    if (!opts.dry_run) {
      Status s = p.PrepareParents(e.path);
      if (s.ok() && e.type == EntryType::kDir) s = p.Dir(e);
      if (!s.ok()) {
        blocked[i] = 1;
        CUTOVER_RETURN_IF_ERROR(p.Record(e, std::move(s)));
        continue;
      }
    }
    if (e.type == EntryType::kDir) {
      dirs.push_back(&e);
      ++p.result_.dirs;
    }
  }
  Status s;
  {
    TaskPool pool(opts.jobs, static_cast<size_t>(opts.jobs) * 2);
    for (size_t i = 0; i < m.entries.size(); ++i) {
      const Entry& e = m.entries[i];
      if (e.type != EntryType::kFile || blocked[i]) continue;
      ++p.result_.files;
      if (!e.link.empty()) continue;  // once the file it links to is there
      pool.Submit([&p, &e] { return p.Record(e, p.File(e)); });
    }
    s = pool.Wait();
  }
  // Hard links. DecodeManifest made sure each names an earlier file.
  std::unordered_map<std::string_view, const Entry*> files;
  for (size_t i = 0; i < m.entries.size() && s.ok(); ++i) {
    const Entry& e = m.entries[i];
    if (e.type != EntryType::kFile || blocked[i]) continue;
    if (e.link.empty()) {
      files.emplace(e.path, &e);
      continue;
    }
    auto it = files.find(e.link);
    s = p.Record(e, it == files.end() ? p.File(e) : p.HardLink(e, *it->second));
  }
  for (size_t i = 0; i < m.entries.size() && s.ok(); ++i) {
    const Entry& e = m.entries[i];
    if (e.type != EntryType::kSymlink || blocked[i]) continue;
    if (!opts.dry_run) s = p.Record(e, p.Symlink(e));
    ++p.result_.symlinks;
  }
  if (s.ok() && opts.delete_extra && p.Failures().ok()) s = p.DeleteExtras(m);
  // Even after a store-wide failure, so directories made writable get their modes back.
  if (!opts.dry_run) {
    Status finished = p.FinishDirs(dirs);
    if (s.ok()) s = finished;
  }
  return s;
}

}  // namespace

Result<PullResult> Pull(Store& store, const SnapshotSelector& snapshot, const std::string& dest_dir,
                        const PullOptions& opts) {
  Result<SnapshotRef> ref = ResolveSnapshot(store, snapshot);
  if (!ref.ok()) return ref.status().WithContext("pull");
  const std::string name = snapshot.Label();
  auto bytes = store.Get(ref->key);
  if (!bytes.ok()) {
    if (bytes.status().code() == Code::kNotFound) {  // forgotten since it was listed
      return Status::NotFound("pull: no snapshot " + name + " in " + store.Url());
    }
    return bytes.status();
  }
  auto decoded = DecodeManifest(*bytes);
  if (!decoded.ok()) {
    // A manifest that cannot be read is bad input (exit 2), as verify and ls say; Corruption
    // (a finding, exit 1) is kept for chunks that fail their hash.
    return Status::InvalidArgument("pull: snapshot " + name + ": " + decoded.status().message());
  }
  Manifest m = std::move(decoded).value();
  CUTOVER_RETURN_IF_ERROR(
      CheckManifestChunker(store, m.chunker).WithContext("pull: snapshot " + name));
  std::sort(m.entries.begin(), m.entries.end(),
            [](const Entry& a, const Entry& b) { return a.path < b.path; });
  if (!opts.dry_run) CUTOVER_RETURN_IF_ERROR(MakeDirs(dest_dir));
  std::string dest = dest_dir;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  DestLock lock;
  if (!opts.dry_run) CUTOVER_RETURN_IF_ERROR(lock.Acquire(dest));
  Puller p(store, dest);
  p.opts_ = &opts;
  p.chunker_ = m.chunker;
  {
    std::set<std::string> named, top_level;
    std::set<uint64_t> sizes;
    for (const Entry& e : m.entries) {
      named.insert(e.path);
      if (e.type == EntryType::kFile) sizes.insert(e.size);
      if (e.path.find('/') == std::string::npos) top_level.insert(e.path);
    }
    if (!opts.dry_run) CUTOVER_RETURN_IF_ERROR(p.MakeTempDir(top_level));
    CUTOVER_RETURN_IF_ERROR(p.IndexOthers(named, sizes, opts.jobs));
  }
  if (opts.on_total) {
    uint64_t total = 0;
    for (const Entry& e : m.entries) total += e.size;
    opts.on_total(total);
  }
  Status s = RestoreAll(p, m, opts);
  p.RemoveTempDir();
  CUTOVER_RETURN_IF_ERROR(s);
  CUTOVER_RETURN_IF_ERROR(p.Failures());
  p.result_.snapshot = *ref;
  p.result_.bytes = p.bytes_.load();
  p.result_.downloaded_bytes = p.downloaded_bytes_.load();
  p.result_.reused_bytes = p.reused_bytes_.load();
  return p.result_;
}

nlohmann::json PullResultToJson(const PullResult& r, const PullOptions& opts,
                                std::string_view store_url, std::string_view dest) {
  nlohmann::json doc = {{"schema", "cutover.datasync-pull/1"},
                        {"snapshot", r.snapshot.name},
                        {"id", r.snapshot.id},
                        {"store", store_url},
                        {"dest", dest},
                        {"files", r.files},
                        {"dirs", r.dirs},
                        {"symlinks", r.symlinks},
                        {"bytes", r.bytes},
                        {"downloaded_bytes", r.downloaded_bytes},
                        {"reused_bytes", r.reused_bytes}};
  if (opts.delete_extra) doc[opts.dry_run ? "would_delete" : "deleted"] = r.deleted;
  if (opts.dry_run) {
    doc["dry_run"] = true;
    doc["would_download_bytes"] = std::exchange(doc["downloaded_bytes"], 0);
  }
  return doc;
}

std::string RenderPullResult(const PullResult& r, const PullOptions& opts,
                             std::string_view /*store_url*/, std::string_view dest) {
  std::string table;
  if (opts.delete_extra) {
    for (const std::string& path : r.deleted) {
      table += (opts.dry_run ? "would delete " : "deleted ") + path + "\n";
    }
  }
  const std::string into(dest);
  if (opts.dry_run) {
    return table + "dry run: pulling snapshot " + r.snapshot.name + " " + r.snapshot.id + " (" +
           std::to_string(r.files) + " files, " + FormatBytes(r.bytes) + ") into " + into +
           " would download " + FormatBytes(r.downloaded_bytes) + " and reuse " +
           FormatBytes(r.reused_bytes) + " of its files; nothing was written\n";
  }
  return table + "pulled snapshot " + r.snapshot.name + " " + r.snapshot.id + " into " + into +
         ": " + std::to_string(r.files) + " files, " + std::to_string(r.dirs) + " dirs, " +
         std::to_string(r.symlinks) + " symlinks, " + std::to_string(r.bytes) + " bytes" +
         (r.reused_bytes > 0
              ? " (" + std::to_string(r.reused_bytes) + " of them already in " + into + ")"
              : std::string()) +
         "\n";
}

}  // namespace cutover
