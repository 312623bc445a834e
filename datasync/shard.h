// Sharded pushes: N machines push one dataset together, each its share of the entries, and one
// merge publishes their parts as one snapshot.
//
// Shard I/N (1 <= I <= N) owns the entries whose path hashes to it: the first 8 bytes of the
// path's SHA-256, big-endian, mod N, plus 1. An entry's shard depends on its path alone, so
// machines that see the same tree agree without talking to each other. Every shard still walks
// the whole tree (metadata only: no file outside its share is read) and records how many entries
// it saw and a digest of their paths and types (ShardInfo), so a merge of parts that saw
// different trees (the source changed between the pushes, or another directory was pushed) is
// refused instead of publishing a snapshot that silently lacks files. The split balances entry
// counts, not bytes: one file much larger than the rest is one shard's work.
//
// A part is a manifest with ShardInfo at parts/<name>/<I>-of-<N>. gc keeps what parts reference
// as it keeps what snapshots reference. MergeParts reads every part of <name> and checks they are
// exactly 1..N of one N, saw the same tree, and hold only their own share; it then publishes
// snapshots/<name> with their entries in walk order (what an unsharded push of the tree would
// list) under a push lock, and removes the parts.
//
// Thread-safety: pure functions and values, except MergeParts, which calls the (thread-safe)
// Store from the calling thread and its lock's refresher.
#ifndef CUTOVER_DATASYNC_SHARD_H_
#define CUTOVER_DATASYNC_SHARD_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/hash.h"
#include "datasync/manifest.h"
#include "datasync/store.h"
#include "datasync/store_lock.h"

namespace cutover {

inline constexpr char kPartsPrefix[] = "parts/";

struct ShardSpec {
  uint32_t index = 1;  // 1..count
  uint32_t count = 1;  // 1..kMaxShards
};

// "2/4" -> {2, 4}. InvalidArgument "--shard: expected I/N with 1 <= I <= N <= 4096 (e.g. 2/4),
// got \"0/4\"" for anything else.
Result<ShardSpec> ParseShard(std::string_view text);

// True when `path` belongs to `shard`.
bool InShard(std::string_view path, const ShardSpec& shard);

// "parts/<name>/<I>-of-<N>"; InvalidArgument for a bad snapshot name (as SnapshotKey).
Result<std::string> PartKey(std::string_view name, const ShardSpec& shard);

// Parses the last two components of a part key: "parts/<name>/<I>-of-<N>" -> name and spec.
// False for any other key.
bool ParsePartKey(std::string_view key, std::string* name, ShardSpec* shard);

// The digest of a whole tree as ShardInfo records it: every entry's path and type, in walk order.
class TreeDigest {
 public:
  void Add(std::string_view path, EntryType type);
  uint64_t entries() const { return entries_; }
  ChunkId Final() { return stream_.Final(); }

 private:
  Sha256Stream stream_;
  uint64_t entries_ = 0;
};

// Walk order: what a depth-first walk with each directory's names sorted bytewise yields (a
// directory right before what it contains). Strict weak order on '/'-separated paths.
bool WalkOrderLess(std::string_view a, std::string_view b);

struct MergeOptions {
  bool keep_parts = false;  // leave the parts in the store after publishing
  bool dry_run = false;     // check and count only: no lock, nothing written or removed
  LockOptions lock;         // the push lock gc respects
};

struct MergeResult {
  uint32_t parts = 0;
  uint64_t files = 0, dirs = 0, symlinks = 0, bytes = 0, chunks = 0;
  uint64_t parts_removed = 0;
  std::vector<std::string> parts_left;  // "key: why" for each part that could not be removed
  std::string snapshot_id;              // the merged snapshot's id (empty for a dry run)
};

// Publishes the parts of snapshot `name` as a new snapshot of that name's series
// (datasync/snapshots.h), with the time of the earliest part. NotFound when the store holds no part
// of it; FailedPrecondition naming the problem when parts are missing, of different shard counts,
// or saw different trees; Corruption when a part cannot be decoded or holds entries outside its
// share.
Result<MergeResult> MergeParts(Store& store, std::string_view name, const MergeOptions& options);

// The result of merging the parts of `name` in `store_url` as the cutover.datasync-merge/1
// document and as the lines `datasync merge` prints.
nlohmann::json MergeResultToJson(const MergeResult& r, const MergeOptions& opts,
                                 std::string_view name, std::string_view store_url);
std::string RenderMergeResult(const MergeResult& r, const MergeOptions& opts, std::string_view name,
                              std::string_view store_url);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_SHARD_H_
