// Tests of the real CUDA backend plugin (compat/backends/cuda) through the loader. Built in every
// configuration; without the plugin (CUTOVER_CUDA=OFF or no toolkit) the tests skip. On a host
// without a GPU, init must fail cleanly and the GPU-only tests skip.
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compat/backend_loader.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;

#ifdef CUTOVER_HAVE_CUDA_PLUGIN
constexpr bool kPluginBuilt = true;
constexpr char kPluginPath[] = CUTOVER_TEST_CUDA_PLUGIN;
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

TEST(CudaPlugin, RunCaseBeforeInitIsRefused) {
  REQUIRE_PLUGIN();
  Result<LoadedBackend> r = LoadBackendFile(kPluginPath);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  uint32_t out[4];
  CutoverCompatCase c{};
  c.struct_size = sizeof(c);
  c.op = "fill_u32";
  c.count = 4;
  c.output = out;
  c.output_bytes = sizeof(out);
  char err[256] = {0};
  EXPECT_EQ(r->table().run_case(&c, err, sizeof(err)), CUTOVER_COMPAT_ERR_NOT_INITIALIZED);
  EXPECT_STREQ(err, "run_case before init");
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

TEST_F(CudaPluginOnGpu, FillKernelWritesSeedPlusIndex) {
  // Odd size and a seed near 2^32 so the grid-stride tail and the wrap are both exercised.
  constexpr uint64_t kCount = (1 << 22) + 3;
  constexpr uint64_t kSeed = 0xfffffff0ull;
  std::vector<uint32_t> out(kCount, 0);
  CutoverCompatCase c{};
  c.struct_size = sizeof(c);
  c.op = "fill_u32";
  c.device = backend_->DeviceCount() - 1;
  c.count = kCount;
  c.seed = kSeed;
  c.output = out.data();
  c.output_bytes = out.size() * sizeof(uint32_t);
  char err[256] = {0};
  ASSERT_EQ(backend_->table().run_case(&c, err, sizeof(err)), CUTOVER_COMPAT_OK) << err;
  for (uint64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(out[i], static_cast<uint32_t>(kSeed + i)) << "at " << i;
  }
  c.op = "no_such_op";
  EXPECT_EQ(backend_->table().run_case(&c, err, sizeof(err)), CUTOVER_COMPAT_ERR_UNSUPPORTED);
  EXPECT_STREQ(err, "run_case: unknown op 'no_such_op'");
  c.op = "fill_u32";
  c.output_bytes = 4;
  EXPECT_EQ(backend_->table().run_case(&c, err, sizeof(err)), CUTOVER_COMPAT_ERR_INVALID);
}

}  // namespace
}  // namespace cutover
