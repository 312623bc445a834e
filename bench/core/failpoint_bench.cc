// What a failpoint costs: the same small loop body with no point, with an unarmed point, and with
// a point while another one is armed (every hit then takes the slow path: a name lookup that finds
// nothing). Unarmed should be within noise of no point at all.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "core/failpoint.h"

namespace cutover {
namespace {

// The loop body: a little arithmetic the compiler cannot fold away.
inline uint64_t Step(uint64_t x) { return x * 6364136223846793005ULL + 1442695040888963407ULL; }

void BM_LoopWithoutFailpoint(benchmark::State& state) {
  (void)failpoint::Configure("");
  uint64_t x = 1;
  for (auto _ : state) {
    x = Step(x);
    benchmark::DoNotOptimize(x);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_LoopWithoutFailpoint);

void BM_LoopWithUnarmedFailpoint(benchmark::State& state) {
  (void)failpoint::Configure("");
  uint64_t x = 1;
  for (auto _ : state) {
    x = Step(x);
    CUTOVER_FAILPOINT("bench.loop");
    benchmark::DoNotOptimize(x);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_LoopWithUnarmedFailpoint);

void BM_LoopWithFailpointWhileAnotherIsArmed(benchmark::State& state) {
  if (!failpoint::Configure("bench.elsewhere:kill").ok()) {
    state.SkipWithError("cannot arm bench.elsewhere");
    return;
  }
  uint64_t x = 1;
  for (auto _ : state) {
    x = Step(x);
    CUTOVER_FAILPOINT("bench.loop");
    benchmark::DoNotOptimize(x);
    benchmark::ClobberMemory();
  }
  (void)failpoint::Configure("");
}
BENCHMARK(BM_LoopWithFailpointWhileAnotherIsArmed);

void BM_LoopWithArmedFailpointNotYetDue(benchmark::State& state) {
  // The point itself armed, its kill due only after 10^12 hits: every hit is counted.
  if (!failpoint::Configure("bench.loop:after=1000000000000:kill").ok()) {
    state.SkipWithError("cannot arm bench.loop");
    return;
  }
  uint64_t x = 1;
  for (auto _ : state) {
    x = Step(x);
    CUTOVER_FAILPOINT("bench.loop");
    benchmark::DoNotOptimize(x);
    benchmark::ClobberMemory();
  }
  (void)failpoint::Configure("");
}
BENCHMARK(BM_LoopWithArmedFailpointNotYetDue);

}  // namespace
}  // namespace cutover

BENCHMARK_MAIN();
