// Tests of compat/device_runner.h: the host side of a device run, end to end, against the fake
// plugin of tests/compat/fake_plugin.c, which runs "copy" and an fp32 "gemm" on the CPU. This
// checks what the host does with a plugin (inputs, statuses, samples, truth, timing, record),
// never what a GPU computes: tests/compat/cuda_plugin_test.cc does that on a GPU.
#include "compat/device_runner.h"

#include <cmath>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compat/compare.h"
#include "compat/suite_run.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::testing::HasSubstr;

class DeviceRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("CUTOVER_FAKE_DEVICES", "1", 1);
    ::unsetenv("CUTOVER_FAKE_FLIP_LAST");
    Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    backend_.emplace(std::move(*r));
    ASSERT_TRUE(backend_->Init().ok());
    cfg_.warmup = 1;
    cfg_.reps = 3;
  }
  void TearDown() override {
    ::unsetenv("CUTOVER_FAKE_DEVICES");
    ::unsetenv("CUTOVER_FAKE_FLIP_LAST");
  }
  CaseResult Run(const CaseSpec& spec) {
    return RunDeviceCase(backend_->table(), *FindOp(spec.op), spec, cfg_);
  }
  std::optional<LoadedBackend> backend_;
  DeviceRunConfig cfg_;
};

TEST_F(DeviceRunnerTest, CopyMatchesTheCpuBackendBitForBit) {
  CaseSpec spec{"copy", "fp32", {5000}, "row-major", 1};
  CaseResult dev = Run(spec);
  ASSERT_EQ(dev.status, "ok") << dev.error;
  RunConfig cpu_cfg;
  cpu_cfg.reps = 1;
  CaseResult cpu = RunCpuCase(*FindOp("copy"), spec, cpu_cfg);
  EXPECT_EQ(dev.id, spec.Id());
  EXPECT_EQ(dev.output_count, 5000u);
  EXPECT_EQ(dev.digest, cpu.digest);
  EXPECT_EQ(dev.tiles, cpu.tiles);
  EXPECT_EQ(dev.sample_index, cpu.sample_index);
  EXPECT_EQ(dev.sample_value, cpu.sample_value);
  EXPECT_EQ(dev.sample_truth, cpu.sample_truth);
  EXPECT_EQ(dev.bytes, cpu.bytes);
  EXPECT_TRUE(dev.deterministic);
  ASSERT_EQ(dev.timing.reps_s.size(), 3u);
  for (double t : dev.timing.reps_s) EXPECT_GE(t, 0.0);
  EXPECT_EQ(dev.timing.rate_unit, "GB/s");
  EXPECT_LE(dev.timing.p10_s, dev.timing.median_s);
  EXPECT_LE(dev.timing.median_s, dev.timing.p90_s);
}

TEST_F(DeviceRunnerTest, GemmSamplesCarryFloat64TruthWithinTolerance) {
  CaseSpec spec{"gemm", "fp32", {24, 40, 56}, "row-major", 7};
  CaseResult r = Run(spec);
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_EQ(r.output_count, 24u * 40u);
  EXPECT_EQ(r.reduction_length, 56);
  EXPECT_EQ(r.flops, 2.0 * 24 * 40 * 56);
  EXPECT_EQ(r.timing.rate_unit, "GFLOP/s");
  ASSERT_EQ(r.sample_index.size(), 24u * 40u);  // all of them: fewer than kDefaultSamples
  const Tolerance tol = ToleranceFor("fp32", 56);
  for (size_t i = 0; i < r.sample_index.size(); ++i) {
    EXPECT_LE(std::abs(r.sample_value[i] - r.sample_truth[i]),
              tol.atol + tol.rtol * std::abs(r.sample_truth[i]))
        << "at " << r.sample_index[i];
  }
  EXPECT_EQ(r.nan_count, 0u);
}

TEST_F(DeviceRunnerTest, AnOpThePluginLacksIsMissing) {
  CaseResult r = Run({"softmax", "fp32", {4, 16}, "row-major", 1});
  EXPECT_EQ(r.status, "missing");
  EXPECT_EQ(r.error, "fake: no op 'softmax'");
}

TEST_F(DeviceRunnerTest, ACaseWithNoMeaningOnTheDeviceIsNotApplicable) {
  CaseResult r = Run({"gemm", "fp8_e4m3", {16, 16, 16}, "row-major", 1});
  EXPECT_EQ(r.status, "n/a");
  EXPECT_EQ(r.error, "fake: fp8 gemm needs compute capability 8.9");
}

TEST_F(DeviceRunnerTest, APluginErrorIsAnErrorCaseWithItsReason) {
  OpDescriptor bad = *FindOp("gemm");
  bad.make_inputs = [](const CaseSpec&) -> Tensors { return {{1, 2, 3}, {4}}; };
  CaseResult r =
      RunDeviceCase(backend_->table(), bad, {"gemm", "fp32", {2, 2, 2}, "row-major", 1}, cfg_);
  EXPECT_EQ(r.status, "error");
  EXPECT_EQ(r.error, "fake: gemm inputs do not fit");
}

TEST_F(DeviceRunnerTest, DifferingRunsAreNotDeterministic) {
  ::setenv("CUTOVER_FAKE_FLIP_LAST", "1", 1);
  CaseResult r = Run({"copy", "fp32", {64}, "row-major", 1});
  ASSERT_EQ(r.status, "ok") << r.error;
  EXPECT_FALSE(r.deterministic);
}

TEST_F(DeviceRunnerTest, DeviceInfoNamesTheDeviceLibrariesTf32AndCalibration) {
  Result<BackendCalibration> cal = backend_->Calibrate(0);
  ASSERT_TRUE(cal.ok()) << cal.status().ToString();
  Result<nlohmann::json> info = DeviceRecordInfo(*backend_, 0, &*cal);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  const nlohmann::json& d = *info;
  EXPECT_EQ(d["name"], "Fake GPU 0");
  EXPECT_EQ(d["sm_count"], 132);
  EXPECT_EQ(d["compute_capability"], "9.0");
  EXPECT_EQ(d["device_count"], 1);
  EXPECT_EQ(d["libraries"]["summary"],
            "CUDA runtime 13.0, CUDA driver 13.1, cuBLAS 13.1.0, cuBLASLt 13.1.0, cuDNN 9.19.0, "
            "NCCL 2.28.9");
  EXPECT_THAT(d["tf32"]["fp32_cases"].get<std::string>(), HasSubstr("off"));
  EXPECT_EQ(d["calibration"]["copy_bytes"], uint64_t{16} << 20);
  Result<nlohmann::json> none = DeviceRecordInfo(*backend_, 0, nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->contains("calibration"));
  Result<nlohmann::json> bad = DeviceRecordInfo(*backend_, 3, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "fake: no such device");
}

TEST_F(DeviceRunnerTest, ASuiteRunWritesARecordThatComparesWithTheCpuBackend) {
  testing::TempDir dir;
  const std::vector<CaseSpec> cases = {{"copy", "fp32", {3000}, "row-major", 1},
                                       {"gemm", "fp32", {16, 32, 64}, "row-major", 1},
                                       {"reduce_max", "fp32", {8, 64}, "row-major", 1}};
  SuiteRunOptions dev;
  dev.record_path = dir.Join("cuda.rec");
  dev.header = {.backend = "cuda",
                .suite = "quick",
                .accumulate = "fp32",
                .threads = 0,
                .created_at = "2026-12-05T00:00:00Z"};
  Result<nlohmann::json> info = DeviceRecordInfo(*backend_, 0, nullptr);
  ASSERT_TRUE(info.ok());
  dev.header.device = *info;
  // The cuda ceilings: fp32 cases are measured against the fp32 GEMM, not the bf16 one.
  dev.header.calibration = {.measured = true,
                            .copy_gbps = 50.0,
                            .gemm_gflops = 2.0,
                            .gemm_bf16_gflops = 40.0,
                            .gemm_bf16_size = 8192};
  dev.cases = cases;
  const CutoverCompatPlugin* table = &backend_->table();
  DeviceRunConfig cfg = cfg_;
  dev.run_case = [table, cfg](const OpDescriptor& op, const CaseSpec& c) {
    return RunDeviceCase(*table, op, c, cfg);
  };
  Result<SuiteRunResult> ran = RunSuiteToRecord(dev, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_EQ(ran->ran, 3u);
  Result<CompatRecord> loaded = LoadRecord(dir.Join("cuda.rec"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->backend, "cuda");
  EXPECT_EQ(loaded->device["name"], "Fake GPU 0");
  ASSERT_EQ(loaded->cases.size(), 3u);
  EXPECT_EQ(loaded->cases[2].status, "missing");
  EXPECT_EQ(loaded->calibration.gemm_bf16_gflops, 40.0);
  EXPECT_DOUBLE_EQ(loaded->cases[0].timing.fraction_of_ceiling,
                   loaded->cases[0].timing.rate / 50.0);
  EXPECT_DOUBLE_EQ(loaded->cases[1].timing.fraction_of_ceiling, loaded->cases[1].timing.rate / 2.0);
  CUTOVER_EXPECT_VALID(RecordToJson(*loaded), "compat-record-1.json");

  SuiteRunOptions cpu = dev;
  cpu.record_path = dir.Join("cpu.rec");
  cpu.header.backend = "cpu";
  cpu.header.threads = 2;
  cpu.header.device = nullptr;
  cpu.run_case = nullptr;
  cpu.config.reps = 2;
  ASSERT_TRUE(RunSuiteToRecord(cpu, nullptr).ok());
  Result<CompatRecord> cpu_rec = LoadRecord(dir.Join("cpu.rec"));
  ASSERT_TRUE(cpu_rec.ok()) << cpu_rec.status().ToString();
  ASSERT_TRUE(CheckComparable(*cpu_rec, *loaded, "cpu.rec", "cuda.rec").ok());
  Comparison c = CompareRecords(*cpu_rec, *loaded);
  ASSERT_EQ(c.cases.size(), 3u);
  EXPECT_EQ(c.cases[0].verdict, Verdict::kIdentical) << c.cases[0].reason;
  EXPECT_TRUE(c.cases[1].verdict == Verdict::kIdentical ||
              c.cases[1].verdict == Verdict::kEquivalent)
      << VerdictName(c.cases[1].verdict) << ": " << c.cases[1].reason;
  EXPECT_EQ(c.cases[2].verdict, Verdict::kMissing);
  EXPECT_EQ(c.cases[2].reason, "target: fake: no op 'reduce_max'");
}

// The op table's collectives (compat/op.h) over 3 fake devices: rank 0's receive buffer with
// CollectiveTruth over the ranks that took part, and nccl-tests' bus bandwidth.
TEST_F(DeviceRunnerTest, CollectivesOverSeveralDevicesFollowTheRankCount) {
  ::setenv("CUTOVER_FAKE_DEVICES", "3", 1);
  backend_.reset();
  Result<LoadedBackend> r = LoadBackendFile(CUTOVER_TEST_PLUGIN_FAKE);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  backend_.emplace(std::move(*r));
  ASSERT_TRUE(backend_->Init().ok());
  cfg_.device_count = 3;
  const OpDescriptor* reduce_op = FindOp("all_reduce");
  const OpDescriptor* gather_op = FindOp("all_gather");
  ASSERT_NE(reduce_op, nullptr);
  ASSERT_NE(gather_op, nullptr);
  const CaseSpec reduce{"all_reduce", "fp32", {100000}, "row-major", 1};
  const std::vector<float> x0 = reduce_op->make_inputs(reduce)[0];
  CaseResult sum = RunDeviceCase(backend_->table(), *reduce_op, reduce, cfg_);
  ASSERT_EQ(sum.status, "ok") << sum.error;
  EXPECT_EQ(sum.output_count, 100000u);
  for (size_t i = 0; i < sum.sample_index.size(); ++i) {
    const int64_t at = static_cast<int64_t>(sum.sample_index[i]);
    const double x = x0[at];
    EXPECT_DOUBLE_EQ(sum.sample_truth[i], CollectiveTruth("all_reduce", "fp32", x0, 3, 0, at));
    EXPECT_NEAR(sum.sample_truth[i], 6 * x, 1e-6 * std::fabs(6 * x));  // 1x + 2x + 3x
    EXPECT_NEAR(sum.sample_value[i], sum.sample_truth[i], 1e-6 * std::fabs(6 * x) + 1e-30);
  }
  // Bus bandwidth: the algorithm bandwidth of 400000 bytes times 2(n-1)/n.
  ASSERT_GT(sum.timing.median_s, 0.0);
  EXPECT_DOUBLE_EQ(sum.timing.rate, 400000.0 / sum.timing.median_s / 1e9 * (4.0 / 3));
  const CaseSpec gather{"all_gather", "fp32", {10000}, "row-major", 1};
  const std::vector<float> g0 = gather_op->make_inputs(gather)[0];
  CaseResult all = RunDeviceCase(backend_->table(), *gather_op, gather, cfg_);
  ASSERT_EQ(all.status, "ok") << all.error;
  ASSERT_EQ(all.output_count, 30000u);  // n blocks, not the one-rank size
  for (size_t i = 0; i < all.sample_index.size(); ++i) {
    const uint64_t at = all.sample_index[i];
    // Rank r's block: x0 * (r + 1), rounded to the dtype (float32) as it was sent.
    EXPECT_EQ(all.sample_truth[i],
              static_cast<float>(static_cast<double>(g0[at % 10000]) * (at / 10000 + 1)))
        << at;
    EXPECT_DOUBLE_EQ(all.sample_value[i], all.sample_truth[i]) << at;
  }
  // all_gather's algorithm bytes are n * count * 4.
  ASSERT_GT(all.timing.median_s, 0.0);
  EXPECT_DOUBLE_EQ(all.timing.rate, 120000.0 / all.timing.median_s / 1e9 * (2.0 / 3));
}

// One rank: the rate is the algorithm bandwidth (BusBandwidthFactor is 0 at n = 1 for all but
// broadcast), and the fraction of the ceiling comes from the calibration passed in.
TEST_F(DeviceRunnerTest, OneRankReportsAlgorithmBandwidthAndItsFraction) {
  const OpDescriptor* op = FindOp("all_reduce");
  ASSERT_NE(op, nullptr);
  cfg_.calibration = {.measured = true, .copy_gbps = 1000.0, .gemm_gflops = 1.0};
  const CaseSpec spec{"all_reduce", "fp32", {20000}, "row-major", 1};
  CaseResult r = RunDeviceCase(backend_->table(), *op, spec, cfg_);
  ASSERT_EQ(r.status, "ok") << r.error;
  ASSERT_GT(r.timing.median_s, 0.0);
  EXPECT_DOUBLE_EQ(r.timing.rate, 80000.0 / r.timing.median_s / 1e9);
  EXPECT_DOUBLE_EQ(r.timing.fraction_of_ceiling, r.timing.rate / 1000.0);
  EXPECT_TRUE(IsCollectiveOp("all_gather"));
  EXPECT_FALSE(IsCollectiveOp("copy"));
}

}  // namespace
}  // namespace cutover
