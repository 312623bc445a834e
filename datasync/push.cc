#include "datasync/push.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/failpoint.h"
#include "core/posix_io.h"
#include "datasync/chunk_hasher.h"
#include "datasync/chunker.h"
#include "datasync/entry_spool.h"
#include "datasync/gc.h"
#include "datasync/manifest.h"
#include "datasync/snapshots.h"
#include "datasync/state.h"
#include "datasync/store_config.h"
#include "datasync/store_lock.h"
#include "datasync/task_pool.h"

namespace cutover {
namespace {

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
  const ssize_t got = PreadFull(fd, out->data(), length, offset);
  if (got < 0) return Status::IoError(ErrnoMessage("cannot read", path));
  if (static_cast<uint64_t>(got) < length) {
    return Status::IoError("file changed while being read (shrank): " + path);
  }
  return Status::Ok();
}

// The walk's entries wait in a temporary file (datasync/entry_spool.h); this many are in memory
// at a time while their files are chunked and uploaded, and the processed ones wait in a second
// file until the manifest is encoded from it.
constexpr size_t kWindow = 4096;

using Record = EntrySpool::Record;

// A pack holds at most this many distinct chunks besides at most max chunk size bytes, so the
// index of the pack being filled stays small even for files of a few bytes. (Identical small
// files further apart than this are stored once per pack.)
constexpr size_t kMaxPackMembers = 16384;

// Bits of Record::flags.
constexpr uint32_t kSmall = 1;        // one chunk below min size: goes into a pack
constexpr uint32_t kCached = 2;       // chunk list taken from the files cache
constexpr uint32_t kPendingPack = 4;  // chunks[0].pack holds the pack's number, not yet its id

class Pusher {
 public:
  Pusher(const std::string& src, Store& store, const ChunkerParams& params, const PushOptions& opts)
      : src_(src), store_(store), url_(store.Url()), params_(params), opts_(opts) {}

  // Creates the two temporary entry lists.
  Status Init() {
    CUTOVER_ASSIGN_OR_RETURN(walked_, EntrySpool::Create());
    CUTOVER_ASSIGN_OR_RETURN(done_, EntrySpool::Create());
    return Status::Ok();
  }

  std::string FullPath(const Record& r) const { return src_ + "/" + r.entry.path; }

  // Lists the tree under `rel` into the first entry list, in walk order.

  Status Walk(const std::string& rel) {
    std::string dir = rel.empty() ? src_ : src_ + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::IoError(ErrnoMessage("cannot list", dir));
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
        return Status::IoError(ErrnoMessage("cannot stat", full));
      }
      Entry e;
      e.path = path;
      e.mode = st.st_mode & 07777;
      e.mtime_ns = MtimeNs(st);
      const bool mine = !opts_.shard.has_value() || InShard(path, *opts_.shard);
      if (S_ISDIR(st.st_mode) && store_dir_.has_value() && st.st_dev == store_dir_->first &&
          st.st_ino == store_dir_->second) {
        // A file:// store inside SRC would be pushed into its own snapshot: left out.
        if (mine) result_.skipped.push_back(path + " (the store itself)");
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        e.type = EntryType::kDir;
        tree_.Add(path, e.type);
        if (mine) {
          CUTOVER_RETURN_IF_ERROR(walked_->Write(Record{std::move(e), {}, 0}));
          ++result_.dirs;
        }
        CUTOVER_RETURN_IF_ERROR(Walk(path));  // another shard's directory may hold our files
      } else if (S_ISLNK(st.st_mode)) {
        e.type = EntryType::kSymlink;
        tree_.Add(path, e.type);
        if (!mine) continue;
        std::string target(static_cast<size_t>(st.st_size) + 256, '\0');
        ssize_t n = ::readlink(full.c_str(), target.data(), target.size());
        if (n < 0) return Status::IoError(ErrnoMessage("cannot read symlink", full));
        target.resize(static_cast<size_t>(n));
        e.target = target;
        CUTOVER_RETURN_IF_ERROR(walked_->Write(Record{std::move(e), {}, 0}));
        ++result_.symlinks;
      } else if (S_ISREG(st.st_mode)) {
        e.type = EntryType::kFile;
        tree_.Add(path, e.type);
        if (!mine) continue;
        // Fewer blocks than the size takes: holes (or compression, which does no harm: pull
        // only leaves blocks of zeros unwritten).
        e.sparse = st.st_size >= 4096 &&
                   static_cast<uint64_t>(st.st_blocks) * 512 < static_cast<uint64_t>(st.st_size);
        if (st.st_nlink > 1) {  // the first path of an inode is its file, the others links to it
          auto [it, first] = inodes_.try_emplace(
              {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}, path);
          if (!first) e.link = it->second;
        }
        Record r{
            std::move(e),
            FileStatKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<uint64_t>(st.st_size), MtimeNs(st),
                        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec},
            0};
        total_bytes_ += r.key.size;
        CUTOVER_RETURN_IF_ERROR(walked_->Write(r));
        ++result_.files;
      } else if (mine) {
        result_.skipped.push_back(path + " (" + SpecialKind(st.st_mode) + ")");
      }
    }
    return Status::Ok();
  }

  // Runs the listed files through the workers a window at a time, packs the small ones in walk
  // order, and moves the processed entries to the second list; waits for all uploads.
  Status Run() {
    if (opts_.on_total) opts_.on_total(total_bytes_);
    CUTOVER_RETURN_IF_ERROR(walked_->Rewind());
    TaskPool pool(opts_.jobs, static_cast<size_t>(opts_.jobs) * 2);
    std::vector<Record> window;
    window.reserve(kWindow);
    for (bool more = true; more && !pool.failed();) {
      window.clear();
      while (window.size() < kWindow) {
        Record r;
        CUTOVER_ASSIGN_OR_RETURN(more, walked_->Read(&r));
        if (!more) break;
        window.push_back(std::move(r));
      }
      for (Record& r : window) {  // `window` does not grow while the workers hold these
        if (r.entry.type == EntryType::kFile) pool.Submit([this, &r] { return ProcessFile(r); });
      }
      CUTOVER_RETURN_IF_ERROR(pool.Wait());
      for (Record& r : window) {
        if ((r.flags & kSmall) != 0 && (r.flags & kCached) == 0) {
          CUTOVER_RETURN_IF_ERROR(AddPacked(r, pool));
          if (pool.failed()) break;
        }
        result_.bytes += r.entry.size;
        result_.chunks += r.entry.chunks.size();
        CUTOVER_RETURN_IF_ERROR(done_->Write(r));
      }
    }
    CUTOVER_RETURN_IF_ERROR(FlushPack(pool));
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
    walked_.reset();  // its temporary file goes
    result_.files_read = files_read_.load();
    result_.files_cached = files_cached_.load();
    result_.journal_hits = journal_hits_.load();
    result_.uploaded_objects = uploaded_objects_.load();
    result_.uploaded_bytes = uploaded_bytes_.load();
    result_.hashed_bytes = hashed_bytes_.load();
    result_.scanned_bytes = scanned_bytes_.load();
    return Status::Ok();
  }

  // Reads the processed entries back in order, each with its pack's id in place of its number.
  template <typename Fn>
  Status ForEachDone(Fn fn) {
    CUTOVER_RETURN_IF_ERROR(done_->Rewind());
    Record r;
    for (;;) {
      CUTOVER_ASSIGN_OR_RETURN(bool more, done_->Read(&r));
      if (!more) return Status::Ok();
      if ((r.flags & kPendingPack) != 0) {
        ChunkRef& c = r.entry.chunks[0];
        uint64_t number = 0;
        std::memcpy(&number, c.pack.data(), sizeof number);
        if (number >= pack_ids_.size()) return Status::Internal("push: pack number out of range");
        c.pack = pack_ids_[number];
      }
      CUTOVER_RETURN_IF_ERROR(fn(r));
    }
  }

  // The manifest's compressed JSON, encoded from the processed entries.
  Result<std::string> Encode() {
    CUTOVER_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Begin(manifest_));
    CUTOVER_RETURN_IF_ERROR(ForEachDone([&](const Record& r) { return writer->Add(r.entry); }));
    return writer->Finish();
  }

  // The chunks of a file as pushed before (datasync/hash.h FastDigest). A chunk cut here with
  // the fast digest and length of one of them has the SHA-256 it had then, which is not
  // computed again; and where the file's next chunk starts at the offset one of them started at
  // and has its fast digest, it ends where that one ended, so it is not scanned for its cut.
  struct Previous {
    std::unordered_map<FastDigest, std::pair<uint64_t, ChunkId>, FastDigestHash> by_digest;
    struct At {
      uint64_t length;
      FastDigest fast;
      ChunkId id;
      bool last;  // the file's last chunk then: it ended at the end of the file, not at a cut
    };
    std::unordered_map<uint64_t, At> by_offset;  // by start offset in the file
  };

  // Worker: the chunk list of one file, from the files cache or by reading it; uploads its chunks.
  Status ProcessFile(Record& w) {
    Entry* e = &w.entry;
    Previous previous;
    if (opts_.state != nullptr) {
      CUTOVER_ASSIGN_OR_RETURN(auto cached, opts_.state->LookupFile(url_, e->path, w.key));
      if (cached.has_value() && cached->unchanged) {
        uint64_t size = 0;
        bool present = true;
        for (const ChunkRef& c : cached->chunks) {
          size += c.length;
          CUTOVER_ASSIGN_OR_RETURN(
              bool have, c.packed ? Present(store_.Names().Pack(c.pack), c.pack_offset + c.length,
                                            /*exact=*/false)
                                  : Present(store_.Names().Chunk(c.id), c.length, /*exact=*/true));
          if (!have) {
            present = false;
            break;
          }
        }
        if (present && size == w.key.size) {
          e->chunks = std::move(cached->chunks);
          e->size = size;
          w.flags |= kCached;
          ++files_cached_;
          if (opts_.on_confirmed) opts_.on_confirmed(size);
          return Status::Ok();
        }
      }
      if (cached.has_value() && cached->fast.size() == cached->chunks.size()) {
        uint64_t offset = 0;
        for (size_t i = 0; i < cached->chunks.size(); ++i) {
          const ChunkRef& c = cached->chunks[i];
          previous.by_digest.emplace(cached->fast[i], std::make_pair(c.length, c.id));
          // (Not in a store this push created: the cache may be of an older store at its URL,
          // cut with other chunker parameters.)
          if (!store_was_empty_ && !c.packed && c.length > 0 && c.length <= params_.max_size) {
            previous.by_offset.emplace(offset, Previous::At{c.length, cached->fast[i], c.id,
                                                            i + 1 == cached->chunks.size()});
          }
          offset += c.length;
        }
      }
    }
    ++files_read_;
    int fd = ::open(FullPath(w).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError(ErrnoMessage("cannot open", FullPath(w)));
    Status s = ChunkAndUpload(fd, w, e, previous);
    ::close(fd);
    return s;
  }

  // One pass over an open file: each chunk is cut as it is read, named (its SHA-256, unless
  // `previous` has it) and uploaded from the same buffer (at most max size + one read in memory).
  // A file that is one chunk below min size is left for a pack (kSmall). The file must still
  // match its walk stat afterwards, so what was uploaded is the file as the snapshot describes it.
  Status ChunkAndUpload(int fd, Record& w, Entry* e, const Previous& previous) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Chunker chunker(params_);
    std::vector<uint64_t> ends;  // stream offsets where cut chunks end
    // The file's bytes from the start of the current chunk: pending[base, held), of which the
    // chunker has consumed pending[base, fed). A read first moves them to the front; fewer than
    // max size bytes are there then, so it always fits. One buffer per worker thread, kept from
    // file to file and never zero-filled (pages are touched only as far as files reach).
    thread_local std::unique_ptr<char[]> buffer;
    thread_local size_t capacity = 0;
    if (capacity < params_.max_size + kChunkFileReadBytes) {
      capacity = params_.max_size + kChunkFileReadBytes;
      buffer.reset(new char[capacity]);
    }
    char* const pending = buffer.get();
    size_t base = 0, held = 0, fed = 0;
    uint64_t pending_offset = 0, read_total = 0;
    bool eof = false;
    auto read_more = [&]() -> Status {
      if (base > 0) {
        std::memmove(pending, pending + base, held - base);
        held -= base;
        fed -= base;
        base = 0;
      }
      const ssize_t got = ReadSome(fd, pending + held, kChunkFileReadBytes);
      if (got < 0) return Status::IoError(ErrnoMessage("cannot read", FullPath(w)));
      if (got == 0) eof = true;
      held += static_cast<size_t>(got);
      read_total += static_cast<uint64_t>(got);
      return Status::Ok();
    };
    // Names the chunk pending[base, base + length) (`known` when a previous chunk had its bytes)
    // and uploads it unless told not to, then drops its bytes.
    auto take_one = [&](uint64_t length, const FastDigest& fast, const ChunkId* known,
                        bool upload) -> Status {
      std::string_view bytes(pending + base, length);
      ChunkId id;
      if (known != nullptr) {
        id = *known;
      } else if (auto k = previous.by_digest.find(fast);
                 k != previous.by_digest.end() && k->second.first == length) {
        id = k->second.second;
      } else {
        id = Sha256Of(bytes);
        hashed_bytes_ += length;
      }
      e->chunks.push_back(ChunkRef{id, length, false, {}, 0});
      e->size += length;
      w.fast.push_back(fast);
      if (upload) {
        CUTOVER_RETURN_IF_ERROR(Upload(store_.Names().Chunk(id), bytes));
        if (opts_.on_confirmed) opts_.on_confirmed(length);
      }
      base += length;
      pending_offset += length;
      return Status::Ok();
    };
    auto take = [&](bool upload) -> Status {
      for (uint64_t end : ends) {
        const uint64_t length = end - pending_offset;
        CUTOVER_RETURN_IF_ERROR(
            take_one(length, FastDigestOf(pending + base, length), nullptr, upload));
      }
      ends.clear();
      return Status::Ok();
    };
    for (;;) {
      // At a chunk start where the last push had a chunk start too: if the bytes are that
      // chunk's, so is the cut.
      auto p = chunker.at_chunk_start() ? previous.by_offset.find(pending_offset)
                                        : previous.by_offset.end();
      if (p != previous.by_offset.end() &&
          (!p->second.last || pending_offset + p->second.length == w.key.size)) {
        while (!eof && held - base < p->second.length) CUTOVER_RETURN_IF_ERROR(read_more());
        if (held - base >= p->second.length) {
          const FastDigest fast = FastDigestOf(pending + base, p->second.length);
          if (fast == p->second.fast) {
            chunker.SkipChunk(p->second.length, &ends);
            ends.clear();
            fed = base + p->second.length;
            CUTOVER_RETURN_IF_ERROR(take_one(p->second.length, fast, &p->second.id, true));
            continue;
          }
        }
      }
      if (fed == held) {
        if (eof) break;
        CUTOVER_RETURN_IF_ERROR(read_more());
        continue;
      }
      const size_t used =
          chunker.FeedToCut(reinterpret_cast<const uint8_t*>(pending + fed), held - fed, &ends);
      fed += used;
      scanned_bytes_ += used;
      CUTOVER_RETURN_IF_ERROR(take(/*upload=*/true));
    }
    chunker.Finish(&ends);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::IoError(ErrnoMessage("cannot stat", FullPath(w)));
    if (read_total != w.key.size || static_cast<uint64_t>(st.st_size) != w.key.size ||
        MtimeNs(st) != w.key.mtime_ns ||
        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec !=
            w.key.ctime_ns) {
      return Status::IoError("file changed while being read: " + FullPath(w));
    }
    const bool small =
        e->chunks.empty() && ends.size() == 1 && ends[0] - pending_offset < params_.min_size;
    if (small) w.flags |= kSmall;
    return take(/*upload=*/!small);
  }

  // True when the store holds `key` whole: seen whole in this run (put, or a Head whose size
  // is `size`, or at least `size` when `exact` is false: a pack read in part), or journaled and
  // not disproved since (a verify or pull drops what it finds missing or corrupt). An object of
  // another size (truncated, a partial body) is not there: it is put again, whole.
  Result<bool> Present(const std::string& key, uint64_t size, bool exact) {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto seen = confirmed_.find(key);
      if (seen != confirmed_.end()) {
        if (seen->second == kJournaled || (exact ? seen->second == size : seen->second >= size)) {
          return true;
        }
        // Seen with another size: a chunk is put again, a pack member past its end repacked.
        return false;
      }
    }
    if (opts_.state != nullptr && trust_journal_) {
      CUTOVER_ASSIGN_OR_RETURN(bool journaled, opts_.state->IsConfirmed(url_, key));
      if (journaled) {
        ++journal_hits_;
        MarkConfirmed(key, kJournaled);
        return true;
      }
    }
    if (store_was_empty_) return false;
    Result<uint64_t> stored = store_.Head(key);
    if (!stored.ok() && stored.status().code() != Code::kNotFound) return stored.status();
    if (stored.ok()) MarkConfirmed(key, *stored);  // its size, for later checks of this key
    const bool have = stored.ok() && (exact ? *stored == size : *stored >= size);
    if (have && opts_.state != nullptr && !opts_.dry_run) {
      CUTOVER_RETURN_IF_ERROR(opts_.state->RecordConfirmed(url_, key));
    }
    return have;
  }

  // Remembers that the store holds `key` with `size` bytes (kJournaled: the journal says it
  // holds it whole).
  void MarkConfirmed(const std::string& key, uint64_t size) {
    std::lock_guard<std::mutex> l(mu_);
    confirmed_[key] = size;
  }

  // Makes sure the store holds `bytes` under the content-addressed `key`.
  Status Upload(const std::string& key, std::string_view bytes) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!claimed_.insert(key).second) return Status::Ok();  // another worker has it
    }
    CUTOVER_ASSIGN_OR_RETURN(bool have, Present(key, bytes.size(), /*exact=*/true));
    if (have) return Status::Ok();
    if (!opts_.dry_run) {
      // Put returning OK is the store's confirmation (Store::Put: durable once it returns); no
      // HEAD after it, which cost one request per object.
      CUTOVER_RETURN_IF_ERROR(store_.Put(key, bytes));
      CUTOVER_FAILPOINT("push.chunk_put.after");
      if (opts_.state != nullptr) CUTOVER_RETURN_IF_ERROR(opts_.state->RecordConfirmed(url_, key));
      MarkConfirmed(key, bytes.size());
    }
    ++uploaded_objects_;
    uploaded_bytes_ += bytes.size();
    return Status::Ok();
  }

  // Places a small file's bytes in the current pack (or where the previous snapshot had them).
  // The pack's id is known once it is full, so the entry gets the pack's number until then.
  Status AddPacked(Record& w, TaskPool& pool) {
    ChunkRef* ref = &w.entry.chunks[0];
    auto prev = previous_.find(ref->id);
    if (prev != previous_.end()) {
      CUTOVER_ASSIGN_OR_RETURN(
          bool have, Present(store_.Names().Pack(prev->second.pack),
                             prev->second.pack_offset + prev->second.length, /*exact=*/false));
      if (have) {
        *ref = prev->second;
        if (opts_.on_confirmed) opts_.on_confirmed(ref->length);
        return Status::Ok();
      }
    }
    auto cur = in_pack_.find(ref->id);
    if (cur == in_pack_.end()) {
      std::string bytes;
      int fd = ::open(FullPath(w).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Status::IoError(ErrnoMessage("cannot open", FullPath(w)));
      Status s = ReadAt(fd, &bytes, 0, ref->length, FullPath(w));
      ::close(fd);
      CUTOVER_RETURN_IF_ERROR(s);
      if (Sha256Of(bytes) != ref->id)
        return Status::IoError("file changed while being read: " + FullPath(w));
      if (pack_.size() + bytes.size() > params_.max_size || in_pack_.size() == kMaxPackMembers) {
        CUTOVER_RETURN_IF_ERROR(FlushPack(pool));
      }
      cur = in_pack_.emplace(ref->id, pack_.size()).first;
      pack_ += bytes;
    }
    ref->packed = true;
    ref->pack = ChunkId{};
    const uint64_t number = pack_ids_.size();  // the number the current pack will get
    std::memcpy(ref->pack.data(), &number, sizeof number);
    ref->pack_offset = cur->second;
    w.flags |= kPendingPack;
    pack_file_bytes_ += ref->length;
    return Status::Ok();
  }

  // Hands the current pack to a worker for upload and numbers it.
  Status FlushPack(TaskPool& pool) {
    if (pack_.empty()) return Status::Ok();
    ChunkId pack_id = Sha256Of(pack_);
    pack_ids_.push_back(pack_id);
    std::string key = store_.Names().Pack(pack_id);
    auto bytes = std::make_shared<std::string>(std::move(pack_));
    pool.Submit([this, key, bytes, file_bytes = pack_file_bytes_]() -> Status {
      CUTOVER_RETURN_IF_ERROR(Upload(key, *bytes));
      CUTOVER_FAILPOINT("push.pack_put.after");
      if (opts_.on_confirmed) opts_.on_confirmed(file_bytes);
      return Status::Ok();
    });
    pack_file_bytes_ = 0;
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
        if (c.packed) previous_[c.id] = c;
      }
    }
    return Status::Ok();
  }

  // Remembers the files read this run in the files cache (once the manifest is published), a
  // few thousand rows per transaction.
  Status RememberFiles(DatasyncState& state) {
    constexpr size_t kBatch = 4096;
    std::vector<DatasyncState::FileRow> rows;
    CUTOVER_RETURN_IF_ERROR(ForEachDone([&](Record& r) -> Status {
      if (r.entry.type != EntryType::kFile || (r.flags & kCached) != 0) return Status::Ok();
      rows.push_back(
          {std::move(r.entry.path), r.key, std::move(r.entry.chunks), std::move(r.fast)});
      if (rows.size() < kBatch) return Status::Ok();
      Status s = state.RememberFiles(url_, rows);
      rows.clear();
      return s;
    }));
    return rows.empty() ? Status::Ok() : state.RememberFiles(url_, rows);
  }

  Manifest manifest_;
  PushResult result_;
  TreeDigest tree_;               // the whole tree, every shard's entries
  bool trust_journal_ = true;     // false: the journal predates the store's last gc
  bool store_was_empty_ = false;  // this push created the store (wrote its config)
  // A file:// store's directory (device, inode), so a store inside SRC is not pushed into itself.
  std::optional<std::pair<uint64_t, uint64_t>> store_dir_;
  // (device, inode) -> the first path of a file with several links, to record the others as
  // hard links to it.
  std::map<std::pair<uint64_t, uint64_t>, std::string> inodes_;

 private:
  std::string src_;
  Store& store_;
  const std::string url_;
  ChunkerParams params_;
  const PushOptions& opts_;
  std::unique_ptr<EntrySpool> walked_, done_;  // the walk's entries; the processed ones
  uint64_t total_bytes_ = 0;
  std::atomic<uint64_t> files_read_{0}, files_cached_{0}, journal_hits_{0};
  std::atomic<uint64_t> uploaded_objects_{0}, uploaded_bytes_{0}, hashed_bytes_{0},
      scanned_bytes_{0};
  std::mutex mu_;
  // Keys seen in the store this run, with the size seen (guarded by mu_).
  static constexpr uint64_t kJournaled = UINT64_MAX;
  std::unordered_map<std::string, uint64_t> confirmed_;
  std::unordered_set<std::string> claimed_;  // keys some worker uploads (guarded by mu_)
  std::unordered_map<ChunkId, ChunkRef, ChunkIdHash> previous_;  // packed chunks of the last one
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> in_pack_;   // chunk -> offset in pack_
  std::string pack_;
  uint64_t pack_file_bytes_ = 0;   // file bytes placed in pack_
  std::vector<ChunkId> pack_ids_;  // by pack number
};

}  // namespace

Result<PushResult> Push(const std::string& src_dir, Store& store, const PushOptions& opts) {
  CUTOVER_RETURN_IF_ERROR(SnapshotKey(opts.name).status());  // a bad name, before anything
  std::string part_key;
  if (opts.shard.has_value()) {
    CUTOVER_ASSIGN_OR_RETURN(part_key, PartKey(opts.name, *opts.shard));
  }
  CUTOVER_RETURN_IF_ERROR(opts.chunker.Validate());
  struct stat st;
  if (::stat(src_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound(src_dir + " is not a directory");  // push and plan alike
  }
  ChunkerParams params = opts.chunker;
  bool created = false;  // this push wrote the store's config: the store was empty
  if (opts.dry_run) {
    auto have = ReadStoreConfig(store);
    if (have.ok()) {
      params = *have;
    } else if (have.status().code() != Code::kNotFound) {
      return have.status();
    }
  } else {
    CUTOVER_ASSIGN_OR_RETURN(params, EnsureStoreConfig(store, opts.chunker, &created));
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
    if (epoch != journal_epoch || created) {  // (a new store at a URL an old one had)
      if (opts.dry_run) {
        p.trust_journal_ = false;
      } else {
        CUTOVER_RETURN_IF_ERROR(opts.state->ResetJournal(store.Url(), epoch));
      }
    }
  }
  // Nothing in a store this push created is there unless this push (or one running beside it,
  // which puts the same bytes under the same key) put it: no existence checks.
  p.store_was_empty_ = created;
  if (std::string url = store.Url(); url.starts_with("file://")) {
    struct stat sst;
    if (::stat(url.substr(7).c_str(), &sst) == 0) {
      p.store_dir_.emplace(static_cast<uint64_t>(sst.st_dev), static_cast<uint64_t>(sst.st_ino));
    }
  }
  // The newest snapshot of the name (and this shard's last part) lend their packed chunks.
  if (Result<SnapshotRef> newest = NewestSnapshot(store, opts.name); newest.ok()) {
    CUTOVER_RETURN_IF_ERROR(p.LoadPrevious(newest->key));
  } else if (newest.status().code() != Code::kNotFound) {
    return newest.status();
  }
  if (!part_key.empty()) CUTOVER_RETURN_IF_ERROR(p.LoadPrevious(part_key));
  p.manifest_.name = opts.name;
  p.manifest_.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();  // to the nanosecond, not the second
  p.manifest_.chunker = params;
  CUTOVER_RETURN_IF_ERROR(p.Init());
  CUTOVER_RETURN_IF_ERROR(p.Walk(""));
  CUTOVER_RETURN_IF_ERROR(p.Run());
  if (opts.shard.has_value()) {
    p.manifest_.shard =
        ShardInfo{opts.shard->index, opts.shard->count, p.tree_.entries(), p.tree_.Final()};
  }
  if (opts.dry_run) return p.result_;
  {
    CUTOVER_ASSIGN_OR_RETURN(std::string encoded, p.Encode());
    CUTOVER_FAILPOINT_RETURN("push.manifest_put.before");
    // A new key for every push: no snapshot is ever replaced, so pushes at once all land.
    std::string publish_key = part_key;
    if (publish_key.empty()) {
      p.result_.snapshot_id = NewSnapshotId();
      CUTOVER_ASSIGN_OR_RETURN(publish_key,
                               SeriesKey(opts.name, p.manifest_.created_ns, p.result_.snapshot_id));
    }
    CUTOVER_RETURN_IF_ERROR(lock->Check());  // a gc may have run once the lock lapsed
    CUTOVER_RETURN_IF_ERROR(store.Put(publish_key, encoded));
  }  // the encoded manifest is freed before the files cache is written
  if (opts.state != nullptr) {
    CUTOVER_RETURN_IF_ERROR(p.RememberFiles(*opts.state));
  }
  CUTOVER_RETURN_IF_ERROR(lock->Release());
  return p.result_;
}

}  // namespace cutover
