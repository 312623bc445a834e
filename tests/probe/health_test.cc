// probe health: Xid lines in the log formats users have, and the verdict rules on a fixture
// host's fingerprint.
#include "probe/health.h"

#include <fstream>

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "probe/collect.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

Fingerprint H100Host() {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/h100-cuda12.4");
  Result<Fingerprint> fp = Collect(fs, CollectOptions{});
  EXPECT_TRUE(fp.ok()) << fp.status().ToString();
  EXPECT_EQ(fp->gpus.size(), 2u);
  return *fp;
}

TEST(HealthTest, XidLinesFromDmesgKmsgAndJournal) {
  const std::string log =
      "[ 1234.567890] NVRM: Xid (PCI:0000:18:00): 79, pid=4242, name=python, GPU has fallen off "
      "the bus.\n"
      "[ 1235.000000] nvidia-nvswitch: unrelated line\n"
      "3,1234,56789012,-;NVRM: Xid (PCI:0000:2a:00): 48, pid=17, An uncorrectable double bit "
      "error (DBE) has been detected\r\n"
      "Dec 03 10:00:00 gpu-node kernel: NVRM: Xid (PCI:0000:18:00): 13, pid=9, Graphics "
      "Exception\n"
      "NVRM: Xid (PCI:0000:18:00): notanumber\n"
      "NVRM: Xid (PCI:): 5\n"
      "NVRM: Xid (PCI:0000:18:00";
  auto x = ParseXidEvents(log);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0].pci, "0000:18:00");
  EXPECT_EQ(x[0].xid, 79);
  EXPECT_EQ(x[0].text.rfind("NVRM: Xid (PCI:0000:18:00): 79, pid=4242", 0), 0u) << x[0].text;
  EXPECT_EQ(x[1].xid, 48);
  EXPECT_EQ(x[1].text.back(), 'd') << "the CR is trimmed";
  EXPECT_EQ(x[2].xid, 13);
  EXPECT_TRUE(ParseXidEvents("").empty());
}

TEST(HealthTest, AHealthyHostAndAnApplicationXidStayHealthy) {
  Fingerprint fp = H100Host();
  auto r = JudgeHealth(fp, ParseXidEvents("NVRM: Xid (PCI:0000:18:00): 13, pid=1, x\n"), "test");
  EXPECT_TRUE(r.AllHealthy()) << RenderHealthTable(r);
  EXPECT_EQ(r.gpus[0].verdict, "healthy");
  ASSERT_FALSE(r.gpus[0].findings.empty());
  EXPECT_EQ(r.gpus[0].findings.back().what,
            "Xid 13: graphics engine exception (usually the application)");
  CUTOVER_EXPECT_VALID(HealthToJson(r), "health-1.json");
}

TEST(HealthTest, EachRuleGivesItsVerdict) {
  struct Case {
    std::string name;
    std::function<void(GpuInfo&)> change;
    std::string log;
    std::string verdict;
    std::string finding;
  };
  const std::vector<Case> cases = {
      {"remap failure", [](GpuInfo& g) { g.remapped_rows.failure = true; }, "", "failed",
       "row remapping failed"},
      {"remap pending", [](GpuInfo& g) { g.remapped_rows.pending = true; }, "", "degraded",
       "row remapping pending"},
      {"volatile ECC", [](GpuInfo& g) { g.ecc.volatile_uncorrected = 3; }, "", "degraded",
       "3 uncorrected ECC errors since boot"},
      {"hw slowdown", [](GpuInfo& g) { g.throttle_reasons = {"hw_slowdown"}; }, "", "degraded",
       "throttled: hw_slowdown"},
      {"power cap only", [](GpuInfo& g) { g.throttle_reasons = {"sw_power_cap"}; }, "", "healthy",
       "throttled: sw_power_cap (at its power limit)"},
      {"narrow link",
       [](GpuInfo& g) {
         g.pcie.width_current = 8;
         g.pcie.width_max = 16;
       },
       "", "degraded", "PCIe link x8 of x16"},
      {"idle gen",
       [](GpuInfo& g) {
         g.pcie.gen_current = 1;
         g.pcie.gen_max = 5;
       },
       "", "healthy", "PCIe gen 1 of 5 (normal while idle; check under load)"},
      {"persistence off", [](GpuInfo& g) { g.persistence_mode = false; }, "", "healthy",
       "persistence mode off (slower first CUDA call, state lost between jobs)"},
      {"xid 79 (hex case differs)", [](GpuInfo&) {},
       "NVRM: Xid (PCI:0000:1a:00): 79, pid=1, GPU has fallen off the bus.\n", "failed",
       "Xid 79: GPU has fallen off the bus"},
      {"page retirement pending", [](GpuInfo& g) { g.retired_pages.pending = true; }, "",
       "degraded", "page retirement pending"},
      {"a few retired pages",
       [](GpuInfo& g) {
         g.retired_pages.single_bit = 3;
         g.retired_pages.double_bit = 1;
         g.retired_pages.pending = false;
       },
       "", "healthy", "4 retired pages"},
      {"retired pages at the threshold",
       [](GpuInfo& g) {
         g.retired_pages.single_bit = 58;
         g.retired_pages.double_bit = 2;
       },
       "", "failed", "60 retired pages (58 single-bit, 2 double-bit)"},
      {"xid 94", [](GpuInfo&) {}, "NVRM: Xid (PCI:0000:1a:00): 94, pid=1, Contained\n", "degraded",
       "Xid 94: contained ECC error (restart the application)"},
  };
  for (const Case& c : cases) {
    Fingerprint fp = H100Host();
    fp.gpus[0].pcie = {};
    fp.gpus[0].pci_bus_id = "00000000:1A:00.0";  // logged in lower case below
    c.change(fp.gpus[0]);
    auto r = JudgeHealth(fp, ParseXidEvents(c.log), "test");
    EXPECT_EQ(r.gpus[0].verdict, c.verdict) << c.name << "\n" << RenderHealthTable(r);
    bool found = false;
    for (const auto& f : r.gpus[0].findings) found = found || f.what == c.finding;
    EXPECT_TRUE(found) << c.name << "\n" << RenderHealthTable(r);
    EXPECT_EQ(r.gpus[1].verdict, "healthy") << c.name << ": only GPU 0 was changed";
    EXPECT_EQ(r.AllHealthy(), c.verdict == "healthy") << c.name;
  }
}

TEST(HealthTest, AnXidOnAGpuMissingFromTheFingerprintStillCounts) {
  Fingerprint fp = H100Host();
  auto r = JudgeHealth(
      fp, ParseXidEvents("NVRM: Xid (PCI:0000:99:00): 79, pid=1, GPU has fallen off the bus.\n"),
      "test");
  EXPECT_EQ(r.gpus[0].verdict, "healthy");
  ASSERT_EQ(r.unmatched_xids.size(), 1u);
  EXPECT_FALSE(r.AllHealthy());
  EXPECT_NE(RenderHealthTable(r).find("Xid 79 on 0000:99:00 (no such GPU now)"), std::string::npos);
  CUTOVER_EXPECT_VALID(HealthToJson(r), "health-1.json");
}

TEST(HealthTest, CollectAttachesXidsToTheirGpusAndReportsTheRest) {
  testing::TempDir root;
  ASSERT_EQ(testing::RunShell("cp -a " + testing::SourceDir() +
                              "/tests/fixtures/hosts/h100-cuda12.4/. " + root.path()),
            0);
  ASSERT_EQ(testing::RunShell("mkdir -p " + root.Join("var/log")), 0);
  {
    std::ofstream log(root.Join("var/log/kern.log"));
    log << "Dec  3 10:00:00 node kernel: NVRM: Xid (PCI:0000:18:00): 94, pid=7, Contained\n"
        << "Dec  3 10:00:01 node kernel: NVRM: Xid (PCI:0000:99:00): 79, pid=1, off the bus\n";
  }
  RealFileSystem fs(root.path());
  Fingerprint fp = Collect(fs, CollectOptions{});
  CUTOVER_EXPECT_VALID_FINGERPRINT(FingerprintToJson(fp));
  EXPECT_EQ(fp.collection.kernel_log, "/var/log/kern.log");
  ASSERT_EQ(fp.gpus.size(), 2u);
  int with_xid = 0;
  for (const GpuInfo& g : fp.gpus) {
    if (g.xid_events.empty()) continue;
    ++with_xid;
    ASSERT_EQ(g.xid_events.size(), 1u);
    EXPECT_EQ(g.xid_events[0].xid, 94);
    EXPECT_EQ(g.xid_events[0].text, "NVRM: Xid (PCI:0000:18:00): 94, pid=7, Contained");
    EXPECT_TRUE(SamePciDevice("0000:18:00", g.pci_bus_id.value_or("")));
  }
  EXPECT_EQ(with_xid, 1);
  bool unmatched = false;
  for (const Finding& f : fp.collection.findings) {
    if (f.code != "gpu.xid_unmatched") continue;
    unmatched = true;
    EXPECT_EQ(f.severity, "warning");
    EXPECT_EQ(f.message,
              "Xid 79 (GPU has fallen off the bus) on PCI 0000:99:00, which is not a GPU found "
              "now: NVRM: Xid (PCI:0000:99:00): 79, pid=1, off the bus");
  }
  EXPECT_TRUE(unmatched);
  // A saved fingerprint carries its Xids into `probe health`.
  Result<Fingerprint> back = FingerprintFromJson(FingerprintToJson(fp));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->gpus[0].xid_events, fp.gpus[0].xid_events);
  EXPECT_EQ(back->gpus[1].xid_events, fp.gpus[1].xid_events);
}

}  // namespace
}  // namespace cutover::probe
