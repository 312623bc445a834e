#include "datasync/push.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>

#include "core/failpoint.h"
#include "core/file_system.h"
#include "core/posix_io.h"
#include "core/units.h"
#include "datasync/chunker.h"
#include "datasync/entry_spool.h"
#include "datasync/file_chunker.h"
#include "datasync/gc.h"
#include "datasync/manifest.h"
#include "datasync/object_writer.h"
#include "datasync/packer.h"
#include "datasync/snapshots.h"
#include "datasync/state.h"
#include "datasync/store_config.h"
#include "datasync/store_lock.h"
#include "datasync/task_pool.h"
#include "datasync/tree_walk.h"

namespace cutover {
namespace {

// The walk's entries wait in a temporary file (datasync/entry_spool.h); this many are in memory
// at a time while their files are chunked and uploaded, and the processed ones wait in a second
// file until the manifest is encoded from it.
constexpr size_t kWindow = 4096;

using Record = EntrySpool::Record;

// Bits of Record::flags.
constexpr uint32_t kSmall = 1;        // one chunk below min size: goes into a pack
constexpr uint32_t kCached = 2;       // chunk list taken from the files cache
constexpr uint32_t kPendingPack = 4;  // chunks[0].pack holds the pack's number, not yet its id

// Reads exactly `length` bytes of the file at `path` from its start.
Result<std::string> ReadPrefix(const std::string& path, uint64_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(ErrnoMessage("cannot open", path));
  std::string out(length, '\0');
  const ssize_t got = PreadFull(fd, out.data(), length, 0);
  ::close(fd);
  if (got < 0) return Status::IoError(ErrnoMessage("cannot read", path));
  if (static_cast<uint64_t>(got) < length) {
    return Status::IoError("file changed while being read (shrank): " + path);
  }
  return out;
}

// The stages of one push over its two entry lists: the walk fills the first (datasync/
// tree_walk.h); Run reads it a window at a time, has the workers chunk each file
// (datasync/file_chunker.h) and store its chunks (datasync/object_writer.h), packs the small
// files in walk order (datasync/packer.h) and moves each processed entry to the second list,
// from which the manifest is encoded and the files cache remembered.
class Pusher {
 public:
  Pusher(const std::string& src, Store& store, const ChunkerParams& params, const PushOptions& opts,
         ObjectWriterOptions writer_options)
      : src_(src),
        store_(store),
        url_(store.Url()),
        params_(params),
        opts_(opts),
        store_was_empty_(writer_options.store_was_empty),
        writer_(store, writer_options),
        packer_(store, writer_, params, opts.on_confirmed) {}

  Packer& packer() { return packer_; }
  PushResult& result() { return result_; }

  // Lists the tree into the first entry list; *tree gets the digest of the whole tree (every
  // shard's entries) as a part records it.
  Status Walk(const TreeWalkOptions& options, ShardInfo* tree) {
    CUTOVER_ASSIGN_OR_RETURN(walked_, EntrySpool::Create());
    CUTOVER_ASSIGN_OR_RETURN(done_, EntrySpool::Create());
    std::error_code ec;
    const std::string root = std::filesystem::absolute(src_, ec).string();
    if (ec) return Status::IoError("cannot resolve " + src_ + ": " + ec.message());
    RealFileSystem fs("/");
    TreeWalk walk(fs, root, options);
    CUTOVER_RETURN_IF_ERROR(walk.Run([this](Record r) { return walked_->Write(r); }));
    const TreeWalkCounts& c = walk.counts();
    result_.files = c.files;
    result_.dirs = c.dirs;
    result_.symlinks = c.symlinks;
    result_.skipped = c.skipped;
    total_bytes_ = c.file_bytes;
    tree->tree_entries = walk.tree().entries();
    tree->tree_digest = walk.tree().Final();
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
          const std::string path = FullPath(r);
          bool pending = false;
          CUTOVER_RETURN_IF_ERROR(packer_.Place(
              &r.entry.chunks[0], path,
              [&]() { return ReadPrefix(path, r.entry.chunks[0].length); }, pool, &pending));
          if (pending) r.flags |= kPendingPack;
          if (pool.failed()) break;
        }
        result_.bytes += r.entry.size;
        result_.chunks += r.entry.chunks.size();
        CUTOVER_RETURN_IF_ERROR(done_->Write(r));
      }
    }
    CUTOVER_RETURN_IF_ERROR(packer_.Flush(pool));
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
    walked_.reset();  // its temporary file goes
    result_.files_read = files_read_.load();
    result_.files_cached = files_cached_.load();
    result_.journal_hits = writer_.journal_hits();
    result_.uploaded_objects = writer_.uploaded_objects();
    result_.uploaded_bytes = writer_.uploaded_bytes();
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
      if ((r.flags & kPendingPack) != 0)
        CUTOVER_RETURN_IF_ERROR(packer_.Resolve(&r.entry.chunks[0]));
      CUTOVER_RETURN_IF_ERROR(fn(r));
    }
  }

  // The manifest's compressed JSON, encoded from the processed entries.
  Result<std::string> Encode(const Manifest& header) {
    CUTOVER_ASSIGN_OR_RETURN(auto writer, ManifestWriter::Begin(header));
    CUTOVER_RETURN_IF_ERROR(ForEachDone([&](const Record& r) { return writer->Add(r.entry); }));
    return writer->Finish();
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

 private:
  std::string FullPath(const Record& r) const { return src_ + "/" + r.entry.path; }

  // The files cache's chunk list of an unchanged file whose chunks the store still holds;
  // nullopt otherwise, with what the last push cut of the file in *previous.
  Result<std::optional<std::vector<ChunkRef>>> FromCache(const Record& w,
                                                         PreviousChunks* previous) {
    CUTOVER_ASSIGN_OR_RETURN(auto cached, opts_.state->LookupFile(url_, w.entry.path, w.key));
    if (cached.has_value() && cached->unchanged) {
      uint64_t size = 0;
      bool present = true;
      for (const ChunkRef& c : cached->chunks) {
        size += c.length;
        CUTOVER_ASSIGN_OR_RETURN(
            bool have, c.packed
                           ? writer_.Present(store_.Names().Pack(c.pack), c.pack_offset + c.length,
                                             /*exact=*/false)
                           : writer_.Present(store_.Names().Chunk(c.id), c.length, /*exact=*/true));
        if (!have) {
          present = false;
          break;
        }
      }
      if (present && size == w.key.size) {
        return std::optional<std::vector<ChunkRef>>(std::move(cached->chunks));
      }
    }
    if (cached.has_value() && cached->fast.size() == cached->chunks.size()) {
      uint64_t offset = 0;
      for (size_t i = 0; i < cached->chunks.size(); ++i) {
        const ChunkRef& c = cached->chunks[i];
        previous->by_digest.emplace(cached->fast[i], std::make_pair(c.length, c.id));
        // (Not in a store this push created: the cache may be of an older store at its URL, cut
        // with other chunker parameters.)
        if (!store_was_empty_ && !c.packed && c.length > 0 && c.length <= params_.max_size) {
          previous->by_offset.emplace(offset, PreviousChunks::At{c.length, cached->fast[i], c.id,
                                                                 i + 1 == cached->chunks.size()});
        }
        offset += c.length;
      }
    }
    return std::optional<std::vector<ChunkRef>>();
  }

  // Worker: the chunk list of one file, from the files cache or by reading it; stores its chunks
  // (a small file's one chunk is left for the packer: kSmall).
  Status ProcessFile(Record& w) {
    Entry* e = &w.entry;
    PreviousChunks previous;
    if (opts_.state != nullptr) {
      CUTOVER_ASSIGN_OR_RETURN(std::optional<std::vector<ChunkRef>> cached,
                               FromCache(w, &previous));
      if (cached.has_value()) {
        e->chunks = std::move(*cached);
        e->size = w.key.size;
        w.flags |= kCached;
        ++files_cached_;
        if (opts_.on_confirmed) opts_.on_confirmed(e->size);
        return Status::Ok();
      }
    }
    ++files_read_;
    const std::string path = FullPath(w);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IoError(ErrnoMessage("cannot open", path));
    Result<FileChunkStats> stats =
        FileChunker(params_).Run(fd, path, w.key, previous, [&](const CutChunk& c) -> Status {
          e->chunks.push_back(ChunkRef{c.id, c.length, false, {}, 0});
          e->size += c.length;
          w.fast.push_back(c.fast);
          if (c.small_file) {
            w.flags |= kSmall;
            return Status::Ok();
          }
          CUTOVER_RETURN_IF_ERROR(writer_.Upload(store_.Names().Chunk(c.id), c.bytes));
          if (opts_.on_confirmed) opts_.on_confirmed(c.length);
          return Status::Ok();
        });
    ::close(fd);
    if (!stats.ok()) return stats.status();
    hashed_bytes_ += stats->hashed_bytes;
    scanned_bytes_ += stats->scanned_bytes;
    return Status::Ok();
  }

  std::string src_;
  Store& store_;
  const std::string url_;
  ChunkerParams params_;
  const PushOptions& opts_;
  const bool store_was_empty_;
  ObjectWriter writer_;
  Packer packer_;
  PushResult result_;
  std::unique_ptr<EntrySpool> walked_, done_;  // the walk's entries; the processed ones
  uint64_t total_bytes_ = 0;
  std::atomic<uint64_t> files_read_{0}, files_cached_{0}, hashed_bytes_{0}, scanned_bytes_{0};
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
  // Nothing in a store this push created is there unless this push (or one running beside it,
  // which puts the same bytes under the same key) put it: no existence checks.
  ObjectWriterOptions writer_options{
      .state = opts.state, .store_was_empty = created, .dry_run = opts.dry_run};
  if (opts.state != nullptr) {
    // Read under the lock, so no gc runs between this and the publish.
    CUTOVER_ASSIGN_OR_RETURN(std::string epoch, ReadGcEpoch(store));
    CUTOVER_ASSIGN_OR_RETURN(std::string journal_epoch, opts.state->JournalEpoch(store.Url()));
    if (epoch != journal_epoch || created) {  // (a new store at a URL an old one had)
      if (opts.dry_run) {
        writer_options.trust_journal = false;
      } else {
        CUTOVER_RETURN_IF_ERROR(opts.state->ResetJournal(store.Url(), epoch));
      }
    }
  }
  Pusher p(src_dir, store, params, opts, writer_options);
  TreeWalkOptions walk_options{.shard = opts.shard};
  if (std::string url = store.Url(); url.starts_with("file://")) {
    struct stat sst;
    if (::stat(url.substr(7).c_str(), &sst) == 0) {
      walk_options.skip_dir.emplace(static_cast<uint64_t>(sst.st_dev),
                                    static_cast<uint64_t>(sst.st_ino));
    }
  }
  // The newest snapshot of the name (and this shard's last part) lend their packed chunks.
  if (Result<SnapshotRef> newest = NewestSnapshot(store, opts.name); newest.ok()) {
    CUTOVER_RETURN_IF_ERROR(p.packer().LoadPrevious(newest->key));
  } else if (newest.status().code() != Code::kNotFound) {
    return newest.status();
  }
  if (!part_key.empty()) CUTOVER_RETURN_IF_ERROR(p.packer().LoadPrevious(part_key));
  Manifest manifest;
  manifest.name = opts.name;
  manifest.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();  // to the nanosecond, not the second
  manifest.chunker = params;
  ShardInfo tree;
  CUTOVER_RETURN_IF_ERROR(p.Walk(walk_options, &tree));
  CUTOVER_RETURN_IF_ERROR(p.Run());
  if (opts.shard.has_value()) {
    manifest.shard =
        ShardInfo{opts.shard->index, opts.shard->count, tree.tree_entries, tree.tree_digest};
  }
  if (opts.dry_run) return p.result();
  {
    CUTOVER_ASSIGN_OR_RETURN(std::string encoded, p.Encode(manifest));
    CUTOVER_FAILPOINT_RETURN("push.manifest_put.before");
    // A new key for every push: no snapshot is ever replaced, so pushes at once all land.
    std::string publish_key = part_key;
    if (publish_key.empty()) {
      p.result().snapshot_id = NewSnapshotId();
      CUTOVER_ASSIGN_OR_RETURN(publish_key,
                               SeriesKey(opts.name, manifest.created_ns, p.result().snapshot_id));
    }
    CUTOVER_RETURN_IF_ERROR(lock->Check());  // a gc may have run once the lock lapsed
    CUTOVER_RETURN_IF_ERROR(store.Put(publish_key, encoded));
  }  // the encoded manifest is freed before the files cache is written
  if (opts.state != nullptr) {
    CUTOVER_RETURN_IF_ERROR(p.RememberFiles(*opts.state));
  }
  CUTOVER_RETURN_IF_ERROR(lock->Release());
  return p.result();
}

namespace {

// "snapshot NAME", or "part I/N of snapshot NAME" for a shard.
std::string PushedWhat(const PushOptions& o) {
  return o.shard ? "part " + std::to_string(o.shard->index) + "/" + std::to_string(o.shard->count) +
                       " of snapshot " + o.name
                 : "snapshot " + o.name;
}

}  // namespace

nlohmann::json PushResultToJson(const PushResult& r, const PushOptions& opts,
                                std::string_view store_url) {
  nlohmann::json doc = {{"schema", "cutover.datasync-push/1"},
                        {"snapshot", opts.name},
                        {"id", r.snapshot_id},
                        {"store", store_url},
                        {"files", r.files},
                        {"dirs", r.dirs},
                        {"symlinks", r.symlinks},
                        {"bytes", r.bytes},
                        {"chunks", r.chunks},
                        {"uploaded_objects", r.uploaded_objects},
                        {"uploaded_bytes", r.uploaded_bytes},
                        {"files_read", r.files_read},
                        {"files_cached", r.files_cached},
                        {"hashed_bytes", r.hashed_bytes},
                        {"scanned_bytes", r.scanned_bytes},
                        {"skipped", r.skipped}};
  if (opts.shard) doc["shard"] = {{"index", opts.shard->index}, {"count", opts.shard->count}};
  if (opts.dry_run) {
    // What Push counted as uploaded is what a real push would upload.
    doc["dry_run"] = true;
    doc["would_upload_objects"] = std::exchange(doc["uploaded_objects"], 0);
    doc["would_upload_bytes"] = std::exchange(doc["uploaded_bytes"], 0);
  }
  return doc;
}

std::string RenderPushResult(const PushResult& r, const PushOptions& opts,
                             std::string_view store_url) {
  const std::string what = PushedWhat(opts), url(store_url);
  if (opts.dry_run) {
    return "dry run: " + what + " of " + std::to_string(r.files) + " files (" +
           FormatBytes(r.bytes) + ") would upload " + std::to_string(r.uploaded_objects) +
           " objects (" + FormatBytes(r.uploaded_bytes) + ") to " + url + "; nothing was written\n";
  }
  std::string table = "pushed " + what + (r.snapshot_id.empty() ? "" : " " + r.snapshot_id) +
                      " to " + url + ": " + std::to_string(r.files) + " files, " +
                      std::to_string(r.dirs) + " dirs, " + std::to_string(r.symlinks) +
                      " symlinks, " + std::to_string(r.bytes) + " bytes; uploaded " +
                      std::to_string(r.uploaded_objects) + " objects (" +
                      std::to_string(r.uploaded_bytes) + " bytes)\n";
  for (const std::string& s : r.skipped) table += "skipped " + s + "\n";
  if (opts.shard) {
    table += "when every part of " + std::to_string(opts.shard->count) +
             " is pushed, publish them: cutover datasync merge " + url + " --name " + opts.name +
             "\n";
  }
  return table;
}

nlohmann::json PlanToJson(const PushResult& r, std::string_view src, std::string_view store_url,
                          double bandwidth) {
  return {{"schema", "cutover.datasync-plan/1"},
          {"source", src},
          {"store", store_url},
          {"files", r.files},
          {"bytes", r.bytes},
          {"chunks", r.chunks},
          {"send_objects", r.uploaded_objects},
          {"send_bytes", r.uploaded_bytes},
          {"dedup_bytes", r.bytes > r.uploaded_bytes ? r.bytes - r.uploaded_bytes : 0},
          {"bandwidth_bytes_per_s", bandwidth},
          {"estimated_seconds", static_cast<double>(r.uploaded_bytes) / bandwidth}};
}

std::string RenderPlan(const PushResult& r, std::string_view src, std::string_view store_url,
                       double bandwidth) {
  const double seconds = static_cast<double>(r.uploaded_bytes) / bandwidth;
  return "plan " + std::string(src) + " -> " + std::string(store_url) + ": " +
         std::to_string(r.files) + " files, " + FormatBytes(r.bytes) + "; would send " +
         std::to_string(r.uploaded_objects) + " objects, " + FormatBytes(r.uploaded_bytes) +
         ", about " +
         FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000))) + " at " +
         FormatRate(bandwidth) + "\n";
}

}  // namespace cutover
