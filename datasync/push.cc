#include "datasync/push.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "core/failpoint.h"
#include "datasync/chunk_hasher.h"
#include "datasync/gc.h"
#include "datasync/manifest.h"
#include "datasync/state.h"
#include "datasync/store_config.h"
#include "datasync/store_lock.h"
#include "datasync/task_pool.h"

namespace cutover {
namespace {

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

const char* SpecialKind(mode_t m) {
  if (S_ISSOCK(m)) return "socket";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  return "special file";
}

Status ReadAt(int fd, std::string* out, uint64_t offset, uint64_t length, const std::string& path) {
  out->resize(length);
  size_t got = 0;
  while (got < length) {
    ssize_t n = ::pread(fd, out->data() + got, length - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::IoError(Errno("cannot read", path));
    }
    if (n == 0) return Status::IoError("file changed while being read (shrank): " + path);
    got += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// One regular file of the tree, as found by the walk.
struct FileWork {
  size_t entry = 0;  // index into the manifest's entries (its path on disk: FullPath)
  FileStatKey key;
  bool small = false;   // one chunk below min size: goes into a pack
  bool cached = false;  // chunk list taken from the files cache
};

class Pusher {
 public:
  Pusher(const std::string& src, Store& store, const ChunkerParams& params, const PushOptions& opts)
      : src_(src), store_(store), url_(store.Url()), params_(params), opts_(opts) {}

  // A file's path on disk, made when needed: a million-file push keeps no second copy of
  // every path.
  std::string FullPath(const FileWork& w) const {
    return src_ + "/" + manifest_.entries[w.entry].path;
  }

  Status Walk(const std::string& rel) {
    std::string dir = rel.empty() ? src_ : src_ + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::IoError(Errno("cannot list", dir));
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
        names.emplace_back(e->d_name);
      }
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      std::string path = rel.empty() ? n : rel + "/" + n;
      std::string full = src_ + "/" + path;
      struct stat st;
      if (::lstat(full.c_str(), &st) != 0) {
        if (errno == ENOENT) continue;  // removed meanwhile: not part of the snapshot
        return Status::IoError(Errno("cannot stat", full));
      }
      Entry e;
      e.path = path;
      e.mode = st.st_mode & 07777;
      e.mtime_ns = MtimeNs(st);
      const bool mine = !opts_.shard.has_value() || InShard(path, *opts_.shard);
      if (S_ISDIR(st.st_mode)) {
        e.type = EntryType::kDir;
        tree_.Add(path, e.type);
        if (mine) {
          manifest_.entries.push_back(e);
          ++result_.dirs;
        }
        CUTOVER_RETURN_IF_ERROR(Walk(path));  // another shard's directory may hold our files
      } else if (S_ISLNK(st.st_mode)) {
        e.type = EntryType::kSymlink;
        tree_.Add(path, e.type);
        if (!mine) continue;
        std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
        ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
        if (n < 0) return Status::IoError(Errno("cannot read symlink", full));
        target.resize(static_cast<size_t>(n));
        e.target = target;
        manifest_.entries.push_back(e);
        ++result_.symlinks;
      } else if (S_ISREG(st.st_mode)) {
        e.type = EntryType::kFile;
        tree_.Add(path, e.type);
        if (!mine) continue;
        manifest_.entries.push_back(std::move(e));
        FileWork w;
        w.entry = manifest_.entries.size() - 1;
        w.key =
            FileStatKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<uint64_t>(st.st_size), MtimeNs(st),
                        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
        total_bytes_ += w.key.size;
        files_.push_back(std::move(w));
        ++result_.files;
      } else if (mine) {
        result_.skipped.push_back(path + " (" + SpecialKind(st.st_mode) + ")");
      }
    }
    return Status::Ok();
  }

  // Runs every file through the workers, then packs the small ones; waits for all uploads.
  Status Run() {
    if (opts_.on_total) opts_.on_total(total_bytes_);
    TaskPool pool(opts_.jobs, static_cast<size_t>(opts_.jobs) * 2);
    for (FileWork& w : files_) {
      pool.Submit([this, &w] { return ProcessFile(w); });
    }
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
    for (FileWork& w : files_) {
      if (w.small && !w.cached) CUTOVER_RETURN_IF_ERROR(AddPacked(w, pool));
      if (pool.failed()) break;
    }
    CUTOVER_RETURN_IF_ERROR(FlushPack(pool));
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
    for (const FileWork& w : files_) {
      const Entry& e = manifest_.entries[w.entry];
      result_.bytes += e.size;
      result_.chunks += e.chunks.size();
    }
    result_.files_read = files_read_.load();
    result_.files_cached = files_cached_.load();
    result_.journal_hits = journal_hits_.load();
    result_.uploaded_objects = uploaded_objects_.load();
    result_.uploaded_bytes = uploaded_bytes_.load();
    return Status::Ok();
  }

  // Worker: the chunk list of one file, from the files cache or by reading it; uploads its chunks.
  Status ProcessFile(FileWork& w) {
    Entry* e = &manifest_.entries[w.entry];
    if (opts_.state != nullptr) {
      CUTOVER_ASSIGN_OR_RETURN(auto cached, opts_.state->LookupFile(url_, e->path, w.key));
      if (cached.has_value()) {
        uint64_t size = 0;
        bool present = true;
        for (const ChunkRef& c : *cached) {
          size += c.length;
          CUTOVER_ASSIGN_OR_RETURN(bool have, Present(c.packed ? PackKey(c.pack) : ChunkKey(c.id)));
          if (!have) {
            present = false;
            break;
          }
        }
        if (present && size == w.key.size) {
          e->chunks = std::move(*cached);
          e->size = size;
          w.cached = true;
          ++files_cached_;
          if (opts_.on_confirmed) opts_.on_confirmed(size);
          return Status::Ok();
        }
      }
    }
    ++files_read_;
    int fd = ::open(FullPath(w).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError(Errno("cannot open", FullPath(w)));
    Status s = ChunkAndUpload(fd, w, e);
    ::close(fd);
    return s;
  }

  // One pass over an open file: each chunk is hashed as it is read and uploaded from the same
  // buffer (at most max size + one read in memory). A file that is one chunk below min size is
  // left for a pack (w.small). The file must still match its walk stat afterwards, so what was
  // uploaded is the file as the snapshot describes it.
  Status ChunkAndUpload(int fd, FileWork& w, Entry* e) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    ChunkHasher hasher(params_);
    std::vector<Chunk> chunks;
    std::string pending;  // the file's bytes from the start of the current chunk
    uint64_t pending_offset = 0, read_total = 0;
    // Uploads the chunks in `chunks` (all of them lie in `pending`), then drops their bytes.
    auto upload = [&]() -> Status {
      uint64_t used = 0;
      for (const Chunk& c : chunks) {
        e->chunks.push_back(ChunkRef{c.id, c.length, false, {}, 0});
        e->size += c.length;
        std::string_view bytes(pending.data() + (c.offset - pending_offset), c.length);
        CUTOVER_RETURN_IF_ERROR(Upload(ChunkKey(c.id), bytes));
        if (opts_.on_confirmed) opts_.on_confirmed(c.length);
        used = c.offset + c.length - pending_offset;
      }
      chunks.clear();
      pending.erase(0, used);
      pending_offset += used;
      return Status::Ok();
    };
    for (;;) {
      size_t old = pending.size();
      pending.resize(old + kChunkFileReadBytes);
      ssize_t got = ::read(fd, pending.data() + old, kChunkFileReadBytes);
      if (got < 0 && errno == EINTR) {
        pending.resize(old);
        continue;
      }
      if (got < 0) return Status::IoError(Errno("cannot read", FullPath(w)));
      pending.resize(old + static_cast<size_t>(got));
      if (got == 0) break;
      read_total += static_cast<uint64_t>(got);
      hasher.Feed(reinterpret_cast<const uint8_t*>(pending.data() + old), static_cast<size_t>(got),
                  &chunks);
      CUTOVER_RETURN_IF_ERROR(upload());
    }
    hasher.Finish(&chunks);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::IoError(Errno("cannot stat", FullPath(w)));
    if (read_total != w.key.size || static_cast<uint64_t>(st.st_size) != w.key.size ||
        MtimeNs(st) != w.key.mtime_ns ||
        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec !=
            w.key.ctime_ns) {
      return Status::IoError("file changed while being read: " + FullPath(w));
    }
    if (e->chunks.empty() && chunks.size() == 1 && chunks[0].length < params_.min_size) {
      e->chunks.push_back(ChunkRef{chunks[0].id, chunks[0].length, false, {}, 0});
      e->size = chunks[0].length;
      w.small = true;
      return Status::Ok();
    }
    return upload();
  }

  // True when the store holds `key`: from this run, the journal, or by asking the store.
  Result<bool> Present(const std::string& key) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (confirmed_.count(key) != 0) return true;
    }
    if (opts_.state != nullptr && trust_journal_) {
      CUTOVER_ASSIGN_OR_RETURN(bool journaled, opts_.state->IsConfirmed(url_, key));
      if (journaled) {
        ++journal_hits_;
        MarkConfirmed(key);
        return true;
      }
    }
    CUTOVER_ASSIGN_OR_RETURN(bool have, store_.Exists(key));
    if (have) {
      if (opts_.state != nullptr && !opts_.dry_run) {
        CUTOVER_RETURN_IF_ERROR(opts_.state->RecordConfirmed(url_, key));
      }
      MarkConfirmed(key);
    }
    return have;
  }

  void MarkConfirmed(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    confirmed_.insert(key);
  }

  // Makes sure the store holds `bytes` under the content-addressed `key`.
  Status Upload(const std::string& key, std::string_view bytes) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!claimed_.insert(key).second) return Status::Ok();  // another worker has it
    }
    CUTOVER_ASSIGN_OR_RETURN(bool have, Present(key));
    if (have) return Status::Ok();
    if (!opts_.dry_run) {
      CUTOVER_RETURN_IF_ERROR(store_.Put(key, bytes));
      CUTOVER_FAILPOINT("push.chunk_put.after");
      CUTOVER_ASSIGN_OR_RETURN(bool now, store_.Exists(key));
      if (!now) {
        return Status::Unavailable("store " + url_ + " does not hold " + key +
                                   " after uploading it; the manifest is not published");
      }
      if (opts_.state != nullptr) CUTOVER_RETURN_IF_ERROR(opts_.state->RecordConfirmed(url_, key));
      MarkConfirmed(key);
    }
    ++uploaded_objects_;
    uploaded_bytes_ += bytes.size();
    return Status::Ok();
  }

  // Places a small file's bytes in the current pack (or where the previous snapshot had them).
  Status AddPacked(FileWork& w, TaskPool& pool) {
    ChunkRef* ref = &manifest_.entries[w.entry].chunks[0];
    std::string hex = ToHex(ref->id);
    auto prev = previous_.find(hex);
    if (prev != previous_.end()) {
      CUTOVER_ASSIGN_OR_RETURN(bool have, Present(PackKey(prev->second.pack)));
      if (have) {
        *ref = prev->second;
        if (opts_.on_confirmed) opts_.on_confirmed(ref->length);
        return Status::Ok();
      }
    }
    auto cur = in_pack_.find(hex);
    if (cur != in_pack_.end()) {
      pending_refs_.push_back({w.entry, cur->second});
      return Status::Ok();
    }
    std::string bytes;
    int fd = ::open(FullPath(w).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError(Errno("cannot open", FullPath(w)));
    Status s = ReadAt(fd, &bytes, 0, ref->length, FullPath(w));
    ::close(fd);
    CUTOVER_RETURN_IF_ERROR(s);
    if (Sha256Of(bytes) != ref->id)
      return Status::IoError("file changed while being read: " + FullPath(w));
    if (pack_.size() + bytes.size() > params_.max_size) CUTOVER_RETURN_IF_ERROR(FlushPack(pool));
    in_pack_[hex] = pack_.size();
    pending_refs_.push_back({w.entry, pack_.size()});
    pack_ += bytes;
    return Status::Ok();
  }

  // Hands the current pack to a worker for upload and fills in the references to it.
  Status FlushPack(TaskPool& pool) {
    if (pack_.empty()) return Status::Ok();
    ChunkId pack_id = Sha256Of(pack_);
    std::string key = PackKey(pack_id);
    uint64_t file_bytes = 0;
    for (auto& [entry_index, off] : pending_refs_) {
      ChunkRef* ref = &manifest_.entries[entry_index].chunks[0];
      ref->packed = true;
      ref->pack = pack_id;
      ref->pack_offset = off;
      file_bytes += ref->length;
    }
    auto bytes = std::make_shared<std::string>(std::move(pack_));
    pool.Submit([this, key, bytes, file_bytes]() -> Status {
      CUTOVER_RETURN_IF_ERROR(Upload(key, *bytes));
      CUTOVER_FAILPOINT("push.pack_put.after");
      if (opts_.on_confirmed) opts_.on_confirmed(file_bytes);
      return Status::Ok();
    });
    pending_refs_.clear();
    in_pack_.clear();
    pack_.clear();
    return Status::Ok();
  }

  // Indexes the packed chunks of the previous snapshot of this name, to reuse them.
  Status LoadPrevious(const std::string& snapshot_key) {
    auto bytes = store_.Get(snapshot_key);
    if (!bytes.ok()) {
      return bytes.status().code() == Code::kNotFound ? Status::Ok() : bytes.status();
    }
    auto m = DecodeManifest(*bytes);
    if (!m.ok()) return Status::Ok();  // a broken old manifest only costs dedup
    for (const Entry& e : m->entries) {
      for (const ChunkRef& c : e.chunks) {
        if (c.packed) previous_[ToHex(c.id)] = c;
      }
    }
    return Status::Ok();
  }

  // Remembers the files read this run in the files cache (once the manifest is published), a
  // few thousand rows per transaction, so a million-file push holds no second copy of them.
  Status RememberFiles(DatasyncState& state) const {
    constexpr size_t kBatch = 4096;
    std::vector<DatasyncState::FileRow> rows;
    for (size_t i = 0; i <= files_.size(); ++i) {
      if (rows.size() == kBatch || (i == files_.size() && !rows.empty())) {
        CUTOVER_RETURN_IF_ERROR(state.RememberFiles(url_, rows));
        rows.clear();
      }
      if (i == files_.size() || files_[i].cached) continue;
      const Entry& e = manifest_.entries[files_[i].entry];
      rows.push_back({e.path, files_[i].key, e.chunks});
    }
    return Status::Ok();
  }

  Manifest manifest_;
  PushResult result_;
  TreeDigest tree_;  // the whole tree, every shard's entries
  bool trust_journal_ = true;  // false: the journal predates the store's last gc

 private:
  std::string src_;
  Store& store_;
  const std::string url_;
  ChunkerParams params_;
  const PushOptions& opts_;
  std::vector<FileWork> files_;
  uint64_t total_bytes_ = 0;
  std::atomic<uint64_t> files_read_{0}, files_cached_{0}, journal_hits_{0};
  std::atomic<uint64_t> uploaded_objects_{0}, uploaded_bytes_{0};
  std::mutex mu_;
  std::unordered_set<std::string> confirmed_;  // keys known stored (guarded by mu_)
  std::unordered_set<std::string> claimed_;    // keys some worker uploads (guarded by mu_)
  std::unordered_map<std::string, ChunkRef> previous_;
  std::unordered_map<std::string, uint64_t> in_pack_;      // chunk hex -> offset in pack_
  std::vector<std::pair<size_t, uint64_t>> pending_refs_;  // entry index, offset in pack_
  std::string pack_;
};

}  // namespace

Result<PushResult> Push(const std::string& src_dir, Store& store, const PushOptions& opts) {
  CUTOVER_ASSIGN_OR_RETURN(std::string snapshot_key, SnapshotKey(opts.name));
  std::string publish_key = snapshot_key;
  if (opts.shard.has_value()) {
    CUTOVER_ASSIGN_OR_RETURN(publish_key, PartKey(opts.name, *opts.shard));
  }
  CUTOVER_RETURN_IF_ERROR(opts.chunker.Validate());
  struct stat st;
  if (::stat(src_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound(src_dir + " is not a directory");  // push and plan alike
  }
  ChunkerParams params = opts.chunker;
  if (opts.dry_run) {
    auto have = ReadStoreConfig(store);
    if (have.ok()) {
      params = *have;
    } else if (have.status().code() != Code::kNotFound) {
      return have.status();
    }
  } else {
    CUTOVER_ASSIGN_OR_RETURN(params, EnsureStoreConfig(store, opts.chunker));
  }
  // The lock keeps gc from deleting what this push finds already stored, until it publishes.
  std::unique_ptr<StoreLock> lock;
  if (!opts.dry_run) {
    CUTOVER_ASSIGN_OR_RETURN(lock, StoreLock::Acquire(store, "push", opts.lock));
  }
  Pusher p(src_dir, store, params, opts);
  if (opts.state != nullptr) {
    // Read under the lock, so no gc runs between this and the publish.
    CUTOVER_ASSIGN_OR_RETURN(std::string epoch, ReadGcEpoch(store));
    CUTOVER_ASSIGN_OR_RETURN(std::string journal_epoch, opts.state->JournalEpoch(store.Url()));
    if (epoch != journal_epoch) {
      if (opts.dry_run) {
        p.trust_journal_ = false;
      } else {
        CUTOVER_RETURN_IF_ERROR(opts.state->ResetJournal(store.Url(), epoch));
      }
    }
  }
  CUTOVER_RETURN_IF_ERROR(p.LoadPrevious(snapshot_key));
  if (publish_key != snapshot_key) CUTOVER_RETURN_IF_ERROR(p.LoadPrevious(publish_key));
  p.manifest_.name = opts.name;
  p.manifest_.created_ns = static_cast<int64_t>(::time(nullptr)) * 1000000000;
  p.manifest_.chunker = params;
  CUTOVER_RETURN_IF_ERROR(p.Walk(""));
  CUTOVER_RETURN_IF_ERROR(p.Run());
  if (opts.shard.has_value()) {
    p.manifest_.shard = ShardInfo{opts.shard->index, opts.shard->count, p.tree_.entries(),
                                  p.tree_.Final()};
  }
  if (opts.dry_run) return p.result_;
  CUTOVER_ASSIGN_OR_RETURN(std::string encoded, EncodeManifest(p.manifest_));
  CUTOVER_FAILPOINT_RETURN("push.manifest_put.before");
  CUTOVER_RETURN_IF_ERROR(lock->Check());  // a gc may have run once the lock lapsed
  CUTOVER_RETURN_IF_ERROR(store.Put(publish_key, encoded));
  if (opts.state != nullptr) {
    CUTOVER_RETURN_IF_ERROR(p.RememberFiles(*opts.state));
  }
  CUTOVER_RETURN_IF_ERROR(lock->Release());
  return p.result_;
}

}  // namespace cutover
