// Tests of the real CUDA backend plugin (compat/backends/cuda) through the loader. Built in every
// configuration; without the plugin (CUTOVER_CUDA=OFF or no toolkit) the tests skip. On a host
// without a GPU, init must fail cleanly and the GPU-only tests skip.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compat/backend_loader.h"
#include "compat/device_runner.h"
#include "compat/op.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;

#ifdef CUTOVER_HAVE_CUDA_PLUGIN
constexpr bool kPluginBuilt = true;
constexpr char kBuiltPluginPath[] = CUTOVER_TEST_CUDA_PLUGIN;
// The plugin under test: the one built beside this test, or CUTOVER_TEST_CUDA_PLUGIN_PATH when
// set (bench/device/run.sh runs a carried copy of this test on a GPU host).
const char* PluginPath() {
  const char* env = std::getenv("CUTOVER_TEST_CUDA_PLUGIN_PATH");
  return env != nullptr && *env != '\0' ? env : kBuiltPluginPath;
}
const std::string kPluginPath = PluginPath();
#else
constexpr bool kPluginBuilt = false;
constexpr char kPluginPath[] = "";
#define CUTOVER_TEST_CUDA_MAJOR 0
#define CUTOVER_TEST_CUDA_ARCHS ""
#endif

#define REQUIRE_PLUGIN()                                                           \
  do {                                                                             \
    if (!kPluginBuilt) GTEST_SKIP() << "CUDA backend not built (no CUDA toolkit)"; \
  } while (0)

bool Mapped(const std::string& fragment) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(fragment) != std::string::npos) return true;
  }
  return false;
}

// The NVIDIA driver's device nodes; without them no driver can be in use.
bool DriverNodesPresent() {
  struct stat st;
  return ::stat("/dev/nvidiactl", &st) == 0;
}

TEST(CudaPlugin, LoadsWithoutADriver) {
  REQUIRE_PLUGIN();
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->name(), "cuda");
  EXPECT_THAT(r->build_info(), HasSubstr(std::string("architectures ") + CUTOVER_TEST_CUDA_ARCHS));
  EXPECT_THAT(r->build_info(), HasSubstr("cuDNN 9."));
}

TEST(CudaPlugin, ReportsLoadedLibraryVersions) {
  REQUIRE_PLUGIN();
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Result<BackendLibraryVersions> v = r->LibraryVersions();
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->cuda_runtime / 1000, CUTOVER_TEST_CUDA_MAJOR) << v->ToString();
  EXPECT_EQ(v->cublas_major, CUTOVER_TEST_CUDA_MAJOR) << v->ToString();
  EXPECT_EQ(v->cublaslt / 10000, CUTOVER_TEST_CUDA_MAJOR) << v->ToString();
  EXPECT_EQ(v->cudnn / 10000, 9) << v->ToString();
  EXPECT_EQ(v->nccl / 10000, 2) << v->ToString();
  if (!DriverNodesPresent()) {
    EXPECT_EQ(v->cuda_driver, 0) << v->ToString();
  }
}

TEST(CudaPlugin, LoadingMapsCudaOnlyInThisProcessAndOnlyWhenAsked) {
  REQUIRE_PLUGIN();
  // This test binary links no CUDA library: the plugin brings it in.
  EXPECT_FALSE(Mapped("libcudart.so"));
  EXPECT_FALSE(Mapped("libcudnn.so"));
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(Mapped("libcudart.so"));
  EXPECT_TRUE(Mapped("libcublas.so"));
  EXPECT_TRUE(Mapped("libcudnn.so"));
  EXPECT_TRUE(Mapped("libnccl.so"));
}

TEST(CudaPlugin, InitFailsCleanlyWithoutAGpu) {
  REQUIRE_PLUGIN();
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Status s = r->Init();
  if (s.ok()) GTEST_SKIP() << "this host has a CUDA device";
  EXPECT_EQ(s.code(), Code::kEnvironment);
  static const std::regex kReason(
      "(no CUDA driver|no CUDA device|CUDA driver too old|CUDA driver unusable)[^\n]*: "
      "cudaGetDeviceCount (returned cudaError\\w+ \\([^\n]*\\)|found 0 devices)");
  EXPECT_TRUE(std::regex_match(s.message(), kReason)) << s.message();
  if (!DriverNodesPresent()) {
    EXPECT_EQ(s.message(),
              "no CUDA driver: cudaGetDeviceCount returned cudaErrorInsufficientDriver (CUDA "
              "driver version is insufficient for CUDA runtime version)");
  }
  EXPECT_EQ(r->DeviceCount(), 0);
  // Nothing but library_versions is served after a failed init.
  char err[256] = {0};
  CutoverCompatDeviceInfo info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(r->table().device_info(0, &info, err, sizeof(err)), CUTOVER_COMPAT_ERR_NOT_INITIALIZED);
  EXPECT_STREQ(err, "device_info before init");
}

TEST(CudaPlugin, RunCaseAndCalibrateBeforeInitAreRefused) {
  REQUIRE_PLUGIN();
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  float in[4] = {1, 2, 3, 4}, out[4];
  double ms[1];
  const int64_t shape[1] = {4};
  CutoverCompatTensor t{in, 4};
  CutoverCompatCase c{};
  c.struct_size = sizeof(c);
  c.op = "copy";
  c.dtype = "fp32";
  c.layout = "row-major";
  c.shape = shape;
  c.shape_count = 1;
  c.inputs = &t;
  c.input_count = 1;
  c.output = out;
  c.output_count = 4;
  c.reps = 1;
  c.rep_ms = ms;
  CutoverCompatCaseResult res{};
  res.struct_size = sizeof(res);
  char err[256] = {0};
  EXPECT_EQ(r->table().run_case(&c, &res, err, sizeof(err)), CUTOVER_COMPAT_ERR_NOT_INITIALIZED);
  EXPECT_STREQ(err, "run_case before init");
  CutoverCompatCalibration cal{};
  cal.struct_size = sizeof(cal);
  EXPECT_EQ(r->table().calibrate(0, &cal, err, sizeof(err)), CUTOVER_COMPAT_ERR_NOT_INITIALIZED);
  EXPECT_STREQ(err, "calibrate before init");
}

// GPU-only: a device must pass the self-check, report itself and run the fill kernel.
class CudaPluginOnGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kPluginBuilt) GTEST_SKIP() << "CUDA backend not built (no CUDA toolkit)";
    Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    backend_.emplace(std::move(*r));
    Status s = backend_->Init();
    if (!s.ok()) GTEST_SKIP() << "no CUDA device on this host (" << s.message() << ")";
  }
  std::optional<LoadedBackend> backend_;
};

TEST_F(CudaPluginOnGpu, ReportsDevices) {
  ASSERT_GT(backend_->DeviceCount(), 0);
  static const std::regex kPci("[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-9a-fA-F]");
  for (int i = 0; i < backend_->DeviceCount(); ++i) {
    Result<BackendDevice> d = backend_->Device(i);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->ordinal, i);
    EXPECT_FALSE(d->name.empty());
    EXPECT_GE(d->cc_major, 7);
    EXPECT_GT(d->total_memory, uint64_t{1} << 30);
    EXPECT_GT(d->sm_count, 0);
    EXPECT_TRUE(std::regex_match(d->pci_bus_id, kPci)) << d->pci_bus_id;
  }
  Result<BackendDevice> bad = backend_->Device(backend_->DeviceCount());
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("device_info: no device"));
  Result<BackendLibraryVersions> v = backend_->LibraryVersions();
  ASSERT_TRUE(v.ok());
  EXPECT_GE(v->cuda_driver, v->cuda_runtime) << v->ToString();
}

// Runs `spec` on device 0 and checks every sampled output against its float64 truth with the
// op's tolerance for the dtype (compat/op.h). Ops not registered in this build are skipped.
void ExpectCloseToTruth(const LoadedBackend& b, const CaseSpec& spec) {
  const OpDescriptor* op = FindOp(spec.op);
  if (op == nullptr) {
    std::printf("skipping %s: op not registered\n", spec.Id().c_str());
    return;
  }
  DeviceRunConfig cfg;
  cfg.device_count = b.DeviceCount();
  cfg.warmup = 1;
  cfg.reps = 3;
  CaseResult r = RunDeviceCase(b.table(), *op, spec, cfg);
  ASSERT_EQ(r.status, "ok") << spec.Id() << ": " << r.error;
  EXPECT_EQ(r.nan_count, 0u) << spec.Id();
  EXPECT_EQ(r.inf_count, 0u) << spec.Id();
  ASSERT_EQ(r.timing.reps_s.size(), 3u);
  for (double t : r.timing.reps_s) EXPECT_GT(t, 0.0) << spec.Id();
  const Tolerance tol = ToleranceFor(spec.dtype, r.reduction_length);
  size_t bad = 0;
  for (size_t i = 0; i < r.sample_index.size(); ++i) {
    const double want = r.sample_truth[i], got = r.sample_value[i];
    if (!(std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want))) {
      if (++bad <= 3) {
        ADD_FAILURE() << spec.Id() << " at " << r.sample_index[i] << ": " << got << " vs truth "
                      << want << " (rtol " << tol.rtol << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0u) << spec.Id();
}

TEST_F(CudaPluginOnGpu, OwnKernelsMatchTruth) {
  for (const CaseSpec& s : std::vector<CaseSpec>{
           {"copy", "fp32", {(1 << 20) + 3}, "row-major", 1},
           {"triad", "fp32", {100003}, "row-major", 1},
           {"gelu", "fp32", {65537}, "row-major", 1},
           {"silu", "fp32", {65537}, "row-major", 1},
           {"softmax", "fp32", {64, 1000}, "row-major", 1},
           {"layernorm", "fp32", {64, 1000}, "row-major", 1},
           {"rmsnorm", "fp32", {64, 1000}, "row-major", 1},
           {"reduce_sum", "fp32", {64, 4099}, "row-major", 1},
           {"reduce_max", "fp32", {64, 4099}, "row-major", 1},
           {"h2d_copy", "u8", {1 << 16}, "row-major", 1},
           {"h2d_copy", "u8", {1 << 16}, "pageable", 1},
           {"sdpa", "fp32", {1, 2, 100, 64}, "causal", 1},
           {"sdpa", "bf16", {2, 2, 256, 128}, "full", 1},
       }) {
    ExpectCloseToTruth(*backend_, s);
  }
}

TEST_F(CudaPluginOnGpu, LibraryOpsMatchTruth) {
  for (const CaseSpec& s : std::vector<CaseSpec>{
           {"gemm", "fp32", {96, 80, 200}, "row-major", 1},
           {"gemm", "tf32", {128, 128, 256}, "row-major", 1},
           {"gemm", "fp16", {128, 64, 256}, "row-major", 1},
           {"gemm", "bf16", {128, 64, 256}, "row-major", 1},
           {"gemm", "int8", {64, 48, 512}, "row-major", 1},
           {"gemm_batched", "fp32", {3, 32, 48, 64}, "row-major", 1},
           {"gemm_batched", "bf16", {2, 32, 48, 64}, "row-major", 1},
           {"conv2d_fwd", "fp32", {2, 8, 14, 14, 16, 3, 3, 1, 1}, "NCHW", 1},
           {"conv2d_fwd", "fp16", {2, 8, 14, 14, 16, 3, 3, 1, 1}, "NHWC", 1},
           {"conv2d_bwd_data", "fp32", {2, 8, 14, 14, 16, 3, 3, 2, 1}, "NCHW", 1},
           {"conv2d_bwd_data", "bf16", {2, 8, 14, 14, 16, 3, 3, 1, 1}, "NHWC", 1},
           {"conv2d_bwd_filter", "fp32", {2, 8, 14, 14, 16, 3, 3, 1, 1}, "NHWC", 1},
           {"all_reduce", "fp32", {1 << 16}, "row-major", 1},
           {"all_gather", "bf16", {1 << 14}, "row-major", 1},
           {"reduce_scatter", "fp32", {1 << 14}, "row-major", 1},
           {"broadcast", "bf16", {1 << 16}, "row-major", 1},
       }) {
    ExpectCloseToTruth(*backend_, s);
  }
}

TEST_F(CudaPluginOnGpu, RefusesUnknownOpsAndMisfitInputs) {
  float in[4] = {1, 2, 3, 4}, out[4];
  double ms[1];
  const int64_t shape[1] = {4};
  CutoverCompatTensor t{in, 3};  // one element short
  CutoverCompatCase c{};
  c.struct_size = sizeof(c);
  c.op = "no_such_op";
  c.dtype = "fp32";
  c.layout = "row-major";
  c.shape = shape;
  c.shape_count = 1;
  c.inputs = &t;
  c.input_count = 1;
  c.output = out;
  c.output_count = 4;
  c.reps = 1;
  c.rep_ms = ms;
  CutoverCompatCaseResult res{};
  res.struct_size = sizeof(res);
  char err[256] = {0};
  EXPECT_EQ(backend_->table().run_case(&c, &res, err, sizeof(err)), CUTOVER_COMPAT_ERR_UNSUPPORTED);
  EXPECT_STREQ(err, "run_case: unknown op 'no_such_op'");
  c.op = "copy";
  EXPECT_EQ(backend_->table().run_case(&c, &res, err, sizeof(err)), CUTOVER_COMPAT_ERR_INVALID);
  EXPECT_STREQ(err, "copy input 0 must hold 4 elements, got 3");
  c.dtype = "fp64";
  t.count = 4;
  EXPECT_EQ(backend_->table().run_case(&c, &res, err, sizeof(err)), CUTOVER_COMPAT_ERR_UNSUPPORTED);
}

TEST_F(CudaPluginOnGpu, CalibrationMeasuresCopyAndGemm) {
  Result<BackendCalibration> c = backend_->Calibrate(0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::printf(
      "calibration: copy kernel %.1f GB/s, memcpy %.1f GB/s, bf16 gemm %.1f TFLOP/s, "
      "fp32 gemm %.1f TFLOP/s\n",
      c->copy_kernel_gbps, c->memcpy_gbps, c->gemm_bf16_tflops, c->gemm_fp32_tflops);
  EXPECT_GT(c->copy_kernel_gbps, 100.0);
  EXPECT_GT(c->memcpy_gbps, 100.0);
  EXPECT_GT(c->gemm_bf16_tflops, 10.0);
  EXPECT_GT(c->gemm_fp32_tflops, 1.0);
  EXPECT_EQ(c->gemm_size, 8192);
}

}  // namespace
}  // namespace cutover
