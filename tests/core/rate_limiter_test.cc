#include "core/rate_limiter.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cutover {
namespace {

using namespace std::chrono_literals;
using Clock = RateLimiter::Clock;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(RateLimiterTest, BookingsFollowTheRateAfterTheBurst) {
  RateLimiter r(1000, 100);  // 1000 B/s, 100 B (0.1 s) of burst
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(Secs(r.Reserve(100, t0)), 0.0);           // within the burst
  EXPECT_NEAR(Secs(r.Reserve(500, t0)), 0.5, 1e-9);   // then 500 B take 0.5 s
  EXPECT_NEAR(Secs(r.Reserve(1000, t0)), 1.5, 1e-9);  // queued behind the first booking
  // Long idle earns no more than the burst.
  const Clock::time_point later = t0 + 100s;
  EXPECT_EQ(Secs(r.Reserve(100, later)), 0.0);
  EXPECT_NEAR(Secs(r.Reserve(200, later)), 0.2, 1e-9);
}

TEST(RateLimiterTest, TotalOverManyThreadsIsCapped) {
  RateLimiter r(4 << 20, 64 << 10);  // 4 MiB/s
  std::atomic<uint64_t> passed{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 32; ++i) {
        r.Acquire(4096);
        passed += 4096;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double took = Secs(Clock::now() - t0);
  // 1 MiB at 4 MiB/s: 0.25 s less the 64 KiB burst.
  EXPECT_EQ(passed.load(), 1u << 20);
  EXPECT_GE(took, 0.25 - 1.0 / 64 - 0.01);
}

}  // namespace
}  // namespace cutover
