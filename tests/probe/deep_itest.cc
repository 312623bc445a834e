// probe collect --deep on this machine, for real: the CUDA 13 libraries under
// /usr/local/cuda-13.0 (cuBLAS, cuBLASLt, cuDNN 9, NCCL, the runtime) are loaded in child
// processes and must report the versions their file names and headers give; the second
// collection takes every hash from the cache.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "core/sha256.h"
#include "probe/collect.h"
#include "probe/parsers.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

int Components(const std::string& v) {
  return static_cast<int>(std::count(v.begin(), v.end(), '.')) + 1;
}

TEST(DeepItest, RealCudaLibrariesReportTheVersionsTheirFilesGive) {
  RealFileSystem fs("/");
  if (!fs.Exists("/usr/local/cuda-13.0/lib64/libcudnn.so.9")) {
    GTEST_SKIP() << "no CUDA 13.0 toolkit with cuDNN under /usr/local/cuda-13.0";
  }
  testing::TempDir cache;
  CollectOptions o = LiveOptions();
  o.deep = {.enabled = true, .load = true, .load_timeout_ms = 60000, .cache_dir = cache.path()};
  auto t0 = std::chrono::steady_clock::now();
  Fingerprint first = Collect(fs, o);
  auto t1 = std::chrono::steady_clock::now();
  Fingerprint second = Collect(fs, o);
  auto t2 = std::chrono::steady_clock::now();
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  RecordProperty("first_deep_ms", std::to_string(ms(t1 - t0)));
  RecordProperty("second_deep_ms", std::to_string(ms(t2 - t1)));
  std::printf("collect --deep: first %.0f ms, second %.0f ms\n", ms(t1 - t0), ms(t2 - t1));
  CUTOVER_EXPECT_VALID_FINGERPRINT(FingerprintToJson(first));

  std::set<std::string> checked;
  for (const LibraryInfo& l : first.libraries) {
    if (l.path.rfind("/usr/local/cuda-13.0/", 0) != 0 &&
        l.real_path.value_or("").rfind("/usr/local/cuda-13.0/", 0) != 0) {
      continue;
    }
    ASSERT_TRUE(l.sha256.has_value()) << l.path;
    if (l.name == "cudnn" || l.name == "nccl" || l.name == "cublas" || l.name == "cublasLt" ||
        l.name == "cudart") {
      ASSERT_TRUE(l.loaded_version.has_value()) << l.path;
      ASSERT_TRUE(l.version.has_value()) << l.path;
      int n = std::min(Components(*l.loaded_version), Components(*l.version));
      EXPECT_GE(n, 2) << l.path;
      EXPECT_EQ(VersionPrefix(*l.loaded_version, n), VersionPrefix(*l.version, n))
          << l.path << ": loaded " << *l.loaded_version << ", files " << *l.version << " ("
          << l.version_source.value_or("?") << ")";
      checked.insert(l.name);
    }
  }
  EXPECT_EQ(checked, (std::set<std::string>{"cudnn", "nccl", "cublas", "cublasLt", "cudart"}));
  for (const Finding& f : first.collection.findings) {
    EXPECT_NE(f.code, "library.loaded_version_differs") << f.message;
    if (f.code == "library.load_failed") {
      EXPECT_EQ(f.message.find("/usr/local/cuda-13.0/"), std::string::npos) << f.message;
    }
  }

  ASSERT_TRUE(first.collection.deep && second.collection.deep);
  const DeepInfo& a = *first.collection.deep;
  const DeepInfo& b = *second.collection.deep;
  EXPECT_GT(a.hashes_computed, 0);
  EXPECT_GE(a.loaded, 5);
  EXPECT_EQ(b.hashes_computed, 0) << "every hash of the second run comes from the cache";
  EXPECT_EQ(b.hashes_from_cache, a.hashes_computed + a.hashes_from_cache);
  EXPECT_EQ(b.bytes_hashed, 0u);
  ASSERT_EQ(first.libraries.size(), second.libraries.size());
  for (size_t i = 0; i < first.libraries.size(); ++i) {
    EXPECT_EQ(first.libraries[i].sha256, second.libraries[i].sha256) << first.libraries[i].path;
  }
  // One real hash checked against a fresh one-shot digest.
  for (const LibraryInfo& l : first.libraries) {
    if (l.name != "cudnn" || !l.sha256) continue;
    Result<std::string> bytes = fs.ReadFile(l.real_path.value_or(l.path), 64 << 20);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*l.sha256, Sha256Hex(*bytes)) << l.path;
    break;
  }
}

}  // namespace
}  // namespace cutover::probe
