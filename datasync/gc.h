// gc: mark and sweep of the chunk and pack objects no snapshot references.
//
// Rules:
//   - mark: every manifest under snap/, snapshots/ (written before snapshot ids) and parts/
//     (shard parts not yet merged) is read and decoded; one that cannot be read or decoded stops
//     gc before anything is deleted (what it references is unknown);
//   - sweep: objects under chunks/ and packs/ that no manifest names are deleted by `jobs`
//     workers; a pack is kept whole while any snapshot references a chunk inside it; objects
//     there whose key is not a chunk or pack key (not datasync's) are left and counted;
//   - safe against a concurrent push: gc runs under a "gc" store lock (datasync/store_lock.h),
//     which fails while any live push lock exists, and makes pushes that start later fail;
//     the grace period is the lock's stale_after: a push whose lock was refreshed within it
//     keeps gc away, and a push that lost its lock refuses to publish;
//   - before the first delete gc writes a new epoch to the object gc-epoch; a push that sees an
//     epoch other than its journal's drops the journal (it may name deleted chunks) and asks
//     the store again;
//   - stale locks (not refreshed within the grace period, or whose holder on this host is gone:
//     datasync/store_lock.h) are removed, and so are the temporaries killed Puts left in the
//     store (Store::RemoveLeftovers) that are older than the grace period;
//   - dry_run: takes no lock and deletes nothing; the result says what would be deleted.
//
// Thread-safety: one CollectGarbage per store at a time is enforced by the lock.
#ifndef CUTOVER_DATASYNC_GC_H_
#define CUTOVER_DATASYNC_GC_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/store.h"
#include "datasync/store_lock.h"

namespace cutover {

inline constexpr char kGcEpochKey[] = "gc-epoch";

struct GcOptions {
  int jobs = 8;          // parallel deletes
  bool dry_run = false;  // say what would go; change nothing
  LockOptions lock;      // stale_after is the grace period
  // Called from worker threads after each delete, with the object's size.
  std::function<void(uint64_t bytes)> on_deleted;
};

struct GcResult {
  uint64_t snapshots = 0;
  uint64_t referenced_objects = 0;    // chunk and pack objects some snapshot names
  uint64_t referenced_bytes = 0;      // their sizes as listed
  uint64_t unreferenced_objects = 0;  // deleted (or, in a dry run, to delete)
  uint64_t unreferenced_bytes = 0;
  uint64_t missing_objects = 0;  // named by a snapshot but not listed (the store lost them)
  uint64_t foreign_objects = 0;  // under chunks/ or packs/ but not datasync keys: left alone
  uint64_t stale_locks_removed = 0;
  uint64_t leftovers_removed = 0;  // temporaries of killed Puts older than the grace period
  std::string epoch;               // the new gc epoch; empty when nothing was deleted
};

Result<GcResult> CollectGarbage(Store& store, const GcOptions& options);

// The store's current gc epoch ("" when no gc ever deleted anything).
Result<std::string> ReadGcEpoch(Store& store);

// The result of a gc (`opts` as run on `store_url`) as the cutover.datasync-gc/1 document and
// as the lines `datasync gc` prints (a dry run's would_delete_* in place of deleted_*).
nlohmann::json GcResultToJson(const GcResult& r, const GcOptions& opts, std::string_view store_url);
std::string RenderGcResult(const GcResult& r, const GcOptions& opts, std::string_view store_url);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_GC_H_
