#include "probe/live_driver.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace cutover::probe {
namespace {

LiveDriverOptions FakeOptions() {
  LiveDriverOptions o;
  o.nvml_library = CUTOVER_FAKE_NVML_PATH;
  o.cuda_library = CUTOVER_FAKE_NVML_PATH;
  o.timeout_ms = 3000;
  return o;
}

TEST(LiveDriverTest, ReadsEveryFieldThroughTheSymbolTableInAChild) {
  LiveDriverResult r = QueryLiveDriver(FakeOptions());
  EXPECT_EQ(r.driver.status, "ok");
  EXPECT_EQ(r.driver.version, "550.54.14");
  EXPECT_EQ(r.driver.cuda_version, "12.4");
  EXPECT_EQ(r.driver.source, "nvml");
  ASSERT_EQ(r.gpus.size(), 1u);
  const GpuInfo& g = r.gpus[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31");
  EXPECT_EQ(g.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(g.pci_device_id, "0x2330");
  EXPECT_EQ(g.compute_capability, "9.0");
  EXPECT_EQ(g.memory_mib, 81559u);
  EXPECT_EQ(g.ecc.enabled, true);
  EXPECT_EQ(g.ecc.volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_uncorrected, 2u);
  EXPECT_EQ(g.remapped_rows.pending, true);
  EXPECT_EQ(g.remapped_rows.failure, false);
  EXPECT_EQ(g.mig.enabled, false);
  EXPECT_EQ(g.mig.instances, 0);
  EXPECT_EQ(g.pcie.gen_current, 5);
  EXPECT_EQ(g.pcie.width_current, 8);
  EXPECT_EQ(g.pcie.width_max, 16);
  EXPECT_EQ(g.power_limit_w, 700.0);
  EXPECT_EQ(g.throttle_reasons, (std::vector<std::string>{"gpu_idle", "sw_power_cap"}));
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.nvlink_active, (std::vector<bool>{true, true, false, true}));
  EXPECT_FALSE(g.vbios.has_value());
  EXPECT_EQ(g.retired_pages.single_bit, 2u);
  EXPECT_EQ(g.retired_pages.double_bit, 1u);
  EXPECT_EQ(g.retired_pages.pending, true);
  EXPECT_EQ(r.driver.sharing.virtualization_mode, "passthrough");
  bool saw_missing = false;
  for (const Finding& f : r.findings) {
    if (f.code == "nvml.symbol_missing" &&
        f.message.find("optional symbol nvmlDeviceGetVbiosVersion missing") != std::string::npos) {
      saw_missing = true;
    }
  }
  EXPECT_TRUE(saw_missing);
}

TEST(LiveDriverTest, MissingLibraryIsStatusMissingWithTheReason) {
  LiveDriverOptions o;
  o.nvml_library = "libnvidia-ml-does-not-exist.so.1";
  o.cuda_library = "libcuda-does-not-exist.so.1";
  LiveDriverResult r = QueryLiveDriver(o);
  EXPECT_EQ(r.driver.status, "missing");
  EXPECT_EQ(r.driver.error,
            "libnvidia-ml-does-not-exist.so.1: cannot open shared object file: No such file or "
            "directory");
  EXPECT_TRUE(r.gpus.empty());
}

TEST(LiveDriverTest, RequiredSymbolMissingIsAnError) {
  LiveDriverOptions o;
  o.nvml_library = "libc.so.6";  // loads, but has no NVML symbols
  o.cuda_library = "libc.so.6";
  LiveDriverResult r = QueryLiveDriver(o);
  EXPECT_EQ(r.driver.status, "error");
  EXPECT_EQ(r.driver.error, "libc.so.6: required symbol nvmlInit_v2 missing");
}

TEST(LiveDriverTest, InitFailureIsReportedWithNvmlsErrorString) {
  ::setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  LiveDriverResult r = QueryLiveDriver(FakeOptions());
  ::unsetenv("FAKE_NVML_INIT_FAIL");
  EXPECT_EQ(r.driver.status, "error");
  EXPECT_EQ(r.driver.error, "nvmlInit failed: Driver Not Loaded (9)");
  EXPECT_EQ(r.driver.cuda_version, "12.4");  // still known from libcuda
}

TEST(LiveDriverTest, AHangingDriverTimesOutInsteadOfHangingTheProbe) {
  ::setenv("FAKE_NVML_HANG", "1", 1);
  LiveDriverOptions o = FakeOptions();
  o.timeout_ms = 300;
  LiveDriverResult r = QueryLiveDriver(o);
  ::unsetenv("FAKE_NVML_HANG");
  EXPECT_EQ(r.driver.status, "error");
  EXPECT_EQ(r.driver.error, "NVML query timed out after 300 ms");
}

TEST(LiveDriverTest, ThrottleReasonNamesKnownAndUnknownBits) {
  EXPECT_EQ(ThrottleReasonNames(0), std::vector<std::string>{});
  EXPECT_EQ(ThrottleReasonNames(0x48),
            (std::vector<std::string>{"hw_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(ThrottleReasonNames(0x1000), std::vector<std::string>{"other_0x1000"});
}

}  // namespace
}  // namespace cutover::probe
