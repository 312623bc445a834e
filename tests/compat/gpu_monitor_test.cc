// The GPU beside a soak's timings (compat/gpu_monitor.h) with a fake NVML seam: how samples fold
// into a case's interference, the sampling thread, a soak that records what the fake GPU did,
// and the stability verdict naming it. NVML itself is proven on a GPU host (bench/device/run.sh
// soaks the GEMM cases); here only its absence is.
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

#include <gtest/gtest.h>

#include "compat/gpu_monitor.h"
#include "compat/soak.h"
#include "compat/stability.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

// Hands out scripted samples in turn (the last one again when they run out).
class ScriptedGpu : public GpuMonitor {
 public:
  explicit ScriptedGpu(std::vector<GpuSample> script) : script_(std::move(script)) {}
  GpuSample Sample() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
    const size_t i = std::min(next_++, script_.size() - 1);
    return script_[i];
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::vector<GpuSample> script_;
  size_t next_ = 0;
  int calls_ = 0;
};

GpuSample Reading(double sm, double mem, int64_t reasons, double temp, double watts, int procs) {
  return GpuSample{.sm_mhz = sm,
                   .mem_mhz = mem,
                   .reasons = reasons,
                   .temperature_c = temp,
                   .power_w = watts,
                   .processes = procs};
}

TEST(AccumulateGpu, FoldsClocksReasonsPeaksAndOtherProcesses) {
  Interference f;
  AccumulateGpu(Reading(1980, 2619, 0x1, 41, 120.5, 1), &f);
  EXPECT_TRUE(f.measured);
  EXPECT_EQ(f.sm_clock_min_mhz, 1980);
  EXPECT_EQ(f.sm_clock_max_mhz, 1980);
  EXPECT_EQ(f.throttle_reasons, 0);  // idle is not interference
  EXPECT_EQ(f.other_processes, 0);   // the one process is the sampling one
  AccumulateGpu(Reading(1410, 2619, 0x4 | 0x2, 77, 699.0, 3), &f);
  AccumulateGpu(Reading(1755, 2600, 0x40, 60, 500.0, 2), &f);
  EXPECT_EQ(f.sm_clock_min_mhz, 1410);
  EXPECT_EQ(f.sm_clock_max_mhz, 1980);
  EXPECT_EQ(f.mem_clock_min_mhz, 2600);
  EXPECT_EQ(f.throttle_reasons, 0x44);  // power cap and HW thermal; app clocks (0x2) dropped
  EXPECT_EQ(f.temperature_max_c, 77);
  EXPECT_EQ(f.power_max_w, 699.0);
  EXPECT_EQ(f.other_processes, 2);
}

TEST(AccumulateGpu, UnreadableFieldsStayUnmeasured) {
  Interference f;
  AccumulateGpu(GpuSample{}, &f);
  EXPECT_TRUE(f.measured);
  EXPECT_EQ(f.sm_clock_min_mhz, -1);
  EXPECT_EQ(f.throttle_reasons, -1);
  EXPECT_EQ(f.temperature_max_c, -1);
  EXPECT_EQ(f.other_processes, -1);
}

TEST(GpuSampling, SamplesAtStartEveryPeriodAndAtTheEnd) {
  ScriptedGpu gpu({Reading(1980, 2619, 0, 40, 100, 1), Reading(1500, 2619, 0x8, 80, 650, 2)});
  Interference f;
  {
    const GpuSampling watch(&gpu, &f, std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }
  EXPECT_GE(gpu.calls(), 4);
  EXPECT_EQ(f.sm_clock_min_mhz, 1500);
  EXPECT_EQ(f.throttle_reasons, 0x8);
  EXPECT_EQ(f.other_processes, 1);
  // A long period still gives the first and the last sample.
  ScriptedGpu slow({Reading(1980, 2619, 0, 40, 100, 1), Reading(1200, 2619, 0x20, 85, 700, 1)});
  Interference g;
  { const GpuSampling watch(&slow, &g, std::chrono::hours(1)); }
  EXPECT_EQ(slow.calls(), 2);
  EXPECT_EQ(g.sm_clock_min_mhz, 1200);
  EXPECT_EQ(g.throttle_reasons, 0x20);
}

TEST(GpuSampling, ANullMonitorSamplesNothing) {
  Interference f;
  { const GpuSampling watch(nullptr, &f); }
  EXPECT_FALSE(f.measured);
}

TEST(OpenNvmlMonitor, AMissingLibraryIsAnEnvironmentError) {
  Result<std::unique_ptr<GpuMonitor>> m =
      OpenNvmlMonitor("0000:3b:00.0", "/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kEnvironment);
  EXPECT_NE(m.status().message().find("NVML: /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << m.status().message();
}

// A soak of one CPU case with a fake GPU that throttles: each case's interference of rounds 1
// and later holds what the GPU did, and the verdict against a quiet side names it.
TEST(SoakWithGpu, RecordsTheGpuAndTheVerdictNamesIt) {
  testing::TempDir dir;
  ScriptedGpu gpu({Reading(1980, 2619, 0, 45, 300, 1), Reading(1395, 2619, 0x4, 83, 700, 2)});
  SoakOptions o;
  o.run.record_path = dir.Join("gpu.rec");
  o.run.header =
      CompatRecord{.backend = "cpu", .suite = "quick", .accumulate = "fp32", .threads = 1};
  o.run.cases = {{.op = "softmax", .dtype = "fp32", .shape = {64, 256}, .layout = "row-major"}};
  o.run.config.cpu.threads = 1;
  o.duration = std::chrono::seconds(1);
  o.reps_per_round = 5;
  o.gpu = &gpu;
  Result<SoakResult> r = RunSoak(o, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->record.cases.size(), 1u);
  const CaseResult& c = r->record.cases[0];
  EXPECT_GE(gpu.calls(), 2 * (r->rounds - 1));  // at least the first and last of each round
  const Interference& f = c.timing.interference;
  EXPECT_EQ(f.sm_clock_min_mhz, 1395);
  EXPECT_EQ(f.sm_clock_max_mhz, 1980);
  EXPECT_EQ(f.throttle_reasons, 0x4);
  EXPECT_EQ(f.temperature_max_c, 83);
  EXPECT_EQ(f.power_max_w, 700);
  EXPECT_EQ(f.other_processes, 1);
  // The record keeps it: read back, it names the cause against a quiet source.
  Result<CompatRecord> back = LoadRecord(o.run.record_path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  CaseResult quiet = c;
  quiet.timing.interference = Interference{.measured = true, .wall_s = 1};
  const std::string cause = StabilityCause(quiet, back->cases[0], CompatRecord{}, CompatRecord{});
  EXPECT_NE(cause.find("GPU clocks throttled on the target (clock-event reasons 0x4)"),
            std::string::npos)
      << cause;
  EXPECT_NE(cause.find("GPU SM clock varied 1395-1980 MHz on the target"), std::string::npos)
      << cause;
  EXPECT_NE(cause.find("1 other process(es) on the target's GPU"), std::string::npos) << cause;
}

}  // namespace
}  // namespace cutover
