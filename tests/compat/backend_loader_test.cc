// Tests of compat/backend_loader.h against fake plugins built from tests/compat/fake_plugin.c.
#include "compat/backend_loader.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

// True when a file whose name ends with `name` is mapped into this process.
bool Mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= name.size() &&
        line.compare(line.size() - name.size(), name.size(), name) == 0) {
      return true;
    }
  }
  return false;
}

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

LoaderOptions SearchFrom(const std::string& exe) {
  LoaderOptions o;
  o.exe_path = exe;
  o.env_var = "CUTOVER_TEST_PLUGIN_VAR_NEVER_SET";
  return o;
}

TEST(CudaPluginCandidates, ExeDirThenLibCutover) {
  std::vector<std::string> c = CudaPluginCandidates(SearchFrom("/opt/cutover/bin/cutover"));
  EXPECT_THAT(c, ::testing::ElementsAre("/opt/cutover/bin/libcutover_compat_cuda.so",
                                        "/opt/cutover/lib/cutover/libcutover_compat_cuda.so"));
}

TEST(CudaPluginCandidates, DefaultsToProcSelfExe) {
  LoaderOptions o;
  o.env_var = "";
  std::vector<std::string> c = CudaPluginCandidates(o);
  fs::path self = fs::read_symlink("/proc/self/exe");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], (self.parent_path() / "libcutover_compat_cuda.so").string());
}

TEST(CudaPluginCandidates, EnvVarReplacesTheSearch) {
  ScopedEnv env("CUTOVER_TEST_PLUGIN_VAR", "/somewhere/else/plugin.so");
  LoaderOptions o = SearchFrom("/opt/cutover/bin/cutover");
  o.env_var = "CUTOVER_TEST_PLUGIN_VAR";
  EXPECT_THAT(CudaPluginCandidates(o), ::testing::ElementsAre("/somewhere/else/plugin.so"));
}

TEST(LoadCudaBackend, NotFoundNamesEveryPathTried) {
  testing::TempDir tmp;
  Result<LoadedBackend> r = LoadCudaBackend(SearchFrom(tmp.Join("bin/cutover")));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kEnvironment);
  EXPECT_EQ(r.status().message(), "CUDA backend plugin not found: tried " +
                                      tmp.Join("bin/libcutover_compat_cuda.so") + ", " +
                                      tmp.Join("lib/cutover/libcutover_compat_cuda.so") +
                                      " (set CUTOVER_TEST_PLUGIN_VAR_NEVER_SET to its path)");
}

TEST(LoadCudaBackend, NotFoundFromEnvSaysSo) {
  ScopedEnv env("CUTOVER_TEST_PLUGIN_VAR", "/nonexistent/libx.so");
  LoaderOptions o = SearchFrom("/opt/cutover/bin/cutover");
  o.env_var = "CUTOVER_TEST_PLUGIN_VAR";
  Result<LoadedBackend> r = LoadCudaBackend(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "CUDA backend plugin not found: tried /nonexistent/libx.so (from "
            "CUTOVER_TEST_PLUGIN_VAR)");
}

TEST(LoadCudaBackend, FindsPluginNextToExecutable) {
  testing::TempDir tmp;
  fs::create_directories(tmp.Join("bin"));
  fs::copy_file(CUTOVER_TEST_PLUGIN_FAKE, tmp.Join("bin/libcutover_compat_cuda.so"));
  Result<LoadedBackend> r = LoadCudaBackend(SearchFrom(tmp.Join("bin/cutover")));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path(), tmp.Join("bin/libcutover_compat_cuda.so"));
  EXPECT_EQ(r->name(), "fake");
}

TEST(LoadCudaBackend, FindsPluginInLibCutover) {
  testing::TempDir tmp;
  fs::create_directories(tmp.Join("lib/cutover"));
  fs::copy_file(CUTOVER_TEST_PLUGIN_FAKE, tmp.Join("lib/cutover/libcutover_compat_cuda.so"));
  Result<LoadedBackend> r = LoadCudaBackend(SearchFrom(tmp.Join("bin/cutover")));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->path(), tmp.Join("lib/cutover/libcutover_compat_cuda.so"));
}

TEST(LoadCudaBackend, ExistingButBrokenCandidateIsReportedNotSkipped) {
  testing::TempDir tmp;
  fs::create_directories(tmp.Join("bin"));
  fs::create_directories(tmp.Join("lib/cutover"));
  fs::copy_file(CUTOVER_TEST_PLUGIN_ABI999, tmp.Join("bin/libcutover_compat_cuda.so"));
  fs::copy_file(CUTOVER_TEST_PLUGIN_FAKE, tmp.Join("lib/cutover/libcutover_compat_cuda.so"));
  Result<LoadedBackend> r = LoadCudaBackend(SearchFrom(tmp.Join("bin/cutover")));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("plugin ABI 999"));
}

TEST(LoadBackendFile, RefusesOtherAbi) {
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_ABI999);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kEnvironment);
  EXPECT_EQ(r.status().message(), std::string("CUDA backend plugin ") + CUTOVER_TEST_PLUGIN_ABI999 +
                                      " refused: plugin ABI 999, this cutover speaks 2");
  EXPECT_FALSE(Mapped(fs::path(CUTOVER_TEST_PLUGIN_ABI999).filename().string()));
}

TEST(LoadBackendFile, RefusesAPluginOfTheFirstAbi) {
  // A plugin built before run_case took a whole case: its table is smaller and its run_case
  // has another signature, so it must never be called.
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_ABI1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kEnvironment);
  EXPECT_EQ(r.status().message(), std::string("CUDA backend plugin ") + CUTOVER_TEST_PLUGIN_ABI1 +
                                      " refused: plugin ABI 1, this cutover speaks 2");
}

TEST(LoadBackendFile, RefusesLibraryWithoutEntryPoint) {
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_NOENTRY);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kEnvironment);
  EXPECT_EQ(r.status().message(),
            std::string("CUDA backend plugin ") + CUTOVER_TEST_PLUGIN_NOENTRY +
                " refused: no entry point cutover_compat_plugin_entry (not a cutover plugin)");
}

TEST(LoadBackendFile, RefusesTruncatedTable) {
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_SMALL);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), std::string("CUDA backend plugin ") + CUTOVER_TEST_PLUGIN_SMALL +
                                      " refused: plugin table is 16 bytes, ABI 2 needs " +
                                      std::to_string(sizeof(CutoverCompatPlugin)));
}

TEST(LoadBackendFile, DlopenFailureCarriesDlerror) {
  testing::TempDir tmp;
  std::string path = tmp.Join("libnot_elf.so");
  std::ofstream(path) << "this is not an ELF file\n";
  Result<LoadedBackend> r = LoadBackendFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kEnvironment);
  EXPECT_THAT(r.status().message(), StartsWith("cannot load CUDA backend plugin: " + path + ": "));
  EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("\n")));
}

TEST(LoadedBackend, InitFailureIsEnvironmentWithPluginReason) {
  ScopedEnv env("CUTOVER_FAKE_DEVICES", nullptr);
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Status s = r->Init();
  EXPECT_EQ(s.code(), Code::kEnvironment);
  EXPECT_EQ(s.message(), "no CUDA driver: the fake plugin has none");
  EXPECT_EQ(r->DeviceCount(), 0);
}

TEST(LoadedBackend, ReportsDevicesAndVersions) {
  ScopedEnv env("CUTOVER_FAKE_DEVICES", "2");
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->Init().ok());
  ASSERT_EQ(r->DeviceCount(), 2);
  Result<BackendDevice> d = r->Device(1);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->name, "Fake GPU 1");
  EXPECT_EQ(d->pci_bus_id, "0000:11:00.0");
  EXPECT_EQ(d->total_memory, uint64_t{80} << 30);
  Result<BackendDevice> bad = r->Device(2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "fake: no such device");
  Result<BackendLibraryVersions> v = r->LibraryVersions();
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ToString(),
            "CUDA runtime 13.0, CUDA driver 13.1, cuBLAS 13.1.0, cuBLASLt 13.1.0, cuDNN 9.19.0, "
            "NCCL 2.28.9");
}

TEST(LoadedBackend, CalibrateNeedsInitThenReportsThePluginsNumbers) {
  ScopedEnv env("CUTOVER_FAKE_DEVICES", "1");
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Result<BackendCalibration> early = r->Calibrate(0);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(), "calibrate before init");
  ASSERT_TRUE(r->Init().ok());
  Result<BackendCalibration> c = r->Calibrate(0);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // The fake times a real 16 MiB host memcpy.
  EXPECT_EQ(c->copy_bytes, uint64_t{16} << 20);
  EXPECT_GT(c->copy_kernel_gbps, 0.0);
  Result<BackendCalibration> bad = r->Calibrate(1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kEnvironment);
  EXPECT_EQ(bad.status().message(), "fake: no such device");
}

TEST(LoadedBackend, UnloadsWhenDestroyed) {
  std::string name = fs::path(CUTOVER_TEST_PLUGIN_FAKE).filename().string();
  ASSERT_FALSE(Mapped(name));
  {
    Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(Mapped(name));
    LoadedBackend moved = std::move(*r);
    EXPECT_TRUE(Mapped(name));
  }
  EXPECT_FALSE(Mapped(name));
}

}  // namespace
}  // namespace cutover
