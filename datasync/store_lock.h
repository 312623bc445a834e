// Locks in a dumb store, so that gc never deletes a chunk a running push relies on.
//
// A lock is an object locks/<kind>-<16 hex> holding JSON
//   {"kind": "push"|"gc", "host": "...", "pid": 123, "start_ticks": ..., "boot_id": "...",
//    "created_ns": ..., "refreshed_ns": ...}.
// Its holder rewrites it (refreshed_ns) every `refresh_every` while it runs; a lock not refreshed
// for `stale_after` is stale (its holder crashed or lost the store) and binds no one. A lock
// whose holder is on this host and not running (core/process_identity.h JudgeHolder: its pid
// gone, reused by another process, or the host rebooted since) is stale at once, whatever its
// age; a lock from an older writer (no start_ticks or boot_id) is judged by age alone. Times are
// the writer's wall clock, so hosts sharing a store must agree on the time to well within
// stale_after (NTP does).
//
// Taking a lock: write one's own lock first, then list the others; on a conflict remove one's own
// and fail. Two takers racing both write before they list, so at least one sees the other (both
// may back off; neither proceeds blind). Conflicts: gc with any live lock, push with a live gc
// lock (pushes run side by side freely).
//
// Thread-safety: a StoreLock is used by one thread; its refresher runs on its own thread and
// calls the (thread-safe) Store.
#ifndef CUTOVER_DATASYNC_STORE_LOCK_H_
#define CUTOVER_DATASYNC_STORE_LOCK_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

inline constexpr char kLocksPrefix[] = "locks/";

struct LockInfo {
  std::string key;   // locks/<kind>-<id>
  std::string kind;  // "push" or "gc"
  std::string host;
  int64_t pid = 0;
  uint64_t start_ticks = 0;  // the holder's start time (core/process_identity.h); 0: unknown
  std::string boot_id;       // the holder's boot id; "": unknown
  int64_t created_ns = 0;
  int64_t refreshed_ns = 0;
};

// The shortest grace period gc accepts. Holders refresh every 5 minutes and give their lock up
// as lost after 10 minutes without a refresh, so a lock is never stale to a gc whose grace is
// at least this while its holder still acts on it.
inline constexpr std::chrono::minutes kMinLockGrace{15};

struct LockOptions {
  std::chrono::nanoseconds stale_after = kMinLockGrace;
  std::chrono::nanoseconds refresh_every = std::chrono::minutes(5);
  // Wall clock in ns since the epoch; null = the system clock. Tests move time with it.
  std::function<int64_t()> now_ns;
  // Called with one line for each lock found stale because its holder is gone (not by age),
  // e.g. "lock locks/push-ab12 of pid 4242 on host h is stale: pid 4242 is not running".
  std::function<void(const std::string& line)> on_gone;
};

// Whether lock `l` binds no one at `now_ns`: not refreshed within `stale_after`, or its holder is
// on this host and gone (then *why says so; otherwise it is left alone).
bool LockIsStale(const LockInfo& l, int64_t now_ns, std::chrono::nanoseconds stale_after,
                 std::string* why);

// A lock object's body as read from the store (outside input): kind "unknown" and every time 0
// unless it is a JSON object with kind "push" or "gc"; missing or mistyped fields read as empty.
LockInfo ParseLock(std::string_view key, std::string_view bytes);

// Every lock in the store, skipping objects under locks/ that vanish while listed. A lock object
// that cannot be parsed is returned with kind "unknown" and refreshed_ns 0 (stale).
Result<std::vector<LockInfo>> ListLocks(Store& store);

class StoreLock {
 public:
  // Takes a lock of `kind` ("push" or "gc"). FailedPrecondition naming the conflicting lock's
  // kind, host, pid and age when a live one conflicts (nothing of ours is left behind then).
  static Result<std::unique_ptr<StoreLock>> Acquire(Store& store, const std::string& kind,
                                                    const LockOptions& options);
  ~StoreLock();  // Release(), ignoring its error
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

  // OK while the lock is live: refreshed within stale_after minus one refresh interval (the
  // margin keeps a holder from acting on a lock that others are about to see stale).
  // FailedPrecondition once refreshes have failed for that long; a lost lock stays lost (the
  // refresher stops), since a gc may have acted on it meanwhile.
  Status Check() const;

  // Stops refreshing and deletes the lock object. Idempotent.
  Status Release();

  const std::string& key() const { return info_.key; }

 private:
  StoreLock(Store& store, LockInfo info, LockOptions options);
  Status Write();
  void RefreshLoop();
  int64_t Now() const;

  Store& store_;
  LockInfo info_;
  LockOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool released_ = false;
  mutable bool lost_ = false;    // guarded by mu_
  int64_t last_written_ns_ = 0;  // guarded by mu_
  std::thread refresher_;
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STORE_LOCK_H_
