// Collection on this machine (the live host): no GPU here, a CUDA 13 toolkit under
// /usr/local/cuda with cuDNN, NCCL and cuBLAS.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cutover::probe
