#include "datasync/gc.h"

#include <atomic>
#include <unordered_map>
#include <utility>

#include "core/random.h"
#include "core/units.h"
#include "datasync/manifest.h"
#include "datasync/shard.h"
#include "datasync/snapshots.h"
#include "datasync/task_pool.h"

namespace cutover {
namespace {

// True when `key` is exactly ChunkKey or PackKey of the id its last component spells.
bool IsObjectKey(std::string_view key, bool pack) {
  size_t slash = key.rfind('/');
  if (slash == std::string_view::npos) return false;
  Result<ChunkId> id = ParseChunkId(key.substr(slash + 1));
  if (!id.ok()) return false;
  return key == (pack ? PackKey(*id) : ChunkKey(*id));
}

int64_t NowNs(const LockOptions& o) {
  if (o.now_ns) return o.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Result<std::string> ReadGcEpoch(Store& store) {
  Result<std::string> got = store.Get(kGcEpochKey);
  if (!got.ok() && got.status().code() == Code::kNotFound) return std::string();
  return got;
}

Result<GcResult> CollectGarbage(Store& store, const GcOptions& options) {
  if (options.jobs < 1) return Status::InvalidArgument("gc needs at least one job");
  std::unique_ptr<StoreLock> lock;
  if (!options.dry_run) {
    CUTOVER_ASSIGN_OR_RETURN(lock, StoreLock::Acquire(store, "gc", options.lock));
  }
  GcResult out;

  // Mark. The value says whether the sweep listed the object.
  std::unordered_map<std::string, bool> referenced;
  std::vector<std::string> snapshots;
  for (const char* prefix : {kSeriesPrefix, "snapshots/", kPartsPrefix}) {  // parts await a merge
    CUTOVER_RETURN_IF_ERROR(store.List(prefix, [&](std::string_view key, uint64_t) {
      snapshots.emplace_back(key);
      return Status::Ok();
    }));
  }
  for (const std::string& key : snapshots) {
    Result<std::string> bytes = store.Get(key);
    if (!bytes.ok() && bytes.status().code() == Code::kNotFound) continue;  // removed meanwhile
    if (!bytes.ok()) {
      return Status(bytes.status().code(), "gc: cannot read " + key + ": " +
                                               bytes.status().message() + "; nothing deleted");
    }
    Result<Manifest> m = DecodeManifest(*bytes);
    if (!m.ok()) {
      return Status::Corruption("gc: snapshot " + key + " cannot be decoded (" +
                                m.status().message() +
                                "); nothing deleted, since what it references is unknown");
    }
    ++out.snapshots;
    for (const Entry& e : m->entries) {
      for (const ChunkRef& c : e.chunks) {
        referenced.emplace(c.packed ? store.Names().Pack(c.pack) : store.Names().Chunk(c.id),
                           false);
      }
    }
  }

  // Sweep: list, then delete (a listing is never changed under its own feet).
  std::vector<std::pair<std::string, uint64_t>> doomed;
  for (const char* prefix : {"chunks/", "packs/"}) {
    const bool pack = prefix[0] == 'p';
    CUTOVER_RETURN_IF_ERROR(store.List(prefix, [&](std::string_view key, uint64_t size) {
      auto it = referenced.find(std::string(key));
      if (it != referenced.end()) {
        if (!it->second) {
          it->second = true;
          ++out.referenced_objects;
          out.referenced_bytes += size;
        }
      } else if (IsObjectKey(key, pack)) {
        doomed.emplace_back(key, size);
        out.unreferenced_bytes += size;
      } else {
        ++out.foreign_objects;
      }
      return Status::Ok();
    }));
  }
  out.unreferenced_objects = doomed.size();
  out.missing_objects = referenced.size() - out.referenced_objects;

  CUTOVER_ASSIGN_OR_RETURN(std::vector<LockInfo> locks, ListLocks(store));
  std::vector<std::string> stale;
  const int64_t now = NowNs(options.lock);
  for (const LockInfo& l : locks) {
    if (lock != nullptr && l.key == lock->key()) continue;
    if (LockIsStale(l, now, options.lock.stale_after, nullptr)) stale.push_back(l.key);
  }
  if (options.dry_run) {
    out.stale_locks_removed = 0;
    return out;
  }

  if (!doomed.empty()) {
    // The epoch goes first: if gc dies after deleting, pushes still learn their journal is old.
    out.epoch = RandomHex(16);
    CUTOVER_RETURN_IF_ERROR(lock->Check());
    CUTOVER_RETURN_IF_ERROR(store.Put(kGcEpochKey, out.epoch));
    TaskPool pool(options.jobs, static_cast<size_t>(options.jobs) * 4);
    for (const auto& [key, size] : doomed) {
      pool.Submit([&, key = key, size = size]() -> Status {
        CUTOVER_RETURN_IF_ERROR(lock->Check());  // never delete once pushes may ignore us
        CUTOVER_RETURN_IF_ERROR(store.Delete(key));
        if (options.on_deleted) options.on_deleted(size);
        return Status::Ok();
      });
      if (pool.failed()) break;
    }
    CUTOVER_RETURN_IF_ERROR(pool.Wait());
  }
  for (const std::string& key : stale) {
    CUTOVER_RETURN_IF_ERROR(store.Delete(key));
    ++out.stale_locks_removed;
  }
  CUTOVER_ASSIGN_OR_RETURN(out.leftovers_removed,
                           store.RemoveLeftovers(now - options.lock.stale_after.count()));
  CUTOVER_RETURN_IF_ERROR(lock->Release());
  return out;
}

nlohmann::json GcResultToJson(const GcResult& r, const GcOptions& opts,
                              std::string_view store_url) {
  nlohmann::json doc = {
      {"schema", "cutover.datasync-gc/1"},
      {"store", store_url},
      {"dry_run", opts.dry_run},
      {"grace_s",
       std::chrono::duration_cast<std::chrono::milliseconds>(opts.lock.stale_after).count() / 1000},
      {"snapshots", r.snapshots},
      {"referenced_objects", r.referenced_objects},
      {"referenced_bytes", r.referenced_bytes},
      {"missing_objects", r.missing_objects},
      {"foreign_objects", r.foreign_objects},
      {"stale_locks_removed", r.stale_locks_removed},
      {"leftovers_removed", r.leftovers_removed}};
  doc[opts.dry_run ? "would_delete_objects" : "deleted_objects"] = r.unreferenced_objects;
  doc[opts.dry_run ? "would_delete_bytes" : "deleted_bytes"] = r.unreferenced_bytes;
  return doc;
}

std::string RenderGcResult(const GcResult& r, const GcOptions& opts, std::string_view store_url) {
  std::string table = std::string(opts.dry_run ? "dry run: gc would delete " : "gc deleted ") +
                      std::to_string(r.unreferenced_objects) + " unreferenced objects (" +
                      FormatBytes(r.unreferenced_bytes) + ") from " + std::string(store_url) +
                      "; kept " + std::to_string(r.referenced_objects) + " (" +
                      FormatBytes(r.referenced_bytes) + ") of " + std::to_string(r.snapshots) +
                      " snapshots\n";
  if (r.missing_objects > 0) {
    table += "warning: " + std::to_string(r.missing_objects) +
             " objects the snapshots name are missing from the store (run verify)\n";
  }
  if (r.foreign_objects > 0) {
    table += "left " + std::to_string(r.foreign_objects) +
             " objects under chunks/ or packs/ that datasync did not write\n";
  }
  if (r.leftovers_removed > 0) {
    table += "removed " + std::to_string(r.leftovers_removed) +
             " temporaries that killed uploads left in the store\n";
  }
  return table;
}

}  // namespace cutover
