// The heartbeat of a controller's lease (canary/state.h), on a thread of its own, so that a long
// hook, a slow load balancer or a slow Prometheus on the controller's thread never lets the lease
// go stale while the controller still runs.
//
// Thread-safety: lost() and lost_reason() may be called from any thread; construct and destroy
// on one.
#ifndef CUTOVER_CANARY_LEASE_H_
#define CUTOVER_CANARY_LEASE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace cutover::canary {

// Unix seconds from the system clock: lease times are compared across processes, so they never
// come from a controller's (possibly fake) Clock.
double LeaseNow();

class LeaseKeeper {
 public:
  // Beats the lease on rollout `name` at `generation` every `beat_seconds`, on its own connection
  // to the state file `db_path`. A beat the file refuses for a lock is tried again at the next
  // period; a beat that finds the lease moved on sets lost() and ends the thread.
  LeaseKeeper(std::string db_path, std::string name, int64_t generation, double beat_seconds);
  // Stops the thread (within one period at most; at once in practice).
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // True once a beat found the lease taken over or released.
  bool lost() const { return lost_.load(); }
  // Why (the beat's Aborted message); "" while not lost.
  std::string lost_reason() const;

 private:
  void Loop();

  const std::string db_path_;
  const std::string name_;
  const int64_t generation_;
  const double beat_seconds_;
  std::atomic<bool> lost_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;        // guarded by mu_
  std::string lost_reason_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_LEASE_H_
