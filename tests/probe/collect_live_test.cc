// Collection on this machine (the live host): no GPU here, a CUDA 13 toolkit under
// /usr/local/cuda with cuDNN, NCCL and cuBLAS.
#include <gtest/gtest.h>

#include <set>

#include "core/file_system.h"
#include "probe/collect.h"
#include "tests/harness/test_env.h"
#include "tests/harness/schema_check.h"

namespace cutover::probe {
namespace {

TEST(CollectLiveTest, ThisMachineWithoutAGpu) {
  RealFileSystem fs("/");
  Fingerprint fp = Collect(fs, LiveOptions());
  CUTOVER_EXPECT_VALID_FINGERPRINT(FingerprintToJson(fp));
  EXPECT_TRUE(fp.collection.live);
  EXPECT_TRUE(fp.os.id.has_value());
  EXPECT_TRUE(fp.os.kernel.has_value());
  EXPECT_TRUE(fp.os.glibc.has_value());
  EXPECT_TRUE(fp.cpu.cores.has_value());
  EXPECT_TRUE(fp.memory_mib.has_value());
  if (fs.Exists("/proc/driver/nvidia/version")) GTEST_SKIP() << "this machine has a GPU driver";
  EXPECT_EQ(fp.driver.status, "missing");
  ASSERT_TRUE(fp.driver.error.has_value());
  EXPECT_NE(fp.driver.error->find("libnvidia-ml.so.1: cannot open shared object file"),
            std::string::npos)
      << *fp.driver.error;
  if (!fs.Exists("/usr/local/cuda/lib64/libcudnn.so.9")) {
    GTEST_SKIP() << "no CUDA 13 toolkit with cuDNN under /usr/local/cuda";
  }
  bool cuda13 = false;
  for (const ToolkitInfo& t : fp.cuda_toolkits) {
    if (t.version.rfind("13.0", 0) == 0) cuda13 = true;
  }
  EXPECT_TRUE(cuda13);
  std::set<std::string> names;
  for (const LibraryInfo& l : fp.libraries) {
    if (l.path.rfind("/usr/local/cuda", 0) == 0 && l.version) names.insert(l.name);
  }
  for (const char* want : {"cudnn", "cudnn_ops", "nccl", "cublas", "cublasLt", "cudart"}) {
    EXPECT_EQ(names.count(want), 1u) << want;
  }
}

// Debian's python3-torch carries only an .egg-info directory; a live collect must list it.
TEST(CollectLiveTest, ListsDebianPythonTorch) {
  RealFileSystem fs("/");
  const std::string sp = "/usr/lib/python3/dist-packages";
  bool installed = false;
  auto entries = fs.ListDir(sp);
  for (const std::string& e : entries.ok() ? *entries : std::vector<std::string>{}) {
    if (e.rfind("torch-", 0) == 0 && e.find(".egg-info") != std::string::npos) installed = true;
  }
  if (!installed) GTEST_SKIP() << "python3-torch is not installed (scripts/install-deps adds it)";
  Fingerprint fp = Collect(fs, LiveOptions());
  const FrameworkInfo* torch = nullptr;
  for (const FrameworkInfo& f : fp.frameworks) {
    if (f.name == "torch" && f.path == sp) torch = &f;
  }
  ASSERT_NE(torch, nullptr) << "frameworks: " << FingerprintToJson(fp)["frameworks"].dump();
  EXPECT_EQ(torch->source, "egg-info");
  ASSERT_TRUE(torch->version.has_value());
  EXPECT_EQ(torch->version->rfind("1.13", 0), 0u) << *torch->version;
}

}  // namespace
}  // namespace cutover::probe
