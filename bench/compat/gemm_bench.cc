// The cpu backend's fp32 GEMM (compat/backends/cpu/cpu_ops.h) at 1024 x 1024 x 1024 on the compat
// gemm case's own inputs, side by side in one run with a naive triple loop (the floor) and, when
// CMake found OpenBLAS, with cblas_sgemm (the ceiling a tuned library reaches on this CPU), each
// at 1 and 2 threads where it has threads. Reports GFLOP/s (2 M N K per call, wall time).
// Before timing, each kernel's output is checked against the naive loop's, so a broken call
// reports an error instead of a figure.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include "compat/backends/cpu/cpu_ops.h"
#include "compat/op.h"

#if defined(CUTOVER_BENCH_OPENBLAS)
#include <cblas.h>
#endif

namespace cutover {
namespace {

constexpr int64_t kM = 1024, kN = 1024, kK = 1024;

const CaseSpec& Spec() {
  static const CaseSpec spec{"gemm", "fp32", {kM, kN, kK}, "row-major", 1};
  return spec;
}

// A[M,K] and B[K,N] of the compat case gemm/fp32/1024x1024x1024/row-major/seed=1.
const Tensors& Inputs() {
  static const Tensors in = FindOp("gemm")->make_inputs(Spec());
  return in;
}

// The textbook loop: one dot product per output, B read down its columns.
void NaiveGemm(const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < kM; ++i) {
    for (int64_t j = 0; j < kN; ++j) {
      float s = 0;
      for (int64_t p = 0; p < kK; ++p) s += a[i * kK + p] * b[p * kN + j];
      c[i * kN + j] = s;
    }
  }
}

const std::vector<float>& NaiveResult() {
  static const std::vector<float> c = [] {
    std::vector<float> out(kM * kN);
    NaiveGemm(Inputs()[0].data(), Inputs()[1].data(), out.data());
    return out;
  }();
  return c;
}

// False (and the benchmark skipped with an error) when `c` is not the product: the largest
// difference from the naive loop beyond 1e-3 of the largest output.
bool CheckResult(benchmark::State& state, const std::vector<float>& c) {
  const std::vector<float>& want = NaiveResult();
  float diff = 0, scale = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    diff = std::max(diff, std::fabs(c[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  if (!(diff <= 1e-3f * scale)) {
    state.SkipWithError("the result differs from the naive loop's");
    return false;
  }
  return true;
}

void SetRate(benchmark::State& state) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * kM * kN * kK * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

void BM_NaiveGemm(benchmark::State& state) {
  std::vector<float> c(kM * kN);
  for (auto _ : state) {
    NaiveGemm(Inputs()[0].data(), Inputs()[1].data(), c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  if (!CheckResult(state, c)) return;
  SetRate(state);
}

void BM_CpuBackendGemm(benchmark::State& state) {
  cpu::CpuConfig cfg;
  cfg.threads = static_cast<int>(state.range(0));
  std::vector<float> c(kM * kN);
  cpu::Gemm(cfg, kM, kN, kK, Inputs()[0].data(), Inputs()[1].data(), c.data());
  if (!CheckResult(state, c)) return;
  for (auto _ : state) {
    cpu::Gemm(cfg, kM, kN, kK, Inputs()[0].data(), Inputs()[1].data(), c.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  SetRate(state);
}

BENCHMARK(BM_NaiveGemm)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CpuBackendGemm)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#if defined(CUTOVER_BENCH_OPENBLAS)
void BM_OpenBlasSgemm(benchmark::State& state) {
  openblas_set_num_threads(static_cast<int>(state.range(0)));
  std::vector<float> c(kM * kN);
  auto run = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kM, kN, kK, 1.0f, Inputs()[0].data(), kK,
                Inputs()[1].data(), kN, 0.0f, c.data(), kN);
  };
  run();
  if (!CheckResult(state, c)) return;
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  SetRate(state);
}

BENCHMARK(BM_OpenBlasSgemm)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace cutover

BENCHMARK_MAIN();
