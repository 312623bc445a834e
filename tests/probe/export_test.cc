// probe collect --format prometheus|labels: exact text for fixture hosts and for a host NVML
// answered for, label escaping, the GFD family table, and the Prometheus text checked by
// Prometheus's own `promtool check metrics`.
#include "probe/export.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/file_system.h"
#include "probe/collect.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

// A fixture tree's fingerprint with a fixed collection time, so the text is reproducible.
Fingerprint CollectFixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  Fingerprint fp = Collect(fs, CollectOptions{});
  fp.collection.duration_ms = 1234.5;
  return fp;
}

// A two-GPU host as NVML describes it: every health figure known, GPU 1 in trouble.
Fingerprint NvmlHost() {
  Fingerprint fp;
  fp.driver.status = "ok";
  fp.driver.version = "550.54.15";
  fp.driver.cuda_version = "12.4";
  fp.driver.kernel_module_flavor = "open";
  fp.driver.fabric_manager_version = "550.54.15";
  for (int i = 0; i < 2; ++i) {
    GpuInfo g;
    g.index = i;
    g.source = "nvml";
    g.name = "NVIDIA A100-SXM4-80GB";
    g.uuid = "GPU-" + std::to_string(i);
    g.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
    g.compute_capability = "8.0";
    g.memory_mib = 81920;
    g.ecc = {true, 0, 0};
    g.remapped_rows = {false, false};
    g.mig = {false, 0};
    g.pcie = {4, 4, 16, 16};
    g.power_limit_w = 400;
    g.persistence_mode = true;
    g.throttle_reasons = {"gpu_idle"};
    fp.gpus.push_back(g);
  }
  GpuInfo& bad = fp.gpus[1];
  bad.ecc = {true, 3, 17};
  bad.remapped_rows = {true, false};
  bad.mig = {true, 7};
  bad.pcie = {3, 4, 8, 16};
  bad.power_limit_w = 275.5;
  bad.persistence_mode = false;
  bad.throttle_reasons = {"sw_power_cap", "hw_slowdown"};
  fp.collection.duration_ms = 80;
  return fp;
}

TEST(ExportTest, PrometheusFromFixtureHostKnowsOnlyWhatFilesTell) {
  // Files give identity, memory (GPU table) and the PCIe link (sysfs); ECC, row remapping,
  // power, persistence and throttling need NVML, so they give no samples.
  EXPECT_EQ(
      RenderPrometheus(CollectFixture("h100-cuda12.4")),
      R"(# HELP cutover_gpu_info A GPU of this host (value 1); its identity, driver and the driver's CUDA version in labels.
# TYPE cutover_gpu_info gauge
cutover_gpu_info{index="0",name="NVIDIA H100 80GB HBM3",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31",pci_bus_id="00000000:18:00.0",compute_capability="9.0",driver="550.54.14",cuda="12.4"} 1
cutover_gpu_info{index="1",name="NVIDIA H100 80GB HBM3",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555",pci_bus_id="00000000:2A:00.0",compute_capability="9.0",driver="550.54.14",cuda="12.4"} 1
# HELP cutover_gpu_memory_bytes Memory of the GPU in bytes.
# TYPE cutover_gpu_memory_bytes gauge
cutover_gpu_memory_bytes{index="0",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31"} 85899345920
cutover_gpu_memory_bytes{index="1",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555"} 85899345920
# HELP cutover_gpu_pcie_gen_current PCIe generation the GPU's link runs at now.
# TYPE cutover_gpu_pcie_gen_current gauge
cutover_gpu_pcie_gen_current{index="0",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31"} 5
cutover_gpu_pcie_gen_current{index="1",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555"} 5
# HELP cutover_gpu_pcie_gen_max Highest PCIe generation the GPU's link supports.
# TYPE cutover_gpu_pcie_gen_max gauge
cutover_gpu_pcie_gen_max{index="0",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31"} 5
cutover_gpu_pcie_gen_max{index="1",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555"} 5
# HELP cutover_gpu_pcie_width_current PCIe lanes the GPU's link runs with now.
# TYPE cutover_gpu_pcie_width_current gauge
cutover_gpu_pcie_width_current{index="0",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31"} 16
cutover_gpu_pcie_width_current{index="1",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555"} 16
# HELP cutover_gpu_pcie_width_max Most PCIe lanes the GPU's link supports.
# TYPE cutover_gpu_pcie_width_max gauge
cutover_gpu_pcie_width_max{index="0",uuid="GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31"} 16
cutover_gpu_pcie_width_max{index="1",uuid="GPU-a1b2c3d4-0000-1111-2222-333344445555"} 16
# HELP cutover_driver_info The NVIDIA driver of this host (value 1): status, version, the CUDA version it supports, kernel module flavor and fabric manager version in labels.
# TYPE cutover_driver_info gauge
cutover_driver_info{status="ok",version="550.54.14",cuda="12.4",kernel_module_flavor="proprietary",fabric_manager="550.54.14"} 1
# HELP cutover_probe_collection_seconds Seconds cutover probe took to collect.
# TYPE cutover_probe_collection_seconds gauge
cutover_probe_collection_seconds 1.2345
)");
}

TEST(ExportTest, PrometheusFromNvmlHostHasEveryGauge) {
  EXPECT_EQ(
      RenderPrometheus(NvmlHost()),
      R"(# HELP cutover_gpu_info A GPU of this host (value 1); its identity, driver and the driver's CUDA version in labels.
# TYPE cutover_gpu_info gauge
cutover_gpu_info{index="0",name="NVIDIA A100-SXM4-80GB",uuid="GPU-0",pci_bus_id="00000000:00:00.0",compute_capability="8.0",driver="550.54.15",cuda="12.4"} 1
cutover_gpu_info{index="1",name="NVIDIA A100-SXM4-80GB",uuid="GPU-1",pci_bus_id="00000000:01:00.0",compute_capability="8.0",driver="550.54.15",cuda="12.4"} 1
# HELP cutover_gpu_memory_bytes Memory of the GPU in bytes.
# TYPE cutover_gpu_memory_bytes gauge
cutover_gpu_memory_bytes{index="0",uuid="GPU-0"} 85899345920
cutover_gpu_memory_bytes{index="1",uuid="GPU-1"} 85899345920
# HELP cutover_gpu_ecc_enabled 1 when ECC is enabled on the GPU.
# TYPE cutover_gpu_ecc_enabled gauge
cutover_gpu_ecc_enabled{index="0",uuid="GPU-0"} 1
cutover_gpu_ecc_enabled{index="1",uuid="GPU-1"} 1
# HELP cutover_gpu_ecc_uncorrected_errors Uncorrected ECC errors: since the driver loaded (counter="volatile") or in the GPU's life (counter="aggregate").
# TYPE cutover_gpu_ecc_uncorrected_errors gauge
cutover_gpu_ecc_uncorrected_errors{index="0",uuid="GPU-0",counter="volatile"} 0
cutover_gpu_ecc_uncorrected_errors{index="0",uuid="GPU-0",counter="aggregate"} 0
cutover_gpu_ecc_uncorrected_errors{index="1",uuid="GPU-1",counter="volatile"} 3
cutover_gpu_ecc_uncorrected_errors{index="1",uuid="GPU-1",counter="aggregate"} 17
# HELP cutover_gpu_remapped_rows_pending 1 when a row remap waits for a GPU reset.
# TYPE cutover_gpu_remapped_rows_pending gauge
cutover_gpu_remapped_rows_pending{index="0",uuid="GPU-0"} 0
cutover_gpu_remapped_rows_pending{index="1",uuid="GPU-1"} 1
# HELP cutover_gpu_remapped_rows_failed 1 when a row remap failed (the GPU needs replacing).
# TYPE cutover_gpu_remapped_rows_failed gauge
cutover_gpu_remapped_rows_failed{index="0",uuid="GPU-0"} 0
cutover_gpu_remapped_rows_failed{index="1",uuid="GPU-1"} 0
# HELP cutover_gpu_mig_enabled 1 when MIG mode is enabled on the GPU.
# TYPE cutover_gpu_mig_enabled gauge
cutover_gpu_mig_enabled{index="0",uuid="GPU-0"} 0
cutover_gpu_mig_enabled{index="1",uuid="GPU-1"} 1
# HELP cutover_gpu_pcie_gen_current PCIe generation the GPU's link runs at now.
# TYPE cutover_gpu_pcie_gen_current gauge
cutover_gpu_pcie_gen_current{index="0",uuid="GPU-0"} 4
cutover_gpu_pcie_gen_current{index="1",uuid="GPU-1"} 3
# HELP cutover_gpu_pcie_gen_max Highest PCIe generation the GPU's link supports.
# TYPE cutover_gpu_pcie_gen_max gauge
cutover_gpu_pcie_gen_max{index="0",uuid="GPU-0"} 4
cutover_gpu_pcie_gen_max{index="1",uuid="GPU-1"} 4
# HELP cutover_gpu_pcie_width_current PCIe lanes the GPU's link runs with now.
# TYPE cutover_gpu_pcie_width_current gauge
cutover_gpu_pcie_width_current{index="0",uuid="GPU-0"} 16
cutover_gpu_pcie_width_current{index="1",uuid="GPU-1"} 8
# HELP cutover_gpu_pcie_width_max Most PCIe lanes the GPU's link supports.
# TYPE cutover_gpu_pcie_width_max gauge
cutover_gpu_pcie_width_max{index="0",uuid="GPU-0"} 16
cutover_gpu_pcie_width_max{index="1",uuid="GPU-1"} 16
# HELP cutover_gpu_power_limit_watts Power limit of the GPU in watts.
# TYPE cutover_gpu_power_limit_watts gauge
cutover_gpu_power_limit_watts{index="0",uuid="GPU-0"} 400
cutover_gpu_power_limit_watts{index="1",uuid="GPU-1"} 275.5
# HELP cutover_gpu_persistence_mode 1 when persistence mode is enabled on the GPU.
# TYPE cutover_gpu_persistence_mode gauge
cutover_gpu_persistence_mode{index="0",uuid="GPU-0"} 1
cutover_gpu_persistence_mode{index="1",uuid="GPU-1"} 0
# HELP cutover_gpu_throttled 1 when the GPU's clocks are held down for any reason but idling.
# TYPE cutover_gpu_throttled gauge
cutover_gpu_throttled{index="0",uuid="GPU-0"} 0
cutover_gpu_throttled{index="1",uuid="GPU-1"} 1
# HELP cutover_gpu_throttle_reason A reason NVML gives for the GPU's clocks being held down (value 1).
# TYPE cutover_gpu_throttle_reason gauge
cutover_gpu_throttle_reason{index="0",uuid="GPU-0",reason="gpu_idle"} 1
cutover_gpu_throttle_reason{index="1",uuid="GPU-1",reason="sw_power_cap"} 1
cutover_gpu_throttle_reason{index="1",uuid="GPU-1",reason="hw_slowdown"} 1
# HELP cutover_driver_info The NVIDIA driver of this host (value 1): status, version, the CUDA version it supports, kernel module flavor and fabric manager version in labels.
# TYPE cutover_driver_info gauge
cutover_driver_info{status="ok",version="550.54.15",cuda="12.4",kernel_module_flavor="open",fabric_manager="550.54.15"} 1
# HELP cutover_probe_collection_seconds Seconds cutover probe took to collect.
# TYPE cutover_probe_collection_seconds gauge
cutover_probe_collection_seconds 0.08
)");
}

TEST(ExportTest, PrometheusWithoutDriverHasOnlyHostSeries) {
  Fingerprint fp = CollectFixture("no-driver");
  ASSERT_TRUE(fp.gpus.empty());
  EXPECT_EQ(
      RenderPrometheus(fp),
      R"(# HELP cutover_driver_info The NVIDIA driver of this host (value 1): status, version, the CUDA version it supports, kernel module flavor and fabric manager version in labels.
# TYPE cutover_driver_info gauge
cutover_driver_info{status="missing",version="",cuda="",kernel_module_flavor="",fabric_manager=""} 1
# HELP cutover_probe_collection_seconds Seconds cutover probe took to collect.
# TYPE cutover_probe_collection_seconds gauge
cutover_probe_collection_seconds 1.2345
)");
}

TEST(ExportTest, EscapesLabelValues) {
  EXPECT_EQ(EscapePrometheusLabelValue("plain H100"), "plain H100");
  EXPECT_EQ(EscapePrometheusLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapePrometheusLabelValue("tab\tstays"), "tab\tstays");
  Fingerprint fp = NvmlHost();
  fp.gpus[0].name = "GPU \"x\"\\\nnext";
  std::string text = RenderPrometheus(fp);
  EXPECT_NE(text.find(R"(name="GPU \"x\"\\\nnext")"), std::string::npos) << text;
  // Every line is a comment or a sample: the newline in the name did not split a sample.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end - start);
    EXPECT_TRUE(line.rfind("# ", 0) == 0 || line.rfind("cutover_", 0) == 0) << line;
    start = end + 1;
  }
}

// A Volta host as NVML describes it: retired pages (one pending) and Xids from the kernel log.
Fingerprint VoltaWithRetiredPages() {
  Fingerprint fp = NvmlHost();
  fp.gpus.resize(1);
  fp.gpus[0].retired_pages = {.single_bit = 3, .double_bit = 1, .pending = true};
  fp.gpus[0].xid_events = {{63, "NVRM: Xid (PCI:0000:00:00): 63, retired"},
                           {48, "NVRM: Xid (PCI:0000:00:00): 48, DBE"},
                           {63, "NVRM: Xid (PCI:0000:00:00): 63, retired"}};
  return fp;
}

TEST(ExportTest, PrometheusRetiredPagesAndXids) {
  std::string text = RenderPrometheus(VoltaWithRetiredPages());
  for (const char* line :
       {"cutover_gpu_retired_pages{index=\"0\",uuid=\"GPU-0\",cause=\"single_bit\"} 3\n",
        "cutover_gpu_retired_pages{index=\"0\",uuid=\"GPU-0\",cause=\"double_bit\"} 1\n",
        "cutover_gpu_retired_pages_pending{index=\"0\",uuid=\"GPU-0\"} 1\n",
        "cutover_gpu_xid_events{index=\"0\",uuid=\"GPU-0\",xid=\"48\"} 1\n",
        "cutover_gpu_xid_events{index=\"0\",uuid=\"GPU-0\",xid=\"63\"} 2\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(RenderPrometheus(NvmlHost()).find("retired"), std::string::npos)
      << "nothing is written where NVML reported nothing";
}

// Prometheus's own parser and linter. Debian and Ubuntu ship promtool in the prometheus package.
TEST(ExportTest, PromtoolAcceptsTheText) {
  if (testing::RunShell("command -v promtool") != 0) {
    CUTOVER_SKIP_OR_FAIL("promtool is not installed (apt-get install prometheus)");
  }
  testing::TempDir dir;
  Fingerprint escaped = NvmlHost();
  escaped.gpus[0].name = "GPU \"x\"\\\nnext";
  const std::pair<const char*, Fingerprint> cases[] = {
      {"fixture", CollectFixture("h100-cuda12.4")},
      {"nvml", NvmlHost()},
      {"escaped", escaped},
      {"no-driver", CollectFixture("no-driver")},
      {"retired", VoltaWithRetiredPages()},
  };
  for (const auto& [name, fp] : cases) {
    std::string path = dir.Join(std::string(name) + ".prom");
    std::ofstream(path) << RenderPrometheus(fp);
    std::string out;
    EXPECT_EQ(testing::RunShell("promtool check metrics < " + path, &out), 0)
        << name << ": " << out;
    EXPECT_EQ(out, "") << name;  // no lint complaints either
  }
}

TEST(ExportTest, LabelsFromFixtureHost) {
  EXPECT_EQ(RenderGfdLabels(CollectFixture("h100-cuda12.4")),
            "nvidia.com/cuda.driver-version.full=550.54.14\n"
            "nvidia.com/cuda.driver-version.major=550\n"
            "nvidia.com/cuda.driver-version.minor=54\n"
            "nvidia.com/cuda.driver-version.revision=14\n"
            "nvidia.com/cuda.driver.major=550\n"
            "nvidia.com/cuda.driver.minor=54\n"
            "nvidia.com/cuda.driver.rev=14\n"
            "nvidia.com/cuda.runtime-version.full=12.4\n"
            "nvidia.com/cuda.runtime-version.major=12\n"
            "nvidia.com/cuda.runtime-version.minor=4\n"
            "nvidia.com/cuda.runtime.major=12\n"
            "nvidia.com/cuda.runtime.minor=4\n"
            "nvidia.com/gpu.compute.major=9\n"
            "nvidia.com/gpu.compute.minor=0\n"
            "nvidia.com/gpu.count=2\n"
            "nvidia.com/gpu.family=hopper\n"
            "nvidia.com/gpu.memory=81920\n"
            "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n");
}

TEST(ExportTest, LabelsFromNvmlHostSayMigCapable) {
  std::string labels = RenderGfdLabels(NvmlHost());
  EXPECT_NE(labels.find("nvidia.com/mig.capable=true\n"), std::string::npos) << labels;
  EXPECT_NE(labels.find("nvidia.com/gpu.family=ampere\n"), std::string::npos) << labels;
  EXPECT_NE(labels.find("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB\n"), std::string::npos);
  EXPECT_NE(labels.find("nvidia.com/cuda.driver.rev=15\n"), std::string::npos) << labels;
  // NVML asked, no MIG mode answered: not MIG-capable.
  Fingerprint fp = NvmlHost();
  for (GpuInfo& g : fp.gpus) g.mig = {};
  labels = RenderGfdLabels(fp);
  EXPECT_NE(labels.find("nvidia.com/mig.capable=false\n"), std::string::npos) << labels;
}

TEST(ExportTest, LabelsOfOlderFixtureHosts) {
  std::string v100 = RenderGfdLabels(CollectFixture("v100-cuda11.0"));
  EXPECT_NE(v100.find("nvidia.com/gpu.family=volta\n"), std::string::npos) << v100;
  EXPECT_NE(v100.find("nvidia.com/gpu.compute.major=7\n"), std::string::npos) << v100;
  std::string a100 = RenderGfdLabels(CollectFixture("a100-cuda11.8"));
  EXPECT_NE(a100.find("nvidia.com/gpu.family=ampere\n"), std::string::npos) << a100;
  // A product name keeps no character a Kubernetes label value may not hold.
  Fingerprint fp = NvmlHost();
  fp.gpus[0].name = "Odd GPU (rev/2)";
  std::string odd = RenderGfdLabels(fp);
  EXPECT_NE(odd.find("nvidia.com/gpu.product=Odd-GPU-_rev_2_\n"), std::string::npos) << odd;
}

TEST(ExportTest, LabelsOfBlackwellAndMigFixtureHosts) {
  EXPECT_EQ(RenderGfdLabels(CollectFixture("b200-cuda12.8")),
            "nvidia.com/cuda.driver-version.full=570.124.06\n"
            "nvidia.com/cuda.driver-version.major=570\n"
            "nvidia.com/cuda.driver-version.minor=124\n"
            "nvidia.com/cuda.driver-version.revision=06\n"
            "nvidia.com/cuda.driver.major=570\n"
            "nvidia.com/cuda.driver.minor=124\n"
            "nvidia.com/cuda.driver.rev=06\n"
            "nvidia.com/cuda.runtime-version.full=12.8\n"
            "nvidia.com/cuda.runtime-version.major=12\n"
            "nvidia.com/cuda.runtime-version.minor=8\n"
            "nvidia.com/cuda.runtime.major=12\n"
            "nvidia.com/cuda.runtime.minor=8\n"
            "nvidia.com/gpu.compute.major=10\n"
            "nvidia.com/gpu.compute.minor=0\n"
            "nvidia.com/gpu.count=2\n"
            "nvidia.com/gpu.family=blackwell\n"
            "nvidia.com/gpu.memory=184320\n"
            "nvidia.com/gpu.product=NVIDIA-B200\n");
  // MIG instances seen in the capability files make the host MIG-capable, and give a gauge.
  Fingerprint mig = CollectFixture("a100-mig");
  std::string labels = RenderGfdLabels(mig);
  EXPECT_NE(labels.find("nvidia.com/mig.capable=true\n"), std::string::npos) << labels;
  std::string text = RenderPrometheus(mig);
  EXPECT_NE(text.find("\ncutover_gpu_mig_enabled{index=\"0\",uuid=\"GPU-2b8f4e1a-7c3d-4e5f-a6b7-"
                      "c8d9e0f1a2b3\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cutover_gpu_mig_enabled{index=\"1\""), std::string::npos) << text;
}

TEST(ExportTest, LabelsWithoutDriverOrGpusAreEmpty) {
  EXPECT_EQ(RenderGfdLabels(CollectFixture("no-driver")), "");
  Fingerprint fp;
  fp.driver.version = "570.86";  // two-part versions have an empty revision, as in GFD
  EXPECT_EQ(RenderGfdLabels(fp),
            "nvidia.com/cuda.driver-version.full=570.86\n"
            "nvidia.com/cuda.driver-version.major=570\n"
            "nvidia.com/cuda.driver-version.minor=86\n"
            "nvidia.com/cuda.driver-version.revision=\n"
            "nvidia.com/cuda.driver.major=570\n"
            "nvidia.com/cuda.driver.minor=86\n"
            "nvidia.com/cuda.driver.rev=\n");
}

TEST(ExportTest, GpuFamilies) {
  EXPECT_EQ(GpuFamily("6.0"), "pascal");
  EXPECT_EQ(GpuFamily("7.0"), "volta");
  EXPECT_EQ(GpuFamily("7.2"), "volta");
  EXPECT_EQ(GpuFamily("7.5"), "turing");
  EXPECT_EQ(GpuFamily("8.0"), "ampere");
  EXPECT_EQ(GpuFamily("8.6"), "ampere");
  EXPECT_EQ(GpuFamily("9.0"), "hopper");
  EXPECT_EQ(GpuFamily("10.0"), "blackwell");
  EXPECT_EQ(GpuFamily("12.0"), "blackwell");
  EXPECT_EQ(GpuFamily("11.0"), "undefined");
  EXPECT_EQ(GpuFamily("9"), "undefined");
  EXPECT_EQ(GpuFamily("x.y"), "undefined");
  EXPECT_EQ(GpuFamily(""), "undefined");
}

}  // namespace
}  // namespace cutover::probe
