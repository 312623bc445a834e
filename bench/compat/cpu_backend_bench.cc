// The compat cpu backend as `compat run --backend cpu` runs it (compat/cpu_kernels.h: OpenBLAS
// for fp32 GEMM, oneDNN for convolution) on the compat cases' own inputs: fp32 GEMM at 1024^3
// and 4096^3, and conv2d forward (NCHW) at the quick suite's shapes and the standard suite's
// ResNet-50 layers. bench/compat/cpu_vs_torch.py runs it beside torch.matmul and
// torch.nn.functional.conv2d at the same thread count. Threads: $CUTOVER_BENCH_THREADS
// (default 2). Each benchmark's label names the implementation that ran.
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "compat/cpu_kernels.h"
#include "compat/op.h"

namespace cutover {
namespace {

int Threads() {
  const char* t = std::getenv("CUTOVER_BENCH_THREADS");
  return t != nullptr && std::atoi(t) > 0 ? std::atoi(t) : 2;
}

void RunCase(benchmark::State& state, const CaseSpec& spec) {
  const OpDescriptor& op = *FindOp(spec.op);
  const Tensors in = op.make_inputs(spec);
  std::vector<float> out(op.output_size(spec));
  const CpuKernel k = SelectCpuKernel(op, spec, {.threads = Threads()}, false);
  if (Status s = k.run(in, out.data()); !s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  for (auto _ : state) {
    if (Status s = k.run(in, out.data()); !s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(op.flops(spec) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(spec.Id() + " | " + k.implementation);
}

void BM_Gemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunCase(state, {"gemm", "fp32", {n, n, n}, "row-major", 1});
}
BENCHMARK(BM_Gemm)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// {N, C, H, W, K, R, S, stride, pad}: the quick suite's two, then resnet(8) of the standard suite.
const std::vector<std::vector<int64_t>>& ConvShapes() {
  static const std::vector<std::vector<int64_t>> s = {
      {2, 32, 28, 28, 32, 3, 3, 1, 1},  {2, 64, 14, 14, 64, 1, 1, 2, 0},
      {8, 64, 56, 56, 64, 3, 3, 1, 1},  {8, 128, 56, 56, 128, 3, 3, 2, 1},
      {8, 256, 14, 14, 256, 3, 3, 1, 1}, {8, 512, 7, 7, 2048, 1, 1, 1, 0}};
  return s;
}

void BM_Conv2dFwd(benchmark::State& state) {
  RunCase(state, {"conv2d_fwd", "fp32", ConvShapes()[state.range(0)], "NCHW", 1});
}
BENCHMARK(BM_Conv2dFwd)->DenseRange(0, 5)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace cutover

BENCHMARK_MAIN();
