#include "core/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace cutover {

namespace {
RateLimiter::Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<RateLimiter::Clock::duration>(
      std::chrono::duration<double>(s));
}
}  // namespace

RateLimiter::RateLimiter(double bytes_per_s, double burst_bytes)
    : rate_(bytes_per_s),
      burst_(Seconds((burst_bytes > 0 ? burst_bytes : std::max(bytes_per_s / 10, 16384.0)) /
                     bytes_per_s)) {}

RateLimiter::Clock::duration RateLimiter::Reserve(uint64_t n, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  // Idle time earns no credit beyond the `burst` that every wake below is early by.
  booked_until_ = std::max(booked_until_, now);
  booked_until_ += Seconds(static_cast<double>(n) / rate_);
  Clock::time_point wake = booked_until_ - burst_;
  return wake > now ? wake - now : Clock::duration::zero();
}

void RateLimiter::Acquire(uint64_t n) {
  if (n == 0) return;
  Clock::duration wait = Reserve(n, Clock::now());
  if (wait > Clock::duration::zero()) std::this_thread::sleep_for(wait);
}

}  // namespace cutover
