#include "datasync/push.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_map>

#include "core/failpoint.h"
#include "datasync/chunk_hasher.h"
#include "datasync/manifest.h"
#include "datasync/store_config.h"

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

class Pusher {
 public:
  Pusher(const std::string& src, Store& store, const ChunkerParams& params)
      : src_(src), store_(store), params_(params) {}

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
      if (S_ISDIR(st.st_mode)) {
        e.type = EntryType::kDir;
        manifest_.entries.push_back(e);
        ++result_.dirs;
        CUTOVER_RETURN_IF_ERROR(Walk(path));
      } else if (S_ISLNK(st.st_mode)) {
        e.type = EntryType::kSymlink;
        std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
        ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
        if (n < 0) return Status::IoError(Errno("cannot read symlink", full));
        target.resize(static_cast<size_t>(n));
        e.target = target;
        manifest_.entries.push_back(e);
        ++result_.symlinks;
      } else if (S_ISREG(st.st_mode)) {
        e.type = EntryType::kFile;
        manifest_.entries.push_back(std::move(e));
        CUTOVER_RETURN_IF_ERROR(AddFile(full, manifest_.entries.size() - 1));
        ++result_.files;
      } else {
        result_.skipped.push_back(path + " (" + SpecialKind(st.st_mode) + ")");
      }
    }
    return Status::Ok();
  }

  Status AddFile(const std::string& full, size_t entry_index) {
    Entry* e = &manifest_.entries[entry_index];
    CUTOVER_ASSIGN_OR_RETURN(std::vector<Chunk> chunks, ChunkFile(full, params_));
    int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError(Errno("cannot open", full));
    Status s;
    std::string bytes;
    for (const Chunk& c : chunks) {
      s = ReadAt(fd, &bytes, c.offset, c.length, full);
      if (!s.ok()) break;
      if (Sha256Of(bytes) != c.id) {
        s = Status::IoError("file changed while being read: " + full);
        break;
      }
      e->chunks.push_back(ChunkRef{c.id, c.length, false, {}, 0});
      e->size += c.length;
      bool small = chunks.size() == 1 && c.length < params_.min_size;
      s = small ? AddPacked(bytes, entry_index) : AddChunk(bytes, c.id);
      if (!s.ok()) break;
    }
    ::close(fd);
    result_.bytes += e->size;
    result_.chunks += e->chunks.size();
    return s;
  }

  Status AddChunk(const std::string& bytes, const ChunkId& id) {
    std::string key = ChunkKey(id);
    if (!confirmed_.insert(key).second) return Status::Ok();
    CUTOVER_ASSIGN_OR_RETURN(bool have, store_.Exists(key));
    if (have) return Status::Ok();
    CUTOVER_RETURN_IF_ERROR(store_.Put(key, bytes));
    CUTOVER_FAILPOINT("push.chunk_put.after");
    ++result_.uploaded_objects;
    result_.uploaded_bytes += bytes.size();
    return Status::Ok();
  }

  // Places a small file's bytes in the current pack (or where the previous snapshot had them).
  // REQUIRES: the entry has exactly one chunk, `bytes`.
  Status AddPacked(const std::string& bytes, size_t entry_index) {
    ChunkRef* ref = &manifest_.entries[entry_index].chunks[0];
    auto prev = previous_.find(ToHex(ref->id));
    if (prev != previous_.end()) {
      *ref = prev->second;
      confirmed_pack_refs_.insert(PackKey(ref->pack));
      return Status::Ok();
    }
    auto cur = in_pack_.find(ToHex(ref->id));
    if (cur != in_pack_.end()) {
      pending_refs_.push_back({entry_index, cur->second});
      return Status::Ok();
    }
    if (pack_.size() + bytes.size() > params_.max_size) CUTOVER_RETURN_IF_ERROR(FlushPack());
    in_pack_[ToHex(ref->id)] = pack_.size();
    pending_refs_.push_back({entry_index, pack_.size()});
    pack_ += bytes;
    return Status::Ok();
  }

  // Uploads the current pack and fills in the references to it.
  Status FlushPack() {
    if (pack_.empty()) return Status::Ok();
    ChunkId pack_id = Sha256Of(pack_);
    std::string key = PackKey(pack_id);
    CUTOVER_ASSIGN_OR_RETURN(bool have, store_.Exists(key));
    if (!have) {
      CUTOVER_RETURN_IF_ERROR(store_.Put(key, pack_));
      CUTOVER_FAILPOINT("push.pack_put.after");
      ++result_.uploaded_objects;
      result_.uploaded_bytes += pack_.size();
    }
    for (auto& [entry_index, off] : pending_refs_) {
      ChunkRef* ref = &manifest_.entries[entry_index].chunks[0];
      ref->packed = true;
      ref->pack = pack_id;
      ref->pack_offset = off;
    }
    confirmed_pack_refs_.insert(key);
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

  // Every chunk and pack the manifest names must be in the store before it is published.
  Status ConfirmAll() {
    std::set<std::string> keys = confirmed_pack_refs_;
    keys.insert(confirmed_.begin(), confirmed_.end());
    for (const std::string& key : keys) {
      CUTOVER_ASSIGN_OR_RETURN(bool have, store_.Exists(key));
      if (!have) {
        return Status::Unavailable("store " + store_.Url() + " does not hold " + key +
                                   " after uploading it; the manifest is not published");
      }
    }
    return Status::Ok();
  }

  Manifest manifest_;
  PushResult result_;

 private:
  std::string src_;
  Store& store_;
  ChunkerParams params_;
  std::set<std::string> confirmed_;            // chunk keys known stored
  std::set<std::string> confirmed_pack_refs_;  // pack keys referenced
  std::unordered_map<std::string, ChunkRef> previous_;
  std::unordered_map<std::string, uint64_t> in_pack_;      // chunk hex -> offset in pack_
  std::vector<std::pair<size_t, uint64_t>> pending_refs_;  // entry index, offset in pack_
  std::string pack_;
};

}  // namespace

Result<PushResult> Push(const std::string& src_dir, Store& store, const PushOptions& opts) {
  CUTOVER_ASSIGN_OR_RETURN(std::string snapshot_key, SnapshotKey(opts.name));
  CUTOVER_RETURN_IF_ERROR(opts.chunker.Validate());
  struct stat st;
  if (::stat(src_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound("push: " + src_dir + " is not a directory");
  }
  CUTOVER_ASSIGN_OR_RETURN(ChunkerParams params, EnsureStoreConfig(store, opts.chunker));
  Pusher p(src_dir, store, params);
  CUTOVER_RETURN_IF_ERROR(p.LoadPrevious(snapshot_key));
  p.manifest_.name = opts.name;
  p.manifest_.created_ns = static_cast<int64_t>(::time(nullptr)) * 1000000000;
  p.manifest_.chunker = params;
  CUTOVER_RETURN_IF_ERROR(p.Walk(""));
  CUTOVER_RETURN_IF_ERROR(p.FlushPack());
  CUTOVER_RETURN_IF_ERROR(p.ConfirmAll());
  CUTOVER_ASSIGN_OR_RETURN(std::string encoded, EncodeManifest(p.manifest_));
  CUTOVER_FAILPOINT_RETURN("push.manifest_put.before");
  CUTOVER_RETURN_IF_ERROR(store.Put(snapshot_key, encoded));
  return p.result_;
}

}  // namespace cutover
