// Collection on the fixture trees of tests/fixtures/hosts/ (written by make_fixtures.py), with
// exact expected values, and every document validated against the JSON Schema.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

#include "core/file_system.h"
#include "core/fingerprint.h"
#include "probe/collect.h"
#include "probe/diff.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

Fingerprint CollectFixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  return Collect(fs, CollectOptions{});
}

bool HasFinding(const Fingerprint& fp, const std::string& code) {
  for (const Finding& f : fp.collection.findings) {
    if (f.code == code) return true;
  }
  return false;
}

const LibraryInfo* FindLib(const Fingerprint& fp, const std::string& name,
                           const std::string& origin = "") {
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name == name && (origin.empty() || l.origin == origin)) return &l;
  }
  return nullptr;
}

class EveryFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryFixture, DocumentValidatesAndRoundTrips) {
  Fingerprint fp = CollectFixture(GetParam());
  nlohmann::json doc = FingerprintToJson(fp);
  CUTOVER_EXPECT_VALID_FINGERPRINT(doc);
  Result<Fingerprint> back = FingerprintFromJson(doc);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FingerprintToJson(*back), doc);
  EXPECT_FALSE(fp.collection.live);
}

INSTANTIATE_TEST_SUITE_P(Hosts, EveryFixture,
                         ::testing::Values("h100-cuda12.4", "a100-cuda11.8", "v100-cuda11.0",
                                           "h200-cuda13.0", "no-driver",
                                           "driver-older-than-toolkit", "garbled-proc", "two-cudnn",
                                           "pip-shadow", "cudnn-header-mismatch", "driver-mismatch",
                                           "b200-cuda12.8", "a100-mig", "nvswitch-fm-mismatch",
                                           "unreadable-files", "egg-info"));

// Frameworks with no *.dist-info: an .egg-info directory (Debian's python3-torch), an .egg-info
// file, and a bare torch/version.py, each named by its source.
TEST(FixtureHostsTest, EggInfoAndBarePackages) {
  Fingerprint fp = CollectFixture("egg-info");
  std::vector<std::string> got;
  for (const FrameworkInfo& f : fp.frameworks) {
    got.push_back(f.name + " " + f.version.value_or("-") + " cuda=" + f.cuda.value_or("-") +
                  " git=" + f.git_version.value_or("-") + " " + f.path + " " + f.source);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got,
            (std::vector<std::string>{
                "torch 1.13.0a0+gitunknown cuda=- git=Unknown /usr/lib/python3/dist-packages "
                "egg-info",
                "torch 2.5.0a0+git32f585d cuda=12.4 git=32f585d9346e316e554c8d9bf7548af9f62141fc "
                "/usr/local/lib/python3.11/dist-packages torch/version.py",
                "triton 2.1.0 cuda=- git=- /usr/lib/python3/dist-packages egg-info"}));
}

TEST(FixtureHostsTest, H100Cuda124Healthy) {
  Fingerprint fp = CollectFixture("h100-cuda12.4");
  EXPECT_EQ(fp.os.id, "ubuntu");
  EXPECT_EQ(fp.os.version_id, "22.04");
  EXPECT_EQ(fp.os.kernel, "5.15.0-105-generic");
  EXPECT_EQ(fp.os.glibc, "2.35");
  EXPECT_EQ(fp.os.arch, "x86_64");
  EXPECT_FALSE(fp.os.container.detected);
  EXPECT_EQ(fp.cpu.model, "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(fp.cpu.cores, 4);
  EXPECT_EQ(fp.cpu.numa_nodes, 2);
  EXPECT_EQ(fp.memory_mib, 2113612836u / 1024);
  EXPECT_EQ(fp.driver.status, "ok");
  EXPECT_EQ(fp.driver.version, "550.54.14");
  EXPECT_EQ(fp.driver.cuda_version, "12.4");
  EXPECT_EQ(fp.driver.source, "procfs");
  EXPECT_EQ(fp.driver.kernel_module_flavor, "proprietary");
  EXPECT_EQ(fp.driver.userspace_version, "550.54.14");
  EXPECT_EQ(fp.driver.fabric_manager_version, "550.54.14");
  EXPECT_TRUE(fp.driver.container_toolkit);
  EXPECT_TRUE(fp.driver.cdi);
  ASSERT_EQ(fp.gpus.size(), 2u);  // the NVSwitch at 05:00.0 is not a GPU
  EXPECT_EQ(fp.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(fp.gpus[0].uuid, "GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31");
  EXPECT_EQ(fp.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(fp.gpus[0].pci_device_id, "0x2330");
  EXPECT_EQ(fp.gpus[0].compute_capability, "9.0");
  EXPECT_EQ(fp.gpus[0].generation, "Hopper");
  EXPECT_EQ(fp.gpus[0].memory_mib, 81920u);
  EXPECT_EQ(fp.gpus[0].pcie.gen_current, 5);
  EXPECT_EQ(fp.gpus[0].pcie.width_max, 16);
  EXPECT_EQ(fp.gpus[1].index, 1);
  EXPECT_EQ(fp.gpus[1].pci_bus_id, "00000000:2A:00.0");
  ASSERT_EQ(fp.cuda_toolkits.size(), 1u);
  EXPECT_EQ(fp.cuda_toolkits[0].version, "12.4.1");
  EXPECT_EQ(fp.cuda_toolkits[0].path, "/usr/local/cuda-12.4");
  EXPECT_EQ(fp.cuda_toolkits[0].source, "version.json");
  const LibraryInfo* cudnn = FindLib(fp, "cudnn");
  ASSERT_NE(cudnn, nullptr);
  EXPECT_EQ(cudnn->version, "9.1.0");
  EXPECT_EQ(cudnn->path, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0");
  EXPECT_EQ(cudnn->version_source, "file_name");
  for (const char* part :
       {"cudnn_graph", "cudnn_ops", "cudnn_cnn", "cudnn_adv", "cudnn_engines_precompiled",
        "cudnn_engines_runtime_compiled", "cudnn_heuristic"}) {
    EXPECT_NE(FindLib(fp, part), nullptr) << part;
  }
  EXPECT_EQ(FindLib(fp, "nccl")->version, "2.21.5");
  EXPECT_EQ(FindLib(fp, "cublasLt")->version, "12.4.5.8");
  EXPECT_EQ(FindLib(fp, "cudart")->path,
            "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudart.so.12.4.127");
  ASSERT_NE(FindLib(fp, "nccl-net"), nullptr);
  for (const LibraryInfo& l : fp.libraries) {
    EXPECT_EQ(l.path.find("/stubs/"), std::string::npos) << l.path;
  }
  ASSERT_EQ(fp.frameworks.size(), 2u);
  EXPECT_EQ(fp.frameworks[0].name, "torch");
  EXPECT_EQ(fp.frameworks[0].version, "2.4.0");
  EXPECT_EQ(fp.frameworks[0].cuda, "12.4");
  EXPECT_EQ(fp.frameworks[0].cudnn, "9.1.0.70");
  ASSERT_EQ(fp.network.infiniband.size(), 2u);
  EXPECT_EQ(fp.network.infiniband[0].device, "mlx5_0");
  EXPECT_EQ(fp.network.infiniband[0].firmware, "28.39.1002");
  EXPECT_EQ(fp.network.infiniband[0].ports[0].state, "ACTIVE");
  EXPECT_EQ(fp.network.infiniband[0].ports[0].rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(fp.network.infiniband[1].ports[0].state, "DOWN");
  EXPECT_TRUE(fp.network.nvidia_peermem);
  EXPECT_TRUE(fp.collection.findings.empty()) << fp.collection.findings[0].message;
}

TEST(FixtureHostsTest, A100Cuda118WithGlibcFromLinkName) {
  Fingerprint fp = CollectFixture("a100-cuda11.8");
  EXPECT_EQ(fp.os.glibc, "2.31");
  EXPECT_EQ(fp.driver.version, "520.61.05");
  EXPECT_EQ(fp.driver.cuda_version, "11.8");
  ASSERT_EQ(fp.gpus.size(), 1u);
  EXPECT_EQ(fp.gpus[0].compute_capability, "8.0");
  EXPECT_EQ(fp.gpus[0].generation, "Ampere");
  EXPECT_EQ(fp.gpus[0].pcie.gen_current, 4);
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "11.8.0");
  EXPECT_EQ(FindLib(fp, "cudnn")->version, "8.9.7");
  EXPECT_NE(FindLib(fp, "cudnn_ops_infer"), nullptr);  // cuDNN 8 split
  EXPECT_EQ(fp.cpu.numa_nodes, 8);
}

TEST(FixtureHostsTest, V100Cuda110FromVersionTxtOnCentos) {
  Fingerprint fp = CollectFixture("v100-cuda11.0");
  EXPECT_EQ(fp.os.id, "centos");
  EXPECT_EQ(fp.os.glibc, "2.17");
  EXPECT_EQ(fp.os.arch, "x86_64");
  EXPECT_EQ(fp.driver.cuda_version, "11.0");
  EXPECT_EQ(fp.gpus.at(0).compute_capability, "7.0");
  EXPECT_EQ(fp.gpus.at(0).pcie.gen_current, 3);
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "11.0.228");
  EXPECT_EQ(fp.cuda_toolkits.at(0).source, "version.txt");
  EXPECT_EQ(FindLib(fp, "cudnn")->version, "8.0.5");
}

TEST(FixtureHostsTest, H200Cuda130OpenModuleInKubernetes) {
  Fingerprint fp = CollectFixture("h200-cuda13.0");
  EXPECT_EQ(fp.driver.kernel_module_flavor, "open");
  EXPECT_EQ(fp.driver.cuda_version, "13.0");
  EXPECT_EQ(fp.gpus.at(0).name, "NVIDIA H200");
  EXPECT_EQ(fp.gpus.at(0).memory_mib, 144384u);
  EXPECT_TRUE(fp.os.container.detected);
  EXPECT_EQ(fp.os.container.runtime, "kubernetes");
  EXPECT_EQ(fp.os.container.hints,
            (std::vector<std::string>{"/.dockerenv", "cgroup:kubepods", "cgroup:containerd"}));
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "13.0.0");
}

TEST(FixtureHostsTest, NoDriverIsMissingWithTheReason) {
  Fingerprint fp = CollectFixture("no-driver");
  EXPECT_EQ(fp.driver.status, "missing");
  EXPECT_EQ(fp.driver.error,
            "no NVIDIA driver: /proc/driver/nvidia/version absent and no libcuda.so.<version> in "
            "the library paths");
  EXPECT_TRUE(fp.gpus.empty());
  EXPECT_TRUE(HasFinding(fp, "driver.missing"));
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "12.4.1");
}

TEST(FixtureHostsTest, DriverOlderThanToolkitIsAFinding) {
  Fingerprint fp = CollectFixture("driver-older-than-toolkit");
  EXPECT_EQ(fp.driver.cuda_version, "12.2");
  // The single-host rules of probe/rules: the full toolkit needs 550.54.14 (an error); its
  // runtime library runs under minor-version compatibility (a warning).
  ASSERT_EQ(fp.collection.findings.size(), 2u);
  EXPECT_EQ(fp.collection.findings[0].severity, "error");
  EXPECT_EQ(fp.collection.findings[0].code, "driver.too_old_for_toolkit");
  EXPECT_EQ(fp.collection.findings[0].message,
            "CUDA toolkit 12.4.1 at /usr/local/cuda-12.4 (CUDA 12.4.1) needs driver 550.54.14 or "
            "newer; driver 535.104.05 is older (prebuilt binaries may still run under "
            "minor-version compatibility, but the toolkit's PTX JIT and tools do not); fix: "
            "upgrade the driver to 550.54.14 or newer, or install the forward compatibility "
            "package cuda-compat-12-4 (data center GPUs only)");
  EXPECT_EQ(fp.collection.findings[1].severity, "warning");
  EXPECT_EQ(fp.collection.findings[1].code, "driver.minor_version_compat");
}

TEST(FixtureHostsTest, GarbledProcFilesAreFindingsNotCrashes) {
  Fingerprint fp = CollectFixture("garbled-proc");
  EXPECT_EQ(fp.driver.status, "error");
  EXPECT_EQ(fp.driver.error,
            "cannot parse /proc/driver/nvidia/version: no version number in the NVRM line");
  EXPECT_FALSE(fp.memory_mib.has_value());
  ASSERT_EQ(fp.gpus.size(), 1u);
  EXPECT_EQ(fp.gpus[0].name, "NVIDIA H100 80GB HBM3");  // from the PCI id via the GPU table
  EXPECT_FALSE(fp.gpus[0].pcie.gen_current.has_value());
  EXPECT_EQ(fp.gpus[0].pcie.gen_max, 5);
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "12.4");
  EXPECT_EQ(fp.cuda_toolkits.at(0).source, "cuda.h");
  for (const char* code : {"driver.procfs_garbled", "gpu.procfs_garbled", "memory.meminfo_garbled",
                           "cuda.version_json_garbled"}) {
    EXPECT_TRUE(HasFinding(fp, code)) << code;
  }
}

TEST(FixtureHostsTest, TwoCudnnCopies) {
  Fingerprint fp = CollectFixture("two-cudnn");
  ASSERT_TRUE(HasFinding(fp, "library.multiple_copies"));
  std::vector<std::string> versions;
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name == "cudnn") versions.push_back(l.version.value_or(""));
  }
  EXPECT_EQ(versions, (std::vector<std::string>{"9.1.0", "8.9.7"}));
}

TEST(FixtureHostsTest, PipWheelStackShadowsTheSystemOne) {
  Fingerprint fp = CollectFixture("pip-shadow");
  const LibraryInfo* pip = FindLib(fp, "cudnn", "pip");
  ASSERT_NE(pip, nullptr);
  EXPECT_EQ(pip->version, "9.1.0.70");
  EXPECT_EQ(pip->version_source, "dist-info");
  EXPECT_EQ(pip->path, "/usr/local/lib/python3.10/dist-packages/nvidia/cudnn/lib/libcudnn.so.9");
  EXPECT_EQ(FindLib(fp, "cudnn", "ld.so.conf")->version, "8.9.2");
  EXPECT_EQ(FindLib(fp, "nccl", "pip")->version, "2.20.5");
  EXPECT_EQ(FindLib(fp, "cudart", "pip")->version, "12.1.105");
  EXPECT_TRUE(HasFinding(fp, "library.pip_shadows_system"));
  int torch = 0;
  for (const FrameworkInfo& f : fp.frameworks) {
    if (f.name == "torch") {
      ++torch;
      EXPECT_EQ(f.version, "2.3.0+cu121");
      EXPECT_EQ(f.cuda, "12.1");
      EXPECT_EQ(f.cudnn, "8.9.2.26");
    }
    if (f.name == "tensorflow") {
      EXPECT_EQ(f.cuda, "12.2");
      EXPECT_EQ(f.cudnn, "8");
    }
  }
  EXPECT_EQ(torch, 1);
}

TEST(FixtureHostsTest, CudnnHeaderAndLibraryDisagree) {
  Fingerprint fp = CollectFixture("cudnn-header-mismatch");
  ASSERT_EQ(fp.collection.findings.size(), 1u);
  EXPECT_EQ(fp.collection.findings[0].code, "library.header_mismatch");
  EXPECT_EQ(fp.collection.findings[0].message,
            "/usr/include/cudnn_version.h says 9.0.0 but "
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0 is 9.1.0");
}

TEST(FixtureHostsTest, KernelModuleAndUserSpaceDriverDiffer) {
  Fingerprint fp = CollectFixture("driver-mismatch");
  EXPECT_EQ(fp.driver.kernel_module_version, "550.54.14");
  EXPECT_EQ(fp.driver.userspace_version, "550.90.07");
  EXPECT_TRUE(HasFinding(fp, "driver.version_mismatch"));
}

TEST(FixtureHostsTest, B200Cuda128Blackwell) {
  Fingerprint fp = CollectFixture("b200-cuda12.8");
  EXPECT_EQ(fp.os.version_id, "24.04");
  EXPECT_EQ(fp.os.glibc, "2.39");
  EXPECT_EQ(fp.driver.version, "570.124.06");
  EXPECT_EQ(fp.driver.kernel_module_flavor, "open");
  EXPECT_EQ(fp.driver.cuda_version, "12.8");
  EXPECT_EQ(fp.driver.fabric_manager_version, "570.124.06");
  ASSERT_EQ(fp.gpus.size(), 2u);
  for (const GpuInfo& g : fp.gpus) {
    EXPECT_EQ(g.name, "NVIDIA B200");
    EXPECT_EQ(g.pci_device_id, "0x2901");
    EXPECT_EQ(g.compute_capability, "10.0");
    EXPECT_EQ(g.generation, "Blackwell");
    EXPECT_EQ(g.memory_mib, 184320u);
    EXPECT_EQ(g.pcie.gen_max, 5);
    EXPECT_FALSE(g.mig.enabled.has_value());
  }
  EXPECT_EQ(fp.gpus[1].uuid, "GPU-7f3a1d2e-9b5c-4a4f-8d8e-1c2b3d4e5f60");
  ASSERT_EQ(fp.cuda_toolkits.size(), 1u);
  EXPECT_EQ(fp.cuda_toolkits[0].version, "12.8.1");
  EXPECT_EQ(FindLib(fp, "cudart")->version, "12.8.90");
  EXPECT_EQ(FindLib(fp, "cudnn")->version, "9.8.0");
  EXPECT_EQ(FindLib(fp, "nccl")->version, "2.26.2");
  ASSERT_EQ(fp.frameworks.size(), 1u);
  EXPECT_EQ(fp.frameworks[0].version, "2.7.0");
  EXPECT_EQ(fp.frameworks[0].cuda, "12.8");
  EXPECT_EQ(fp.frameworks[0].cudnn, "9.7.1.26");
  // Driver 570.124.06 meets CUDA 12.8's minimum; cuDNN 9.8 serves torch's 9.7 build: no findings.
  EXPECT_TRUE(fp.collection.findings.empty()) << fp.collection.findings[0].message;
}

TEST(FixtureHostsTest, A100MigInstancesFromCapabilityFiles) {
  Fingerprint fp = CollectFixture("a100-mig");
  ASSERT_EQ(fp.gpus.size(), 2u);
  EXPECT_EQ(fp.gpus[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(fp.gpus[0].memory_mib, 40960u);
  // GPU 0: GPU instances 1, 2 and 5, the last with two compute instances: four MIG devices.
  EXPECT_EQ(fp.gpus[0].mig.enabled, true);
  EXPECT_EQ(fp.gpus[0].mig.instances, 4);
  // GPU 1 has no instances: whether its MIG mode is on cannot be told from files.
  EXPECT_FALSE(fp.gpus[1].mig.enabled.has_value());
  EXPECT_FALSE(fp.gpus[1].mig.instances.has_value());
  EXPECT_EQ(fp.driver.version, "535.183.01");
  EXPECT_EQ(fp.cuda_toolkits.at(0).version, "12.2.2");
  EXPECT_TRUE(fp.collection.findings.empty()) << fp.collection.findings[0].message;
  // A job moved from the whole-GPU H100 host onto this one is told about MIG.
  DiffReport r = Diff(CollectFixture("h100-cuda12.4"), fp, DiffMode::kContainer, BuiltinRules());
  bool mig = false;
  for (const DiffFinding& f : r.findings) mig = mig || f.code == "gpu.mig_on_target";
  EXPECT_TRUE(mig) << RenderDiffTable(r);
}

TEST(FixtureHostsTest, NvswitchFabricManagerDiffersFromDriver) {
  Fingerprint fp = CollectFixture("nvswitch-fm-mismatch");
  EXPECT_EQ(fp.driver.version, "550.90.07");
  EXPECT_EQ(fp.driver.userspace_version, "550.90.07");
  EXPECT_EQ(fp.driver.fabric_manager_version, "550.54.15");
  ASSERT_EQ(fp.gpus.size(), 2u);  // the four NVSwitches are bridges, not GPUs
  EXPECT_EQ(fp.gpus[1].pci_bus_id, "00000000:2A:00.0");
  ASSERT_EQ(fp.collection.findings.size(), 1u);
  EXPECT_EQ(fp.collection.findings[0].severity, "error");
  EXPECT_EQ(fp.collection.findings[0].code, "driver.fabric_manager_mismatch");
  EXPECT_EQ(fp.collection.findings[0].message,
            "fabric manager 550.54.15 differs from driver 550.90.07 on an NVSwitch system: CUDA "
            "initialisation fails (error 802, system not ready); fix: install "
            "nvidia-fabricmanager of exactly the driver's version 550.90.07");
}

// The paths of the unreadable-files tree that its tests make unreadable.
const std::set<std::string>& UnreadablePaths() {
  static const std::set<std::string> paths = {
      "/etc/os-release",
      "/proc/driver/nvidia/version",
      "/proc/driver/nvidia/gpus/0000:18:00.0/information",
      "/usr/local/lib/python3.10/dist-packages/torch-2.4.0.dist-info/METADATA",
      "/usr/local/cuda-12.4",
  };
  return paths;
}

// A tree in which some paths (and everything below them) fail to read and list with "Permission
// denied", as files and directories of mode 000 do for a user other than root. Root reads mode
// 000 files, so when the tests run as root a chmod proves nothing; this models it instead, as
// FakeFileSystem::SetUnreadable does in tests/probe/file_system_test.cc.
class UnreadableFileSystem : public FileSystem {
 public:
  UnreadableFileSystem(const FileSystem& base, const std::set<std::string>& paths)
      : base_(base), paths_(paths) {}

  Result<std::string> ReadFile(const std::string& path, size_t max_bytes) const override {
    if (Refused(path)) return Status::IoError(path + ": Permission denied");
    return base_.ReadFile(path, max_bytes);
  }
  Result<std::vector<std::string>> ListDir(const std::string& path) const override {
    if (Refused(path)) return Status::IoError(path + ": Permission denied");
    return base_.ListDir(path);
  }
  Result<FileInfo> Stat(const std::string& path, bool follow_links) const override {
    // A directory of mode 000 can still be stat'ed itself, not what is below it.
    if (Refused(DirName(NormalizePath(path)))) return Status::IoError(path + ": Permission denied");
    return base_.Stat(path, follow_links);
  }
  Result<std::string> ReadLink(const std::string& path) const override {
    return base_.ReadLink(path);
  }
  Result<std::string> RealPath(const std::string& path) const override {
    return base_.RealPath(path);
  }
  std::string RootLabel() const override { return base_.RootLabel(); }

 private:
  // True when `path`, or where its links lead, is or lies below a refused path.
  bool Refused(const std::string& path) const {
    std::vector<std::string> forms = {NormalizePath(path)};
    if (Result<std::string> real = base_.RealPath(path); real.ok()) forms.push_back(*real);
    for (std::string p : forms) {
      while (true) {
        if (paths_.count(p)) return true;
        if (p == "/") break;
        p = DirName(p);
      }
    }
    return false;
  }

  const FileSystem& base_;
  const std::set<std::string>& paths_;
};

// What collection of the unreadable-files tree must give, whichever way the paths were made
// unreadable.
void ExpectUnreadableFindings(const Fingerprint& fp) {
  // Each unreadable file is a warning naming it; the rest of the host is still fingerprinted.
  std::set<std::string> unreadable;
  for (const Finding& f : fp.collection.findings) {
    if (f.code == "file.unreadable") {
      EXPECT_EQ(f.severity, "warning");
      unreadable.insert(f.message);
    }
  }
  EXPECT_TRUE(unreadable.count("/etc/os-release: Permission denied"))
      << ::testing::PrintToString(unreadable);
  EXPECT_TRUE(unreadable.count("/proc/driver/nvidia/version: Permission denied"));
  EXPECT_TRUE(
      unreadable.count("/proc/driver/nvidia/gpus/0000:18:00.0/information: Permission denied"));
  EXPECT_FALSE(fp.os.id.has_value());
  EXPECT_EQ(fp.os.kernel, "5.15.0-105-generic");
  // The driver comes from libcuda's file name when /proc cannot be read.
  EXPECT_EQ(fp.driver.status, "ok");
  EXPECT_EQ(fp.driver.source, "libcuda");
  EXPECT_EQ(fp.driver.version, "550.54.14");
  EXPECT_FALSE(fp.driver.kernel_module_version.has_value());
  // The GPU comes from sysfs and the GPU table; its UUID was only in the unreadable file.
  ASSERT_EQ(fp.gpus.size(), 1u);
  EXPECT_EQ(fp.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(fp.gpus[0].compute_capability, "9.0");
  EXPECT_FALSE(fp.gpus[0].uuid.has_value());
  EXPECT_TRUE(fp.cuda_toolkits.empty());
}

TEST(FixtureHostsTest, UnreadableFilesAreFindings) {
  RealFileSystem real(testing::SourceDir() + "/tests/fixtures/hosts/unreadable-files");
  // Readable, the tree is a healthy host...
  Fingerprint readable = Collect(real, CollectOptions{});
  EXPECT_EQ(readable.os.id, "ubuntu");
  EXPECT_EQ(readable.driver.source, "procfs");
  EXPECT_EQ(readable.cuda_toolkits.size(), 1u);
  EXPECT_TRUE(readable.collection.findings.empty()) << readable.collection.findings[0].message;
  // ...and with the paths refused, each is a finding.
  UnreadableFileSystem fs(real, UnreadablePaths());
  ExpectUnreadableFindings(Collect(fs, CollectOptions{}));
}

// The same with real mode 000 files on a copy of the tree, where the user is not root.
TEST(FixtureHostsTest, Mode000FilesAreFindings) {
  if (::geteuid() == 0) {
    GTEST_SKIP() << "running as root, which reads mode 000 files; UnreadableFilesAreFindings "
                    "models them instead";
  }
  testing::TempDir dir;
  std::string copy = dir.Join("tree");
  ASSERT_EQ(testing::RunShell("cp -a " + testing::SourceDir() +
                              "/tests/fixtures/hosts/unreadable-files " + copy),
            0);
  for (const std::string& p : UnreadablePaths()) {
    ASSERT_EQ(::chmod((copy + p).c_str(), 0), 0) << p;
  }
  RealFileSystem fs(copy);
  Fingerprint fp = Collect(fs, CollectOptions{});
  for (const std::string& p : UnreadablePaths()) {
    ::chmod((copy + p).c_str(), 0755);  // so TempDir can remove the copy
  }
  ExpectUnreadableFindings(fp);
}

}  // namespace
}  // namespace cutover::probe
