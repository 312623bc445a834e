// The watchdog's wait (compat/cluster_device_api.h): polls a step until it is done or failed,
// or gives up after a timeout, so that a wait on a peer that died or hangs is bounded. Shared by
// the CUDA plugin's NCCL side and the fake device plugin of the tests; no CUDA in here.
//
//   PollOutcome p = PollWithDeadline([&] { return cudaStreamQuery(s) == cudaSuccess
//                                          ? PollStep::kDone : PollStep::kPending; }, 600.0);
//   if (p == PollOutcome::kTimedOut) ncclCommAbort(comm);
//
// Thread-safety: a pure function of its arguments.
#ifndef CUTOVER_COMPAT_BACKENDS_POLL_DEADLINE_H_
#define CUTOVER_COMPAT_BACKENDS_POLL_DEADLINE_H_

#include <chrono>
#include <thread>

namespace cutover {

enum class PollStep { kDone, kPending, kFailed };
enum class PollOutcome { kDone, kFailed, kTimedOut };

// Calls step() until it returns kDone or kFailed, or until `timeout_s` seconds have passed
// since the call (kTimedOut; step() was called at least once). Spins for the first
// `spin_s` seconds (a collective of a few microseconds should not wait for a scheduler tick),
// then sleeps 100 us between polls. `Clock` is a std::chrono clock (a fake one in tests).
template <typename Step, typename Clock = std::chrono::steady_clock>
PollOutcome PollWithDeadline(Step step, double timeout_s, double spin_s = 0.002) {
  const auto start = Clock::now();
  for (;;) {
    const PollStep s = step();
    if (s == PollStep::kDone) return PollOutcome::kDone;
    if (s == PollStep::kFailed) return PollOutcome::kFailed;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited >= timeout_s) return PollOutcome::kTimedOut;
    if (waited >= spin_s) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace cutover

#endif  // CUTOVER_COMPAT_BACKENDS_POLL_DEADLINE_H_
