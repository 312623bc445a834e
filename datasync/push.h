// Push: turns a directory into a snapshot in a store, with `jobs` worker threads calling the
// (thread-safe) Store, a files cache and a resume journal in the local state (datasync/state.h).
//
// Rules:
//   - every regular file is chunked (FastCDC) and each chunk hashed with SHA-256;
//   - a chunk is uploaded only when the store lacks it whole: a Head whose size is the chunk's
//     (a truncated object or a partial body is put again); a store whose config this push wrote
//     held nothing, so it is not asked, and the journal of an older store at the same URL is
//     dropped;
//   - files smaller than the chunker's min size are packed together into pack objects of at most
//     max size, so a tree of small files costs one PUT per pack, not per file; a small file whose
//     bytes the previous snapshot of the same name already holds in a pack reuses that place;
//   - files are read once, chunked, hashed and their chunks uploaded by `jobs` workers, each
//     holding at most one chunk (<= max size) and one read (4 MiB) in memory; small files are
//     then packed in walk order (so a resumed push cuts the same packs) and the packs uploaded
//     by the same workers;
//   - with a state: a file whose stat key (dev, inode, size, mtime, ctime) matches the files
//     cache is not read; a chunk or pack the journal says this store holds is not asked for; every
//     object confirmed stored is journaled at once, so after kill -9 the same push re-sends at
//     most what was in flight (jobs x max chunk size);
//   - dry_run: nothing is written to the store or the state; the result says what would be sent;
//   - the manifest is published last, and only after every chunk and pack it names is confirmed
//     present whole (this run's size-checked Head or successful Put, or a journal entry that no
//     verify or pull has disproved since: they drop what they find missing or corrupt);
//   - with a state, a changed file's chunks that have the fast digest of the last push's chunk
//     of the same length are not SHA-256'd again, and where such a chunk starts at the offset
//     the old one started at, it is not scanned for its cut either (datasync/chunker.h
//     SkipChunk): an in-place edit costs a read of the file and a scan of the chunks it touched;
//   - a push holds a "push" store lock (datasync/store_lock.h) from before it looks at the store
//     until the manifest is published, so gc deletes nothing it relies on; a push whose lock
//     lapsed does not publish; a journal older than the store's gc epoch is dropped first;
//   - with a shard I/N: every entry of the tree is walked (stat only) and digested, but only
//     the shard's own entries are read, uploaded and listed in the part it publishes; the counts
//     in the result are the shard's;
//   - special files (sockets, FIFOs, devices), and a file:// store's own directory when it lies
//     inside the tree, are skipped and listed in the result; an unreadable
//     file fails the push; a file whose size, mtime or ctime after it was read differ from what
//     the walk saw fails the push, naming it (never a silently wrong snapshot; a same-size
//     rewrite changes ctime); a small file's bytes are checked against its hash when packed.
//
// Thread-safety: one Push at a time per destination snapshot name.
#ifndef CUTOVER_DATASYNC_PUSH_H_
#define CUTOVER_DATASYNC_PUSH_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/shard.h"
#include "datasync/store.h"
#include "datasync/store_lock.h"

namespace cutover {

class DatasyncState;

struct PushOptions {
  std::string name;                // snapshot name (a store key component)
  ChunkerParams chunker;           // used for a new store; must match an existing store's config
  int jobs = 8;                    // worker threads
  DatasyncState* state = nullptr;  // files cache + journal; null: none
  bool dry_run = false;            // plan only: no store or state writes
  LockOptions lock;                // the push lock gc respects (datasync/store_lock.h)
  // Set: push only this shard's share of the tree, as a part for `datasync merge`
  // (datasync/shard.h), published at parts/<name>/<I>-of-<N> instead of snapshots/<name>.
  std::optional<ShardSpec> shard;
  // Called from worker threads with file bytes whose chunks are confirmed in the store.
  std::function<void(uint64_t bytes)> on_confirmed;
  // Called once the tree is listed, with the snapshot's total file bytes.
  std::function<void(uint64_t total)> on_total;
};

struct PushResult {
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;                // file bytes in the snapshot
  uint64_t chunks = 0;               // chunk references in the manifest
  uint64_t uploaded_objects = 0;     // chunk and pack objects PUT
  uint64_t uploaded_bytes = 0;       // their bytes, manifest excluded
  uint64_t files_read = 0;           // files read from disk (not taken from the files cache)
  uint64_t files_cached = 0;         // files whose chunk list came from the files cache
  uint64_t hashed_bytes = 0;         // file bytes SHA-256'd (the rest: known by fast digest)
  uint64_t scanned_bytes = 0;        // file bytes the chunker looked through for cut points (the
                                     // rest: chunks known to end where they ended last time)
  uint64_t journal_hits = 0;         // objects skipped because the journal confirmed them
  std::vector<std::string> skipped;  // "path (socket)" for each special file left out
  std::string snapshot_id;           // the new snapshot's id (empty for a part or a dry run)
};

// Pushes the tree at `src_dir` to `store` as snapshot `opts.name`.
// NotFound when src_dir does not exist; IoError on read failures; FailedPrecondition on a
// store config mismatch.
Result<PushResult> Push(const std::string& src_dir, Store& store, const PushOptions& opts);

// The result of a push (`opts` as pushed to the store at `store_url`) as the
// cutover.datasync-push/1 document (a dry run's would_upload_* in place of uploaded_*), and as the
// lines `datasync push` prints.
nlohmann::json PushResultToJson(const PushResult& r, const PushOptions& opts,
                                std::string_view store_url);
std::string RenderPushResult(const PushResult& r, const PushOptions& opts,
                             std::string_view store_url);

// A dry-run push of `src` as `datasync plan` reports it (cutover.datasync-plan/1): what would be
// sent and how long at `bandwidth` bytes/s.
nlohmann::json PlanToJson(const PushResult& r, std::string_view src, std::string_view store_url,
                          double bandwidth);
std::string RenderPlan(const PushResult& r, std::string_view src, std::string_view store_url,
                       double bandwidth);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_PUSH_H_
