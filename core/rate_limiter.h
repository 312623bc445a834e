// A byte-rate limit shared by every transfer that holds it: `cutover datasync --bwlimit` caps
// the total over all parallel connections, the way a user reads the flag. libcurl's own
// per-handle limits (CURLOPT_MAX_RECV_SPEED_LARGE) average over each transfer and let a chunk
// of a few MB through at full speed before they act, so they cannot cap chunked traffic.
//
// Scheduling is by reservation (a virtual clock): each Acquire(n) books n / rate seconds after
// the previous booking and sleeps until its booking minus `burst` has come. Over any period the
// bytes passed are at most rate * period + burst bytes; waiting callers are served in the order
// they booked.
//
// Thread-safety: Acquire may be called from any number of threads at once.
#ifndef CUTOVER_CORE_RATE_LIMITER_H_
#define CUTOVER_CORE_RATE_LIMITER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>

namespace cutover {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // REQUIRES: bytes_per_s > 0. `burst_bytes`: what may pass at once after an idle spell
  // (default: a tenth of a second's worth, at least 16 KiB).
  explicit RateLimiter(double bytes_per_s, double burst_bytes = 0);

  // Blocks until `n` more bytes may pass.
  void Acquire(uint64_t n);

  // The wait Acquire(n) would take at `now`, booking it (for tests: no sleeping).
  Clock::duration Reserve(uint64_t n, Clock::time_point now);

  double bytes_per_s() const { return rate_; }

 private:
  const double rate_;
  const Clock::duration burst_;
  std::mutex mu_;
  Clock::time_point booked_until_{};  // guarded by mu_
};

}  // namespace cutover

#endif  // CUTOVER_CORE_RATE_LIMITER_H_
