// probe diff: the rules file, every rule on synthetic fingerprints, fixture pairs with their exact
// codes, the JSON document against docs/schemas/diff-1.json, and the command's exit codes.
#include "probe/diff.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/cli.h"
#include "core/file_system.h"
#include "probe/collect.h"
#include "probe/command.h"
#include "probe/data.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

Fingerprint CollectFixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  return Collect(fs, CollectOptions{});
}

// "severity code scope" of each finding, sorted.
std::multiset<std::string> Codes(const std::vector<DiffFinding>& fs) {
  std::multiset<std::string> out;
  for (const DiffFinding& f : fs) out.insert(f.severity + " " + f.code + " " + f.scope);
  return out;
}

const DiffFinding* Find(const DiffReport& r, const std::string& code) {
  for (const DiffFinding& f : r.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

void ExpectValidDiff(const nlohmann::json& doc) {
  testing::TempDir dir;
  std::string path = dir.Join("diff.json");
  std::ofstream(path) << doc.dump(2);
  std::string out;
  int rc = testing::RunShell("/usr/bin/python3 " + testing::SourceDir() +
                                 "/tests/harness/validate_schema.py " + testing::SourceDir() +
                                 "/docs/schemas/diff-1.json " + path,
                             &out);
  if (rc == 77 || rc == 127) CUTOVER_SKIP_OR_FAIL("python3-jsonschema is not installed");
  EXPECT_EQ(rc, 0) << out;
}

// A healthy one-GPU host on CUDA 12.4.
Fingerprint Host() {
  Fingerprint fp;
  fp.hostname = "h";
  fp.os.glibc = "2.35";
  fp.driver.status = "ok";
  fp.driver.version = "550.54.14";
  fp.driver.kernel_module_version = "550.54.14";
  fp.driver.userspace_version = "550.54.14";
  GpuInfo g;
  g.name = "NVIDIA H100 80GB HBM3";
  g.compute_capability = "9.0";
  g.memory_mib = 81920;
  g.pcie = {5, 5, 16, 16};
  fp.gpus.push_back(g);
  fp.cuda_toolkits.push_back({"12.4.1", "/usr/local/cuda-12.4", "version.json"});
  fp.libraries.push_back({"cudart", "12.4.127", "/usr/lib/libcudart.so.12", {}, {}, "standard"});
  fp.libraries.push_back({"cudnn", "9.1.0", "/usr/lib/libcudnn.so.9", {}, {}, "standard"});
  fp.libraries.push_back({"nccl", "2.21.5", "/usr/lib/libnccl.so.2", {}, {}, "standard"});
  fp.libraries.push_back({"cublas", "12.4.5.8", "/usr/lib/libcublas.so.12", {}, {}, "standard"});
  return fp;
}

DiffReport HostDiff(const Fingerprint& s, const Fingerprint& t) {
  return Diff(s, t, DiffMode::kHost, BuiltinRules());
}

TEST(CompatRulesTest, BuiltinRulesParse) {
  Result<CompatRules> r = ParseCompatRules(EmbeddedData("compat-rules.json"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version, 3);
  EXPECT_EQ(BuiltinRules().version, 3);
  EXPECT_EQ(r->minor_version_compat.at(12), "525.60.13");
  EXPECT_EQ(r->minor_version_compat.at(13), "580.65.06");
  EXPECT_EQ(r->min_compute_capability.at(13), "7.5");
  // Every minor release of 11.x, 12.x (no 12.7) and 13.x has a row, in ascending order.
  std::vector<std::string> cuda;
  for (const auto& [v, d] : r->toolkit_drivers) cuda.push_back(v);
  EXPECT_EQ(cuda, (std::vector<std::string>{"11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6",
                                            "11.7", "11.8", "12.0", "12.1", "12.2", "12.3", "12.4",
                                            "12.5", "12.6", "12.8", "12.9", "13.0", "13.1"}));
  EXPECT_EQ(r->toolkit_drivers[13].second, "550.54.14");
  EXPECT_EQ(r->tf32_code, "numerics.tf32");
  EXPECT_EQ(r->tf32_min_compute_capability, "8.0");
  ASSERT_EQ(r->numerics_defaults.size(), 1u);
  EXPECT_EQ(r->numerics_defaults[0].setting, "torch.backends.cuda.matmul.allow_tf32");
  EXPECT_EQ(r->numerics_defaults[0].changed_in, "1.12");
  ASSERT_EQ(r->numerics_env.size(), 2u);
  EXPECT_EQ(r->numerics_env[0].name, "NVIDIA_TF32_OVERRIDE");
  EXPECT_EQ(r->numerics_env[0].disables_tf32, "0");
  EXPECT_EQ(r->numerics_env[1].name, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE");
  EXPECT_EQ(r->numerics_env[1].disables_tf32, "");
  EXPECT_EQ(r->severity.at("numerics.tf32"), "warning");
}

TEST(CompatRulesTest, MalformedNumericsNameTheField) {
  const std::string head = R"({"schema":"cutover.probe-rules/1","version":2,
      "toolkit_drivers":[],"minor_version_compat":[],"dropped_architectures":[],
      "introduced_architectures":[],"params":{},"numerics":)";
  EXPECT_EQ(ParseCompatRules(head + "[]}").status().message(),
            "rules: numerics: expected an object");
  EXPECT_EQ(ParseCompatRules(head + "{}}").status().message(),
            "rules: numerics.tf32: expected an object");
  const std::string tf32 =
      R"({"tf32":{"code":"numerics.tf32","min_compute_capability":"8.0","enabled_by_default":"",
      "fix":""},)";
  EXPECT_EQ(ParseCompatRules(head + tf32 + R"("env":[]}})").status().message(),
            "rules: numerics.framework_defaults: expected an array");
  EXPECT_EQ(ParseCompatRules(head + tf32 + R"("env":[],"framework_defaults":[{"code":"a.b",
      "framework":"torch","setting":"s","changed_in":"soon","before":"","after":"","note":"",
      "fix":""}]}})")
                .status()
                .message(),
            "rules: numerics.framework_defaults[0].changed_in: expected a version such as "
            "\"1.12\"");
  EXPECT_EQ(ParseCompatRules(head + tf32 + R"("framework_defaults":[],"env":[{"code":"a.b"}]}})")
                .status()
                .message(),
            "rules: numerics.env[0].name: expected a string");
  // Without a numerics section no numerics rule runs.
  Result<CompatRules> none = ParseCompatRules(head.substr(0, head.rfind(',')) + "}");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->tf32_min_compute_capability, "");
}

TEST(CompatRulesTest, MalformedRulesNameTheField) {
  EXPECT_EQ(ParseCompatRules("[1]").status().message(), "rules: (root): not a JSON object");
  EXPECT_EQ(ParseCompatRules(R"({"schema":"x"})").status().message(),
            "rules: schema: expected \"cutover.probe-rules/1\"");
  EXPECT_EQ(ParseCompatRules(R"({"schema":"cutover.probe-rules/1","version":1,
      "toolkit_drivers":[{"cuda":"12.4"}]})")
                .status()
                .message(),
            "rules: toolkit_drivers[0].min_driver: expected a string");
  EXPECT_EQ(ParseCompatRules(R"({"schema":"cutover.probe-rules/1","version":1,
      "toolkit_drivers":[],"minor_version_compat":[],"dropped_architectures":[],
      "introduced_architectures":[],"params":{"severity":{"a.b":"fatal"}}})")
                .status()
                .message(),
            "rules: params.severity.a.b: expected \"blocker\", \"warning\" or \"info\"");
}

TEST(DiffTest, ModeNames) {
  EXPECT_EQ(*ParseDiffMode("container"), DiffMode::kContainer);
  EXPECT_EQ(ParseDiffMode("vm").status().message(),
            "--mode vm: expected \"host\" or \"container\"");
}

TEST(DiffTest, IdenticalFixturesHaveNoFindings) {
  for (const char* name : {"h100-cuda12.4", "a100-cuda11.8", "h200-cuda13.0"}) {
    Fingerprint fp = CollectFixture(name);
    for (DiffMode m : {DiffMode::kHost, DiffMode::kContainer}) {
      DiffReport r = Diff(fp, fp, m, BuiltinRules());
      EXPECT_TRUE(r.findings.empty()) << name << ": " << RenderDiffTable(r);
    }
  }
  EXPECT_TRUE(HostDiff(Host(), Host()).findings.empty());
}

TEST(DiffTest, A100Cuda118ToH200Cuda130HostMode) {
  DiffReport r = HostDiff(CollectFixture("a100-cuda11.8"), CollectFixture("h200-cuda13.0"));
  EXPECT_EQ(Codes(r.findings),
            (std::multiset<std::string>{
                "blocker cudnn.major_mismatch pair", "warning cuda.toolkit_missing pair",
                "warning nccl.version_changed pair", "warning cublas.version_changed pair",
                "info driver.version_changed pair", "info gpu.model_changed pair"}));
  EXPECT_EQ(r.findings[0].code, "cudnn.major_mismatch");  // blockers first
  EXPECT_EQ(r.findings[0].source, "8.9.7");
  EXPECT_EQ(r.findings[0].target, "9.12.0");
  nlohmann::json doc = DiffToJson(r);
  EXPECT_EQ(doc["schema"], "cutover.diff/1");
  EXPECT_EQ(doc["mode"], "host");
  EXPECT_EQ(doc["summary"]["blockers"], 1);
  ExpectValidDiff(doc);
}

TEST(DiffTest, ContainerModeChecksOnlyDriverAndGpus) {
  DiffReport r = Diff(CollectFixture("a100-cuda11.8"), CollectFixture("h200-cuda13.0"),
                      DiffMode::kContainer, BuiltinRules());
  EXPECT_EQ(Codes(r.findings), (std::multiset<std::string>{"info driver.version_changed pair",
                                                           "info gpu.model_changed pair"}));
  EXPECT_EQ(DiffToJson(r)["mode"], "container");
  ExpectValidDiff(DiffToJson(r));
}

TEST(DiffTest, Cuda13ImageOnV100Cuda11Host) {
  DiffReport r = Diff(CollectFixture("h200-cuda13.0"), CollectFixture("v100-cuda11.0"),
                      DiffMode::kContainer, BuiltinRules());
  std::multiset<std::string> codes = Codes(r.findings);
  EXPECT_EQ(codes.count("blocker driver.too_old_for_toolkit pair"), 1u) << RenderDiffTable(r);
  EXPECT_EQ(codes.count("blocker driver.too_old_for_runtime pair"), 1u);
  EXPECT_EQ(codes.count("blocker gpu.arch_unsupported pair"), 1u);
  const DiffFinding* arch = Find(r, "gpu.arch_unsupported");
  ASSERT_NE(arch, nullptr);
  EXPECT_EQ(arch->source, "13.x");  // one finding per CUDA major, not per library
  EXPECT_EQ(arch->target, "7.0");
  ExpectValidDiff(DiffToJson(r));
}

TEST(DiffTest, DriverOlderThanToolkitAloneIsABlocker) {
  Fingerprint t = CollectFixture("driver-older-than-toolkit");
  EXPECT_EQ(Codes(CheckHost(t, BuiltinRules(), "target")),
            (std::multiset<std::string>{"blocker driver.too_old_for_toolkit target",
                                        "warning driver.minor_version_compat target"}));
  DiffReport r = HostDiff(t, t);
  // The pair rule (the source's toolkit on the target's driver) and once per side alone.
  EXPECT_EQ(Codes(r.findings).count("blocker driver.too_old_for_toolkit pair"), 1u);
  EXPECT_EQ(r.Count("blocker"), 3);
}

TEST(DiffTest, KernelModuleAndUserSpaceDriverDiffer) {
  Fingerprint fp = CollectFixture("driver-mismatch");
  std::vector<DiffFinding> f = CheckHost(fp, BuiltinRules(), "source");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].code, "driver.version_mismatch");
  EXPECT_EQ(f[0].severity, "blocker");
  EXPECT_EQ(f[0].source, "550.54.14");
  EXPECT_EQ(f[0].target, "550.90.07");
}

TEST(DiffTest, FabricManagerDiffersFromDriver) {
  Fingerprint fp = Host();
  fp.driver.fabric_manager_version = "550.90.07";
  EXPECT_EQ(Codes(CheckHost(fp, BuiltinRules(), "target")),
            (std::multiset<std::string>{"blocker driver.fabric_manager_mismatch target"}));
}

TEST(DiffTest, RuntimeUnderMinorVersionCompatIsAWarningBelowItABlocker) {
  Fingerprint s = Host();
  s.cuda_toolkits.clear();  // only the runtime library
  Fingerprint t = Host();
  t.driver.version = t.driver.kernel_module_version = t.driver.userspace_version = "535.104.05";
  t.libraries.clear();
  t.cuda_toolkits.clear();
  DiffReport r = Diff(s, t, DiffMode::kContainer, BuiltinRules());
  EXPECT_EQ(Codes(r.findings),
            (std::multiset<std::string>{"warning driver.minor_version_compat pair",
                                        "info driver.version_changed pair"}));
  t.driver.version = "520.61.05";
  r = Diff(s, t, DiffMode::kContainer, BuiltinRules());
  const DiffFinding* f = Find(r, "driver.too_old_for_runtime");
  ASSERT_NE(f, nullptr) << RenderDiffTable(r);
  EXPECT_EQ(f->severity, "blocker");
  EXPECT_EQ(f->message,
            "source CUDA runtime /usr/lib/libcudart.so.12 (CUDA 12.4.127) needs driver 550.54.14 "
            "or newer; driver 520.61.05 is older and below the minor-version compatibility "
            "minimum 525.60.13 of CUDA 12.x");
  EXPECT_EQ(f->fix,
            "upgrade the driver to 550.54.14 or newer, or install the forward compatibility "
            "package cuda-compat-12-4 (data center GPUs only)");
}

TEST(DiffTest, FrameworkBuildNeedsNewerDriver) {
  Fingerprint s;
  s.frameworks.push_back({"torch", "2.4.0", "12.4", std::nullopt, "/sp", {}});
  Fingerprint t = Host();
  t.driver.version = "470.42.01";
  t.cuda_toolkits.clear();
  t.libraries.clear();
  DiffReport r = Diff(s, t, DiffMode::kContainer, BuiltinRules());
  EXPECT_EQ(Codes(r.findings),
            (std::multiset<std::string>{"blocker driver.too_old_for_framework pair"}));
}

TEST(DiffTest, NoDriverOnTarget) {
  Fingerprint t = Host();
  t.driver = DriverInfo{};
  t.driver.error = "no /proc/driver/nvidia/version";
  DiffReport r = HostDiff(Host(), t);
  const DiffFinding* f = Find(r, "driver.missing");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "blocker");
  EXPECT_EQ(f->message, "the target has no working NVIDIA driver (no /proc/driver/nvidia/version)");
}

TEST(DiffTest, ComputeCapabilityRules) {
  Fingerprint s = Host();
  s.cuda_toolkits = {{"11.0.3", "/usr/local/cuda-11.0", "version.txt"}};
  s.libraries.clear();
  Fingerprint t = Host();
  t.cuda_toolkits = s.cuda_toolkits;
  t.libraries.clear();
  // CUDA 11.0 predates sm_90: no SASS, PTX JIT only (on both the target and the source alone).
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"warning gpu.arch_newer_than_toolkit pair",
                                        "warning gpu.arch_newer_than_toolkit source",
                                        "warning gpu.arch_newer_than_toolkit target"}));
  // CUDA 12 dropped sm_35/37.
  s.cuda_toolkits = {{"12.4.1", "/usr/local/cuda-12.4", "version.json"}};
  t.cuda_toolkits = s.cuda_toolkits;
  t.gpus[0].compute_capability = "3.7";
  DiffReport r = HostDiff(s, t);
  const DiffFinding* f = Find(r, "gpu.arch_unsupported");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "blocker");
  EXPECT_EQ(f->scope, "pair");
}

TEST(DiffTest, CudnnRules) {
  Fingerprint s = Host(), t = Host();
  t.libraries[1].version = "9.0.0";
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"blocker cudnn.minor_lower pair"}));
  t.libraries[1].version = "9.3.0";
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"info cudnn.version_changed pair"}));
  t.libraries.erase(t.libraries.begin() + 1);
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"blocker cudnn.missing_on_target pair"}));
  // A framework built for a newer cuDNN minor than the host has (single-host).
  Fingerprint h = Host();
  h.frameworks.push_back({"torch", "2.4.0", "12.4", "9.2.1", "/sp", {}});
  EXPECT_EQ(Codes(CheckHost(h, BuiltinRules(), "target")),
            (std::multiset<std::string>{"blocker cudnn.minor_lower target"}));
}

TEST(DiffTest, NcclAndCublasChanges) {
  Fingerprint s = Host(), t = Host();
  t.libraries[2].version = "2.23.4";
  t.libraries[3].version = "12.6.4.1";
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"warning nccl.version_changed pair",
                                        "warning cublas.version_changed pair"}));
  t.libraries.erase(t.libraries.begin() + 2);
  EXPECT_EQ(Codes(HostDiff(s, t).findings).count("warning nccl.missing_on_target pair"), 1u);
}

TEST(DiffTest, HardwareRules) {
  Fingerprint s = Host();
  s.gpus.push_back(s.gpus[0]);
  s.gpus[1].index = 1;
  s.network.infiniband.push_back({"mlx5_0", "28.39.1002", {}, {}});
  s.libraries.push_back({"nccl-net", std::nullopt, "/usr/lib/libnccl-net.so", {}, {}, "standard"});
  Fingerprint t = Host();
  t.gpus[0].memory_mib = 49152;
  t.gpus[0].mig.enabled = true;
  t.gpus[0].pcie = {4, 4, 8, 8};
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{
                "blocker gpu.fewer pair", "warning gpu.memory_smaller pair",
                "warning gpu.mig_on_target pair", "warning pcie.gen_lower pair",
                "warning pcie.width_lower pair", "warning network.infiniband_missing pair",
                "warning nccl.net_plugin_one_side pair"}));
  // Less than half the memory is a blocker (params.memory_smaller_blocker_ratio).
  t.gpus[0].memory_mib = 24576;
  EXPECT_EQ(Find(HostDiff(s, t), "gpu.memory_smaller")->severity, "blocker");
  t.gpus.clear();
  EXPECT_EQ(Codes(HostDiff(s, t).findings).count("blocker gpu.none_on_target pair"), 1u);
}

TEST(DiffTest, GlibcOlderOnlyInHostMode) {
  Fingerprint s = Host(), t = Host();
  t.os.glibc = "2.31";
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"warning os.glibc_older pair"}));
  EXPECT_TRUE(Diff(s, t, DiffMode::kContainer, BuiltinRules()).findings.empty());
}

TEST(DiffTest, LibrariesNeedingANewerGlibcThanTheHostHas) {
  Fingerprint fp = Host();
  fp.os.glibc = "2.31";
  fp.libraries[0].glibc_needed = "2.34";
  fp.libraries[1].glibc_needed = "2.17";
  fp.libraries[2].glibc_needed = "2.35";
  auto alone = CheckHost(fp, BuiltinRules(), "target");
  ASSERT_EQ(Codes(alone),
            (std::multiset<std::string>{"blocker os.glibc_too_old_for_libraries target"}));
  EXPECT_EQ(alone[0].source, "GLIBC_2.35");
  EXPECT_EQ(alone[0].target, "glibc 2.31");
  EXPECT_EQ(alone[0].message,
            "2 of its own libraries need symbol versions newer than glibc 2.31 "
            "(/usr/lib/libnccl.so.2 needs GLIBC_2.35): the loader refuses them (\"version "
            "`GLIBC_2.35' not found\")");
  fp.os.glibc = "2.35";
  EXPECT_TRUE(CheckHost(fp, BuiltinRules(), "target").empty()) << "2.35 is enough for 2.35";

  // A pair: the source's pip wheels travel to the target in host mode only.
  Fingerprint s = Host(), t = Host();
  t.os.glibc = "2.31";
  s.libraries.push_back({"cudnn", "9.1.0", "/venv/nvidia/cudnn/lib/libcudnn.so.9", {}, {}, "pip"});
  s.libraries.back().glibc_needed = "2.34";
  s.libraries[0].glibc_needed = "2.35";  // a system library: the target has its own
  EXPECT_EQ(Codes(HostDiff(s, t).findings),
            (std::multiset<std::string>{"blocker os.glibc_too_old_for_libraries pair",
                                        "warning os.glibc_older pair"}));
  DiffReport pair = HostDiff(s, t);
  const DiffFinding* f = Find(pair, "os.glibc_too_old_for_libraries");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("1 of the source's pip-wheel libraries"), std::string::npos)
      << f->message;
  EXPECT_FALSE(
      Find(Diff(s, t, DiffMode::kContainer, BuiltinRules()), "os.glibc_too_old_for_libraries"))
      << "a container brings its own glibc";
}

// The library nvcc built here (SASS sm_80, PTX compute_90 of ISA 9.0) as collect --deep records
// it, on the fixture hosts' GPUs.
TEST(DiffTest, NoSassOrPtxForTheTargetGpuFromARealLibrary) {
  testing::TempDir root, cache;
  ASSERT_EQ(
      testing::RunShell("mkdir -p " + root.Join("usr/lib/x86_64-linux-gnu") + " && cp " +
                        testing::SourceDir() + "/tests/fixtures/binaries/libscale-sm80-ptx90.so " +
                        root.Join("usr/lib/x86_64-linux-gnu/libnccl-net-scale.so")),
      0);
  RealFileSystem fs(root.path());
  CollectOptions o;
  o.deep = {.enabled = true, .cache_dir = cache.path()};
  Fingerprint image = Collect(fs, o);
  ASSERT_EQ(image.libraries.size(), 1u);
  ASSERT_EQ(image.libraries[0].cuda_archs, (std::vector<std::string>{"compute_90", "sm_80"}));
  auto codes = [&](const std::string& host) {
    std::multiset<std::string> out;
    DiffReport r = Diff(image, CollectFixture(host), DiffMode::kContainer, BuiltinRules());
    for (const DiffFinding& f : r.findings) {
      if (f.code.rfind("gpu.no_code", 0) == 0 || f.code == "gpu.ptx_jit_only") {
        out.insert(f.severity + " " + f.code + " " + f.scope + " " + f.target.value_or(""));
      }
    }
    return out;
  };
  // V100 (7.0): SASS sm_80 is for another major, PTX compute_90 is newer than the GPU.
  EXPECT_EQ(
      codes("v100-cuda11.0"),
      (std::multiset<std::string>{"blocker gpu.no_code_for_library pair compute capability 7.0"}));
  // A100 (8.0): the SASS runs.
  EXPECT_TRUE(codes("a100-cuda11.8").empty());
  // H100 whose driver supports CUDA 12.4: PTX ISA 9.0 needs CUDA 13.0 to JIT.
  EXPECT_EQ(
      codes("h100-cuda12.4"),
      (std::multiset<std::string>{"blocker gpu.no_code_for_library pair compute capability 9.0"}));
  DiffReport h100 =
      Diff(image, CollectFixture("h100-cuda12.4"), DiffMode::kContainer, BuiltinRules());
  const DiffFinding* f = Find(h100, "gpu.no_code_for_library");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("compute_90 is PTX ISA 9.0, which needs CUDA 13.0; the driver "
                            "supports CUDA 12.4"),
            std::string::npos)
      << f->message;
  // H200 on a CUDA 13.0 driver: runs only by JIT from PTX.
  EXPECT_EQ(codes("h200-cuda13.0"),
            (std::multiset<std::string>{"warning gpu.ptx_jit_only pair compute capability 9.0"}));
  // Host mode: a system library stays behind (the target has its own); a pip wheel travels.
  EXPECT_FALSE(Find(HostDiff(image, CollectFixture("v100-cuda11.0")), "gpu.no_code_for_library"));
  image.libraries[0].origin = "pip";
  EXPECT_TRUE(Find(HostDiff(image, CollectFixture("v100-cuda11.0")), "gpu.no_code_for_library"));
  // On its own host: the library against that host's GPUs (none in the image).
  EXPECT_FALSE(
      Find(Diff(image, image, DiffMode::kHost, BuiltinRules()), "gpu.no_code_for_library"));
  ExpectValidDiff(DiffToJson(h100));
}

Fingerprint WithTorch(Fingerprint fp, const std::string& version) {
  fp.frameworks.push_back(
      {"torch", version, "12.4", "9.1.0", "/usr/lib/python3/site-packages", {}});
  return fp;
}

TEST(DiffTest, Tf32FrameworkDefaultCrossed) {
  DiffReport r = HostDiff(WithTorch(Host(), "1.11.0"), WithTorch(Host(), "2.4.0"));
  EXPECT_EQ(Codes(r.findings), (std::multiset<std::string>{"warning numerics.tf32 pair"}));
  const DiffFinding* f = Find(r, "numerics.tf32");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->component, "numerics");
  EXPECT_EQ(f->source, "torch 1.11.0");
  EXPECT_EQ(f->target, "torch 2.4.0");
  EXPECT_EQ(f->message,
            "torch changes from 1.11.0 to 2.4.0 across 1.12, where the default of "
            "torch.backends.cuda.matmul.allow_tf32 changed from True to False: "
            "torch.backends.cuda.matmul.allow_tf32 defaults to True on the source and False on "
            "the target, so FP32 results and speed differ (torch.backends.cudnn.allow_tf32 stays "
            "True, so convolutions use TF32 on both)");
  EXPECT_EQ(f->fix,
            "set torch.backends.cuda.matmul.allow_tf32 (or torch.set_float32_matmul_precision) "
            "explicitly in the workload so both hosts compute FP32 matmuls alike");
  // The other way round names the defaults the other way round.
  DiffReport back = HostDiff(WithTorch(Host(), "2.4.0"), WithTorch(Host(), "1.11.0"));
  ASSERT_NE(Find(back, "numerics.tf32"), nullptr);
  EXPECT_NE(Find(back, "numerics.tf32")
                ->message.find("defaults to False on the source and True on the target"),
            std::string::npos);
  // Same side of 1.12: no finding; a container brings its own torch; a pre-Ampere target has
  // no TF32 to switch.
  EXPECT_TRUE(HostDiff(WithTorch(Host(), "1.12.0"), WithTorch(Host(), "2.4.0")).findings.empty());
  EXPECT_TRUE(HostDiff(WithTorch(Host(), "1.8.1"), WithTorch(Host(), "1.11.0")).findings.empty());
  EXPECT_TRUE(Diff(WithTorch(Host(), "1.11.0"), WithTorch(Host(), "2.4.0"), DiffMode::kContainer,
                   BuiltinRules())
                  .findings.empty());
  Fingerprint volta = WithTorch(Host(), "2.4.0");
  volta.gpus[0].compute_capability = "7.0";
  Fingerprint volta_old = WithTorch(Host(), "1.11.0");
  volta_old.gpus[0].compute_capability = "7.0";
  EXPECT_EQ(Find(HostDiff(volta_old, volta), "numerics.tf32"), nullptr);
}

TEST(DiffTest, Tf32SwitchSetOnOneHost) {
  Fingerprint s = Host(), t = Host();
  t.env["NVIDIA_TF32_OVERRIDE"] = "0";
  s.env["TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"] = "1";
  DiffReport r = HostDiff(s, t);
  EXPECT_EQ(Codes(r.findings), (std::multiset<std::string>{"warning numerics.tf32 pair",
                                                           "warning numerics.tf32 pair"}));
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].source, "NVIDIA_TF32_OVERRIDE unset");
  EXPECT_EQ(r.findings[0].target, "NVIDIA_TF32_OVERRIDE=0");
  EXPECT_EQ(r.findings[0].message,
            "NVIDIA_TF32_OVERRIDE differs (source: NVIDIA_TF32_OVERRIDE unset, target: "
            "NVIDIA_TF32_OVERRIDE=0); 0 turns TF32 off in cuBLAS and cuDNN for the whole "
            "process, whatever the framework asks");
  EXPECT_EQ(r.findings[0].fix,
            "set NVIDIA_TF32_OVERRIDE to the same value on both hosts, or leave it unset on both");
  EXPECT_EQ(r.findings[1].source, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1");
  EXPECT_EQ(r.findings[1].target, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE unset");
  // The environment is known only on live hosts: an image root says nothing about it.
  t.collection.live = false;
  EXPECT_TRUE(HostDiff(s, t).findings.empty());
  // Without a GPU that can run TF32 on either side the switches change nothing.
  t.collection.live = true;
  s.gpus[0].compute_capability = t.gpus[0].compute_capability = "7.0";
  EXPECT_TRUE(HostDiff(s, t).findings.empty());
}

TEST(DiffTest, Tf32TargetGainsTensorCores) {
  Fingerprint s = Host(), t = Host();
  s.gpus[0].name = "Tesla V100-SXM2-32GB";
  s.gpus[0].compute_capability = "7.0";
  t.gpus[0].name = s.gpus[0].name;
  DiffReport r = HostDiff(s, t);
  EXPECT_EQ(Codes(r.findings), (std::multiset<std::string>{"warning numerics.tf32 pair"}));
  const DiffFinding* f = Find(r, "numerics.tf32");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->source, "compute capability 7.0");
  EXPECT_EQ(f->target, "compute capability 9.0");
  EXPECT_EQ(f->message,
            "the target's GPUs (compute capability 9.0) have TF32 tensor cores, the source's "
            "(7.0) do not: FP32 matmuls and convolutions that run in TF32 on the target round "
            "inputs to a 10-bit mantissa and give different results (PyTorch's cuDNN "
            "convolutions (torch.backends.cudnn.allow_tf32) and TensorFlow's float32 matmuls and "
            "convolutions use TF32 by default)");
  EXPECT_EQ(f->fix.rfind("to keep FP32 results set NVIDIA_TF32_OVERRIDE=0 on the target", 0), 0u);
  // In a container too: the GPU, not the stack, makes TF32 possible.
  EXPECT_NE(Find(Diff(s, t, DiffMode::kContainer, BuiltinRules()), "numerics.tf32"), nullptr);
  // The target turns TF32 off: only the switch difference is left.
  t.env["NVIDIA_TF32_OVERRIDE"] = "0";
  r = HostDiff(s, t);
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].target, "NVIDIA_TF32_OVERRIDE=0");
  // Ampere to Hopper, or a source GPU of unknown capability: nothing to say.
  t.env.clear();
  s.gpus[0].compute_capability = "8.0";
  EXPECT_EQ(Find(HostDiff(s, t), "numerics.tf32"), nullptr);
  s.gpus[0].compute_capability.reset();
  EXPECT_EQ(Find(HostDiff(s, t), "numerics.tf32"), nullptr);
}

TEST(DiffTest, TableNamesModeAndFindings) {
  Fingerprint s = Host(), t = Host();
  t.os.glibc = "2.31";
  std::string table = RenderDiffTable(HostDiff(s, t));
  EXPECT_NE(table.find("probe diff (mode host, rules v3): h -> h"), std::string::npos) << table;
  EXPECT_NE(table.find("WARNING  os.glibc_older"), std::string::npos) << table;
  EXPECT_NE(table.find("0 blocker(s), 1 warning(s), 0 info"), std::string::npos) << table;
}

// Runs `cutover probe ARGS...` in-process; returns the exit code the dispatcher would give.
int RunProbe(std::vector<std::string> args, std::string* error) {
  CLI::App app("cutover");
  CommandContext ctx;
  app.add_flag("--json", ctx.global.json);
  AddProbeCommand(app, ctx);
  args.insert(args.begin(), "probe");
  std::reverse(args.begin(), args.end());
  app.parse(args);
  Result<int> rc = ctx.run();
  if (!rc.ok()) {
    *error = rc.status().message();
    return ExitCodeFor(rc.status());
  }
  return *rc;
}

TEST(DiffCommandTest, ExitCodesAndErrors) {
  testing::TempDir dir;
  std::string a = dir.Join("a.json"), h = dir.Join("h.json"), bad = dir.Join("bad.json"),
              wrong = dir.Join("wrong.json");
  std::ofstream(a) << FingerprintToJson(CollectFixture("a100-cuda11.8")).dump();
  std::ofstream(h) << FingerprintToJson(CollectFixture("h200-cuda13.0")).dump();
  std::ofstream(bad) << "{not json";
  std::ofstream(wrong) << R"({"schema":"cutover.fingerprint/1","gpus":7})";
  std::string err;
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(RunProbe({"diff", a, a}, &err), 0);
  EXPECT_EQ(RunProbe({"diff", a, h}, &err), 1);
  EXPECT_EQ(RunProbe({"diff", a, h, "--mode", "container"}, &err), 0);
  ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(RunProbe({"diff", a, bad}, &err), 2);
  EXPECT_EQ(err.find('\n'), std::string::npos);
  EXPECT_EQ(err.rfind(bad + ": ", 0), 0u) << err;
  EXPECT_EQ(RunProbe({"diff", wrong, a}, &err), 2);
  EXPECT_EQ(err.rfind(wrong + ": ", 0), 0u) << err;
  EXPECT_NE(err.find("gpus"), std::string::npos) << err;
  EXPECT_EQ(RunProbe({"diff", dir.Join("none.json"), a}, &err), 2);
}

}  // namespace
}  // namespace cutover::probe
