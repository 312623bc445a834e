// probe diff of two full fingerprints (the goal: under 5 ms). Synthetic 8-GPU hosts with
// 60 libraries each, diffed as parsed values and from JSON text (parse both, then diff).
#include <benchmark/benchmark.h>

#include "core/fingerprint.h"
#include "probe/diff.h"

namespace cutover::probe {
namespace {

Fingerprint FullHost(const std::string& driver, const std::string& cudnn, int gpus) {
  Fingerprint fp;
  fp.hostname = "node";
  fp.os.glibc = "2.35";
  fp.driver.status = "ok";
  fp.driver.version = fp.driver.kernel_module_version = fp.driver.userspace_version = driver;
  fp.driver.fabric_manager_version = driver;
  for (int i = 0; i < gpus; ++i) {
    GpuInfo g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = "GPU-" + std::to_string(i);
    g.compute_capability = "9.0";
    g.memory_mib = 81920;
    g.pcie = {5, 5, 16, 16};
    g.throttle_reasons = {"gpu_idle"};
    fp.gpus.push_back(g);
  }
  fp.cuda_toolkits.push_back({"12.4.1", "/usr/local/cuda-12.4", "version.json"});
  const char* names[] = {"cudart", "cublas", "cublasLt", "cudnn",    "cudnn_ops",
                         "nccl",   "nvrtc",  "cufft",    "cusparse", "cudnn_cnn"};
  for (int i = 0; i < 60; ++i) {
    std::string n = names[i % 10];
    std::string v = n.rfind("cudnn", 0) == 0 ? cudnn : n == "nccl" ? "2.21.5" : "12.4.127";
    fp.libraries.push_back({n, v, "/dir" + std::to_string(i) + "/lib" + n + ".so", {}, {}, "pip"});
  }
  fp.frameworks.push_back({"torch", "2.4.0", "12.4", cudnn, "/sp", {}});
  fp.network.infiniband.push_back({"mlx5_0", "28.39.1002", {}, {}});
  return fp;
}

void BM_DiffParsed(benchmark::State& state) {
  Fingerprint s = FullHost("550.54.14", "9.1.0", 8), t = FullHost("535.104.05", "8.9.7", 4);
  for (auto _ : state) {
    DiffReport r = Diff(s, t, DiffMode::kHost, BuiltinRules());
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_DiffParsed)->Unit(benchmark::kMicrosecond);

void BM_DiffFromJsonText(benchmark::State& state) {
  std::string s = FingerprintToJson(FullHost("550.54.14", "9.1.0", 8)).dump();
  std::string t = FingerprintToJson(FullHost("535.104.05", "8.9.7", 4)).dump();
  state.counters["bytes"] = static_cast<double>(s.size() + t.size());
  for (auto _ : state) {
    Result<Fingerprint> a = ParseFingerprint(s), b = ParseFingerprint(t);
    DiffReport r = Diff(*a, *b, DiffMode::kHost, BuiltinRules());
    benchmark::DoNotOptimize(DiffToJson(r).dump());
  }
}
BENCHMARK(BM_DiffFromJsonText)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace cutover::probe

BENCHMARK_MAIN();
