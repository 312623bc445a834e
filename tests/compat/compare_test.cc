#include "compat/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "compat/dtype.h"
#include "compat/runner.h"
#include "tests/harness/schema_check.h"

namespace cutover {
namespace {

CompatRecord RunRecord(bool fp64, std::vector<CaseSpec> cases) {
  CompatRecord rec{.backend = "cpu", .suite = "quick", .accumulate = fp64 ? "fp64" : "fp32"};
  RunConfig cfg;
  cfg.reps = 5;
  cfg.cpu.fp64_accumulate = fp64;
  for (const CaseSpec& c : cases) rec.cases.push_back(RunCpuCase(*FindOp(c.op), c, cfg));
  return rec;
}

std::vector<CaseSpec> Cases() {
  return {{"gemm", "fp32", {64, 64, 2048}, "row-major", 1},
          {"reduce_sum", "fp32", {64, 8192}, "row-major", 1},
          {"layernorm", "fp32", {32, 2048}, "row-major", 1},
          {"gelu", "fp32", {5000}, "row-major", 1},
          {"h2d_copy", "u8", {64}, "row-major", 1}};
}

void ExpectValidRecord(const CompatRecord& rec) {
  CUTOVER_EXPECT_VALID(RecordToJson(rec), "compat-record-1.json");
}

TEST(CompareTest, RecordsOfTheseTestsValidateAgainstTheSchema) {
  ExpectValidRecord(RunRecord(false, Cases()));
  ExpectValidRecord(RunRecord(true, Cases()));
}

TEST(CompareTest, TwoRunsAreIdentical) {
  Comparison c = CompareRecords(RunRecord(false, Cases()), RunRecord(false, Cases()));
  ASSERT_EQ(c.cases.size(), 5u);
  EXPECT_EQ(c.Count(Verdict::kIdentical), 4);
  EXPECT_EQ(c.Count(Verdict::kNotApplicable), 1);
  EXPECT_FALSE(c.failed());
}

TEST(CompareTest, Fp32AndFp64AccumulationNeverRegressEitherWay) {
  CompatRecord a = RunRecord(false, Cases()), b = RunRecord(true, Cases());
  for (const Comparison& c : {CompareRecords(a, b), CompareRecords(b, a)}) {
    EXPECT_FALSE(c.failed()) << ComparisonTable(c);
    EXPECT_EQ(c.cases[0].verdict == Verdict::kIdentical, false);  // gemm K=2048 differs
    for (const CaseComparison& k : c.cases) {
      EXPECT_NE(k.verdict, Verdict::kRegression) << k.id;
      EXPECT_NE(k.verdict, Verdict::kBroken) << k.id;
    }
  }
}

TEST(CompareTest, Fp32AndFp64AccumulationOfTheNewOpsNeverRegressEitherWay) {
  const std::vector<CaseSpec> cases = {
      {"conv2d_fwd", "fp32", {2, 16, 12, 12, 8, 3, 3, 1, 1}, "NCHW", 1},
      {"conv2d_bwd_data", "fp32", {2, 16, 12, 12, 8, 3, 3, 2, 1}, "NHWC", 1},
      {"conv2d_bwd_filter", "bf16", {2, 16, 12, 12, 8, 3, 3, 1, 1}, "NCHW", 1},
      {"sdpa", "fp32", {1, 2, 128, 64}, "causal", 1},
      {"sdpa", "fp16", {1, 2, 128, 64}, "full", 1},
      {"gemm_batched", "tf32", {2, 32, 32, 512}, "row-major", 1},
      {"gemm", "fp32", {32, 32, 1024}, "row-major", 1, "stress"},
      {"gemm", "fp16", {32, 32, 1024}, "row-major", 1, "stress"},
      {"gemm", "fp8_e4m3", {32, 32, 1024}, "row-major", 1},
      {"gemm", "int8", {32, 32, 1024}, "row-major", 1},
      {"reduce_sum", "fp32", {16, 4096}, "row-major", 1, "stress"},
      {"softmax", "fp32", {16, 1024}, "row-major", 1, "stress"}};
  CompatRecord a = RunRecord(false, cases), b = RunRecord(true, cases);
  for (const Comparison& c : {CompareRecords(a, b), CompareRecords(b, a)}) {
    EXPECT_FALSE(c.failed()) << ComparisonTable(c);
    for (const CaseComparison& k : c.cases) {
      EXPECT_TRUE(k.verdict == Verdict::kIdentical || k.verdict == Verdict::kEquivalent ||
                  k.verdict == Verdict::kDrift)
          << k.id << ": " << VerdictName(k.verdict) << ": " << k.reason;
    }
  }
  EXPECT_EQ(CompareRecords(a, b).cases[9].verdict, Verdict::kIdentical);  // int8 is exact
}

TEST(CompareTest, Bf16BeyondItsToleranceAndInt8OffByOneAreRegressions) {
  CompatRecord a = RunRecord(false, {{"gemm", "bf16", {32, 32, 256}, "row-major", 1},
                                     {"gemm", "int8", {32, 32, 256}, "row-major", 1}}),
               b = a;
  for (double& v : b.cases[0].sample_value) v *= 1.05;  // 3 x bf16's 1.6e-2
  b.cases[1].sample_value[7] += 1;
  for (CaseResult& r : b.cases) r.digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[0].verdict, Verdict::kRegression) << c.cases[0].reason;
  EXPECT_EQ(c.cases[1].verdict, Verdict::kRegression) << c.cases[1].reason;
  EXPECT_EQ(c.cases[1].target_vs_source.max_ulp, 1.0);  // int32 "ULPs" are units
  // 1% is within bf16's tolerance of the source.
  b = a;
  for (double& v : b.cases[0].sample_value) v *= 1.01;
  b.cases[0].digest = std::string(64, '0');
  EXPECT_EQ(CompareRecords(a, b).cases[0].verdict, Verdict::kEquivalent);
}

TEST(CompareTest, PerturbedSamplesAreARegression) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  for (double& v : b.cases[0].sample_value) v *= 1.001;
  b.cases[0].digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[0].verdict, Verdict::kRegression) << c.cases[0].reason;
  EXPECT_TRUE(c.failed());
  EXPECT_GT(c.cases[0].q_target_truth, 1.0);
  JunitReport j = ComparisonJunit(c);
  EXPECT_EQ(j.suites[0].cases[0].outcome, JunitOutcome::kFailed);
}

TEST(CompareTest, NanIsBrokenAndMissingCasesAreNamed) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  b.cases[3].nan_count = 1;
  b.cases[3].digest = std::string(64, '0');
  b.cases.erase(b.cases.begin() + 1);
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[1].verdict, Verdict::kMissing);
  EXPECT_EQ(c.cases[1].reason, "not in the target record");
  EXPECT_EQ(c.cases[3].verdict, Verdict::kBroken);
  EXPECT_EQ(c.cases[3].reason, "target has 1 NaN and 0 Inf outputs, source 0 and 0");
}

TEST(CompareTest, SpeedVerdictOnlyWhenTheIntervalSaysSo) {
  double lo, hi;
  std::vector<double> a = {1.0, 1.01, 0.99, 1.02, 0.98}, slow = {2.0, 2.02, 1.98, 2.01, 1.99};
  BootstrapRatio(a, slow, 1, &lo, &hi);
  EXPECT_GT(lo, 1.5);
  std::vector<double> same = {1.01, 0.97, 1.03, 0.99, 1.0};
  BootstrapRatio(a, same, 1, &lo, &hi);
  EXPECT_LE(lo, 1.0);
  EXPECT_GE(hi, 1.0);
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(CompareTest, ErrorFiguresAgainstHandComputedValues) {
  // 1 + 2^-23 is one fp32 ULP above 1; the ULP at 4 is 2^-21, so -4 - 2^-20 is two below -4.
  const std::vector<double> r = {1.0, 2.0, -4.0, 0.5, 7.0, 8.0};
  const std::vector<double> x = {1.0 + 0x1p-23, 2.0, -4.0 - 0x1p-20, 0.5, kNan, INFINITY};
  ErrorStats e = MeasureError(x, r, "fp32");
  EXPECT_EQ(e.compared, 4u);
  EXPECT_EQ(e.nan, 1u);
  EXPECT_EQ(e.inf, 1u);
  EXPECT_DOUBLE_EQ(e.max_rel, 0x1p-22);                   // 2^-20 / 4
  EXPECT_DOUBLE_EQ(e.mean_rel, (0x1p-23 + 0x1p-22) / 4);  // over the 4 finite pairs
  EXPECT_EQ(e.max_ulp, 2.0);
  // sqrt(2^-46 + 2^-40) / sqrt(1 + 4 + 16 + 0.25)
  EXPECT_DOUBLE_EQ(e.normwise, std::sqrt(0x1p-46 + 0x1p-40) / std::sqrt(21.25));
}

TEST(CompareTest, UlpDistanceIsToTheTruthRoundedToTheDtype) {
  const double third = 1.0 / 3.0;
  const float rounded = static_cast<float>(third);
  EXPECT_EQ(MeasureError({rounded}, {third}, "fp32").max_ulp, 0.0);
  EXPECT_EQ(MeasureError({std::nextafter(rounded, 1.0f)}, {third}, "fp32").max_ulp, 1.0);
  // Across zero: the smallest positive and negative subnormals are 2 apart.
  const double tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(MeasureError({-tiny}, {tiny}, "fp32").max_ulp, 2.0);
  EXPECT_EQ(MeasureError({std::nextafter(third, 1.0)}, {third}, "fp64").max_ulp, 1.0);
  EXPECT_EQ(MeasureError({5}, {3}, "u8").max_ulp, 2.0);
  // bf16: 1 + 2^-7 is the next value after 1; the truth is rounded to bf16 first.
  EXPECT_EQ(MeasureError({1.0 + 0x1p-7}, {1.0 + 0x1p-9}, "bf16").max_ulp, 1.0);
  EXPECT_EQ(MeasureError({7}, {4}, "int32").max_ulp, 3.0);
  EXPECT_TRUE(std::isnan(MeasureError({1.0}, {1.0}, "fp8_e4m3").max_ulp));
}

TEST(CompareTest, RelativeErrorAgainstZero) {
  ErrorStats e = MeasureError({0.0, 1e-9}, {0.0, 0.0}, "fp32");
  EXPECT_EQ(e.compared, 2u);
  EXPECT_TRUE(std::isinf(e.max_rel));
  EXPECT_TRUE(std::isinf(e.normwise));
  e = MeasureError({0.0}, {0.0}, "fp32");
  EXPECT_EQ(e.max_rel, 0.0);
  EXPECT_EQ(e.normwise, 0.0);
}

TEST(CompareTest, CasesCarryErrorFiguresInTheTableAndJson) {
  CompatRecord a = RunRecord(false, Cases()), b = RunRecord(true, Cases());
  Comparison c = CompareRecords(a, b);
  const CaseComparison& gemm = c.cases[0];
  ASSERT_TRUE(gemm.has_error_stats);
  EXPECT_GT(gemm.target_vs_source.max_ulp, 0.0);
  EXPECT_EQ(gemm.target_vs_source.compared, a.cases[0].sample_index.size());
  // Each figure is the measure of the samples the records hold.
  ErrorStats want = MeasureError(b.cases[0].sample_value, b.cases[0].sample_truth, "fp32");
  EXPECT_EQ(gemm.target_vs_truth.max_rel, want.max_rel);
  EXPECT_EQ(gemm.target_vs_truth.max_ulp, want.max_ulp);
  EXPECT_EQ(gemm.target_vs_truth.normwise, want.normwise);
  EXPECT_FALSE(c.cases[4].has_error_stats);  // h2d_copy: n/a
  nlohmann::json j = ComparisonToJson(c);
  EXPECT_EQ(j["cases"][0]["errors"]["target_vs_truth"]["max_ulp"], want.max_ulp);
  EXPECT_EQ(j["cases"][0]["errors"]["target_vs_source"]["compared"],
            a.cases[0].sample_index.size());
  EXPECT_EQ(j["cases"][0]["nan_count"]["target"], 0);
  EXPECT_TRUE(j["cases"][4]["errors"].is_null());
  char figure[64];
  std::snprintf(figure, sizeof(figure), " %.1e/%.0f ", gemm.target_vs_truth.max_rel,
                gemm.target_vs_truth.max_ulp);
  EXPECT_NE(ComparisonTable(c).find(figure), std::string::npos) << ComparisonTable(c);

  // The same record against itself: no error at all.
  Comparison self = CompareRecords(a, a);
  EXPECT_EQ(self.cases[0].target_vs_source.max_ulp, 0.0);
  EXPECT_EQ(self.cases[0].target_vs_source.normwise, 0.0);
}

// A record of one gemm case whose timed repetitions are `reps`.
CompatRecord Timed(const std::vector<double>& reps) {
  CompatRecord rec = RunRecord(false, {Cases()[0]});
  CaseTiming& t = rec.cases[0].timing;
  t.reps_s = reps;
  t.median_s = Quantile(reps, 0.5);
  t.p10_s = Quantile(reps, 0.1);
  t.p90_s = Quantile(reps, 0.9);
  return rec;
}

TEST(CompareTest, IdenticalTimingsAreTheSameSpeed) {
  CompatRecord a = Timed({1.0, 1.01, 0.99, 1.02, 0.98});
  Comparison c = CompareRecords(a, a);
  EXPECT_EQ(c.cases[0].speed, SpeedVerdict::kSame);
  EXPECT_EQ(c.cases[0].speed_ratio, 1.0);
  EXPECT_EQ(ComparisonTable(c).find("slower"), std::string::npos) << ComparisonTable(c);
}

TEST(CompareTest, ASmallButCertainDifferenceIsTheSameSpeed) {
  CompatRecord a = Timed({1.0, 1.001, 0.999, 1.002, 0.998});
  CompatRecord b = Timed({1.03, 1.031, 1.029, 1.032, 1.028});  // 3% slower, tight spread
  Comparison c = CompareRecords(a, b);
  EXPECT_LT(c.cases[0].speed_hi, 1.0);               // the interval excludes 1 ...
  EXPECT_EQ(c.cases[0].speed, SpeedVerdict::kSame);  // ... but the effect is under 5%
  EXPECT_EQ(CompareRecords(b, a).cases[0].speed, SpeedVerdict::kSame);
}

TEST(CompareTest, SlowerFailsOnlyWhenAsked) {
  CompatRecord a = Timed({1.0, 1.01, 0.99, 1.02, 0.98});
  CompatRecord b = Timed({1.2, 1.21, 1.19, 1.22, 1.18});
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[0].speed, SpeedVerdict::kSlower);
  EXPECT_EQ(c.CountSpeed(SpeedVerdict::kSlower), 1);
  EXPECT_FALSE(c.failed());
  EXPECT_EQ(ComparisonJunit(c).suites[0].cases[0].outcome, JunitOutcome::kPassed);
  c.fail_on_slower = true;
  EXPECT_TRUE(c.failed());
  EXPECT_EQ(ComparisonToJson(c)["failed"], true);
  EXPECT_EQ(ComparisonJunit(c).suites[0].cases[0].outcome, JunitOutcome::kFailed);
  EXPECT_EQ(CompareRecords(b, a).cases[0].speed, SpeedVerdict::kFaster);
}

// One ratio direction everywhere (DESIGN.md "Ratios"): target / source speed, above 1 = target
// faster, in the struct, the --json and the table alike.
TEST(CompareTest, SpeedIsTargetOverSourceAboveOneFasterInEveryOutput) {
  CompatRecord source = Timed({2.0, 2.02, 1.98, 2.04, 1.96});
  CompatRecord target = Timed({1.0, 1.01, 0.99, 1.02, 0.98});  // twice as fast
  Comparison c = CompareRecords(source, target);
  const CaseComparison& k = c.cases[0];
  EXPECT_EQ(k.speed, SpeedVerdict::kFaster);
  EXPECT_NEAR(k.speed_ratio, 2.0, 1e-9);
  EXPECT_GT(k.speed_lo, 1.0);
  EXPECT_LE(k.speed_lo, k.speed_ratio);
  EXPECT_GE(k.speed_hi, k.speed_ratio);
  const nlohmann::json j = ComparisonToJson(c);
  EXPECT_EQ(j["schema"], "cutover.compat-compare/2");
  EXPECT_NEAR(j["cases"][0]["speed_ratio"].get<double>(), 2.0, 1e-9);
  EXPECT_FALSE(j["cases"][0].contains("time_ratio"));
  EXPECT_NE(ComparisonTable(c).find("faster x2.00 ["), std::string::npos) << ComparisonTable(c);
  EXPECT_NEAR(CompareRecords(target, source).cases[0].speed_ratio, 0.5, 1e-9);
}

TEST(CompareTest, RecordsOfAnotherOpTableAreRefused) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  EXPECT_TRUE(CheckComparable(a, b, "a.rec", "b.rec").ok());
  a.op_table_version = 1;
  Status s = CheckComparable(a, b, "a.rec", "b.rec");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "compat compare: a.rec has op table version 1, b.rec 2: cases of different op "
            "tables are not comparable (record both with the same cutover)");
  EXPECT_EQ(b.op_table_version, kOpTableVersion);
}

TEST(CompareTest, ACaseDefinedDifferentlyIsRefused) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  b.cases[1].reduction_length = 4096;
  EXPECT_EQ(CheckComparable(a, b, "a.rec", "b.rec").message(),
            "compat compare: case reduce_sum/fp32/64x8192/row-major/seed=1 is defined "
            "differently in a.rec and b.rec (reduction length 8192 vs 4096)");
  b = a;
  b.cases[0].output_count = 1;
  EXPECT_EQ(CheckComparable(a, b, "a.rec", "b.rec").message(),
            "compat compare: case gemm/fp32/64x64x2048/row-major/seed=1 is defined "
            "differently in a.rec and b.rec (output count 4096 vs 1)");
}

TEST(CompareTest, DriftNamesTheAccumulateMode) {
  // fp32 and fp64 accumulation on these cases stay within tolerance of each other; make a drift
  // by hand: source 0.9 x tolerance above the truth, target 0.9 x tolerance below it.
  CompatRecord a = RunRecord(false, Cases()), b = a;
  b.accumulate = "fp64";
  const double rtol = ToleranceFor("fp32", a.cases[0].reduction_length).rtol;
  for (size_t i = 0; i < a.cases[0].sample_truth.size(); ++i) {
    a.cases[0].sample_value[i] = a.cases[0].sample_truth[i] * (1 + 0.9 * rtol);
    b.cases[0].sample_value[i] = a.cases[0].sample_truth[i] * (1 - 0.9 * rtol);
  }
  b.cases[0].digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.setup_differences, std::vector<std::string>{"accumulate fp32 vs fp64"});
  EXPECT_EQ(c.notes,
            std::vector<std::string>{"a record embeds no fingerprint: host differences are "
                                     "unknown"});
  ASSERT_EQ(c.cases[0].verdict, Verdict::kDrift) << c.cases[0].reason;
  const std::string tail = "; setups differ: accumulate fp32 vs fp64";
  EXPECT_EQ(c.cases[0].reason.substr(c.cases[0].reason.size() - tail.size()), tail);
  EXPECT_EQ(c.cases[1].reason.find("setups differ"), std::string::npos);  // identical
}

nlohmann::json GpuFingerprint(const std::string& gpu, const std::string& cc,
                              const std::string& cublas, const std::string& tf32) {
  return {{"schema", "cutover.fingerprint/1"},
          {"cpu", {{"model", "Xeon"}}},
          {"os", {{"glibc", "2.36"}}},
          {"driver", {{"version", "550.54.14"}, {"cuda_version", "12.4"}}},
          {"gpus", {{{"index", 0}, {"name", gpu}, {"compute_capability", cc}}}},
          {"cuda", {{"toolkits", {{{"version", "12.4.1"}}}}}},
          {"libraries",
           {{{"name", "cublas"}, {"version", cublas}}, {{"name", "cudnn"}, {"version", "9.1.0"}}}},
          {"env", {{"NVIDIA_TF32_OVERRIDE", tf32}}}};
}

TEST(CompareTest, SetupDifferencesFromTheFingerprints) {
  CompatRecord a{.backend = "cuda", .accumulate = "fp32"}, b = a;
  a.fingerprint = GpuFingerprint("NVIDIA A100-SXM4-80GB", "8.0", "12.4.5.8", "0");
  b.fingerprint = GpuFingerprint("NVIDIA H100 80GB HBM3", "9.0", "12.6.3.3", "1");
  std::vector<std::string> differences, notes;
  DescribeSetupDifferences(a, b, &differences, &notes);
  EXPECT_EQ(differences, (std::vector<std::string>{
                             "GPU NVIDIA A100-SXM4-80GB vs NVIDIA H100 80GB HBM3",
                             "compute capability 8.0 vs 9.0", "GPU generation sm_8x vs sm_9x",
                             "cublas 12.4.5.8 vs 12.6.3.3", "NVIDIA_TF32_OVERRIDE 0 vs 1"}));
  EXPECT_EQ(notes, std::vector<std::string>{
                       "the records do not hold the SM count or whether TF32 was allowed; "
                       "cuBLAS results are bitwise reproducible only on the same architecture "
                       "and SM count"});
  DescribeSetupDifferences(a, a, &(differences = {}), &(notes = {}));
  EXPECT_TRUE(differences.empty());
  // With the device each cuda run records: its SM count and loaded libraries.
  a.device = {{"name", "NVIDIA H100 80GB HBM3"},
              {"sm_count", 132},
              {"libraries", {{"summary", "cuBLAS 13.0.0"}}},
              {"tf32", {{"NVIDIA_TF32_OVERRIDE", nullptr}}}};
  b.device = a.device;
  b.device["sm_count"] = 114;
  b.device["tf32"]["NVIDIA_TF32_OVERRIDE"] = "0";
  DescribeSetupDifferences(a, b, &(differences = {}), &(notes = {}));
  EXPECT_THAT(differences, ::testing::IsSupersetOf({std::string("SM count 132 vs 114"),
                                                    std::string("NVIDIA_TF32_OVERRIDE at run time "
                                                                "null vs \"0\"")}));
  EXPECT_TRUE(notes.empty()) << notes[0];
  // One line per difference: the device replaces the fingerprint's GPU list and its
  // NVIDIA_TF32_OVERRIDE, and the device's SM count is not repeated from the top-level field.
  EXPECT_THAT(differences, ::testing::Not(::testing::Contains("NVIDIA_TF32_OVERRIDE 0 vs 1")));
  EXPECT_THAT(
      differences,
      ::testing::Not(::testing::Contains("GPU NVIDIA A100-SXM4-80GB vs NVIDIA H100 80GB HBM3")));
  a.sm_count = 132;
  b.sm_count = 114;
  DescribeSetupDifferences(a, b, &(differences = {}), &(notes = {}));
  EXPECT_EQ(std::count(differences.begin(), differences.end(), "SM count 132 vs 114"), 1);
  // Without fingerprints: the backends still, and both notes.
  CompatRecord cpu{.backend = "cpu", .accumulate = "fp32"};
  DescribeSetupDifferences(cpu, CompatRecord{.backend = "cuda", .accumulate = "fp32"},
                           &(differences = {}), &(notes = {}));
  EXPECT_EQ(differences, std::vector<std::string>{"backend cpu vs cuda"});
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[1], "a record embeds no fingerprint: host differences are unknown");
}

TEST(CompareTest, ARegressionWithTheSameSetupSaysSo) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  for (double& v : b.cases[0].sample_value) v *= 1.001;
  b.cases[0].digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  ASSERT_EQ(c.cases[0].verdict, Verdict::kRegression);
  const std::string tail = "; the records show no setup difference";
  EXPECT_EQ(c.cases[0].reason.substr(c.cases[0].reason.size() - tail.size()), tail);
}

TEST(CompareTest, OneUlpOffEverywhereIsOneUlp) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  for (double& v : b.cases[0].sample_value) v = std::nextafter(static_cast<float>(v), INFINITY);
  b.cases[0].digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[0].target_vs_source.max_ulp, 1.0);
  EXPECT_EQ(c.cases[0].verdict, Verdict::kEquivalent) << c.cases[0].reason;
}

// Two cuda records of the same cases whose every case drifts: source 0.9 x tolerance above the
// truth, target 0.9 x tolerance below it (made by hand: there is no GPU here).
std::pair<CompatRecord, CompatRecord> DriftingCudaPair() {
  CompatRecord a = RunRecord(false, {{"gemm", "fp32", {32, 32, 512}, "row-major", 1},
                                     {"gemm", "bf16", {32, 32, 512}, "row-major", 1},
                                     {"conv2d_fwd", "fp32", {1, 4, 8, 8, 4, 3, 3, 1, 1}, "NHWC", 1},
                                     {"sdpa", "fp16", {1, 1, 32, 16}, "causal", 1},
                                     {"softmax", "fp32", {8, 64}, "row-major", 1}});
  a.backend = "cuda";
  a.tf32_allowed = 0;
  a.sm_count = 132;
  CompatRecord b = a;
  for (size_t k = 0; k < a.cases.size(); ++k) {
    CaseResult &s = a.cases[k], &t = b.cases[k];
    const Tolerance tol = ToleranceFor(s.spec.dtype, s.reduction_length);
    for (size_t i = 0; i < s.sample_truth.size(); ++i) {
      const double x = s.sample_truth[i], d = 0.9 * (tol.atol + tol.rtol * std::fabs(x));
      s.sample_value[i] = x + d;
      t.sample_value[i] = x - d;
    }
    t.digest = std::string(64, '0');
  }
  return {a, b};
}

const CaseComparison& Case(const Comparison& c, const std::string& id_prefix) {
  for (const CaseComparison& k : c.cases) {
    if (k.id.rfind(id_prefix, 0) == 0) return k;
  }
  ADD_FAILURE() << "no case " << id_prefix;
  return c.cases[0];
}

bool Mentions(const std::vector<std::string>& causes, const std::string& what) {
  for (const std::string& c : causes) {
    if (c.rfind(what, 0) == 0) return true;
  }
  return false;
}

TEST(CompareTest, ATf32ChangeExplainsFp32GemmAndConvOnly) {
  auto [a, b] = DriftingCudaPair();
  b.tf32_allowed = 1;
  Comparison c = CompareRecords(a, b);
  // Both records hold TF32 and the SM count: the only note is about the missing fingerprints.
  EXPECT_EQ(c.notes,
            std::vector<std::string>{"a record embeds no fingerprint: host differences are "
                                     "unknown"});
  EXPECT_EQ(c.setup_differences, std::vector<std::string>{"TF32 disabled vs allowed"});
  const CaseComparison& gemm = Case(c, "gemm/fp32");
  ASSERT_EQ(gemm.verdict, Verdict::kDrift) << gemm.reason;
  EXPECT_EQ(gemm.likely_causes,
            std::vector<std::string>{"TF32 disabled vs allowed (with TF32 allowed, fp32 GEMM and "
                                     "convolution round their inputs to 10 mantissa bits)"});
  EXPECT_NE(gemm.reason.find("; likely cause: TF32 disabled vs allowed"), std::string::npos)
      << gemm.reason;
  EXPECT_TRUE(Mentions(Case(c, "conv2d_fwd/fp32").likely_causes, "TF32"));
  // A bf16 GEMM and a softmax are not TF32 math: the difference is listed, not blamed.
  const CaseComparison& bf16 = Case(c, "gemm/bf16");
  ASSERT_EQ(bf16.verdict, Verdict::kDrift);
  EXPECT_TRUE(bf16.likely_causes.empty());
  EXPECT_EQ(bf16.reason.find("likely cause"), std::string::npos);
  EXPECT_NE(bf16.reason.find("; setups differ: TF32 disabled vs allowed"), std::string::npos);
  EXPECT_TRUE(Case(c, "softmax").likely_causes.empty());
  nlohmann::json doc = ComparisonToJson(c);
  EXPECT_EQ(doc["cases"][0]["likely_causes"].size(), 1u);
}

TEST(CompareTest, LibraryAndSmCountChangesExplainTheirOps) {
  auto [a, b] = DriftingCudaPair();
  a.fingerprint = GpuFingerprint("NVIDIA H100 80GB HBM3", "9.0", "12.4.5.8", "0");
  b.fingerprint = GpuFingerprint("NVIDIA H100 80GB HBM3", "9.0", "12.6.3.3", "0");
  b.fingerprint["libraries"][1]["version"] = "9.5.0";  // cuDNN 9.1.0 -> 9.5.0
  b.sm_count = 114;
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.setup_differences,
            (std::vector<std::string>{"SM count 132 vs 114", "cublas 12.4.5.8 vs 12.6.3.3",
                                      "cudnn 9.1.0 vs 9.5.0"}));
  const CaseComparison& gemm = Case(c, "gemm/fp32");
  EXPECT_TRUE(Mentions(gemm.likely_causes, "SM count 132 vs 114"));
  EXPECT_TRUE(Mentions(gemm.likely_causes, "cublas 12.4.5.8 vs 12.6.3.3"));
  EXPECT_FALSE(Mentions(gemm.likely_causes, "cudnn"));
  const CaseComparison& conv = Case(c, "conv2d_fwd");
  EXPECT_TRUE(Mentions(conv.likely_causes, "cudnn 9.1.0 vs 9.5.0"));
  EXPECT_FALSE(Mentions(conv.likely_causes, "cublas"));
  EXPECT_TRUE(Mentions(Case(c, "sdpa").likely_causes, "cudnn"));
  EXPECT_TRUE(Case(c, "softmax").likely_causes.empty());  // our own kernel: none of these
}

TEST(CompareTest, AGpuGenerationChangeExplainsEveryCase) {
  auto [a, b] = DriftingCudaPair();
  a.fingerprint = GpuFingerprint("NVIDIA A100-SXM4-80GB", "8.0", "12.4.5.8", "0");
  b.fingerprint = GpuFingerprint("NVIDIA H100 80GB HBM3", "9.0", "12.4.5.8", "0");
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(
      c.setup_differences,
      (std::vector<std::string>{"GPU NVIDIA A100-SXM4-80GB vs NVIDIA H100 80GB HBM3",
                                "compute capability 8.0 vs 9.0", "GPU generation sm_8x vs sm_9x"}));
  for (const CaseComparison& k : c.cases) {
    ASSERT_EQ(k.verdict, Verdict::kDrift) << k.id;
    EXPECT_TRUE(Mentions(k.likely_causes, "GPU generation sm_8x vs sm_9x")) << k.id;
  }
  // The same generation, another part (sm_80 vs sm_86): no generation line.
  b.fingerprint = GpuFingerprint("NVIDIA A10", "8.6", "12.4.5.8", "0");
  Comparison same = CompareRecords(a, b);
  EXPECT_EQ(same.setup_differences,
            (std::vector<std::string>{"GPU NVIDIA A100-SXM4-80GB vs NVIDIA A10",
                                      "compute capability 8.0 vs 8.6"}));
}

TEST(CompareTest, CudaRecordsWithoutTf32OrSmCountGetANote) {
  auto [a, b] = DriftingCudaPair();
  b.sm_count = -1;
  std::vector<std::string> differences, notes;
  DescribeSetupDifferences(a, b, &differences, &notes);
  EXPECT_TRUE(differences.empty());  // an unknown SM count is not a difference
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].rfind("the records do not hold the SM count", 0), 0u);
}

TEST(CompareTest, Fp16UlpsAndCeilingFractions) {
  CompatRecord a = RunRecord(false, {{"gemm", "fp16", {16, 16, 64}, "row-major", 1}}), b = a;
  a.calibration = {.measured = true, .copy_gbps = 10, .gemm_gflops = 100};
  a.cases[0].timing.fraction_of_ceiling = 0.5;
  b.cases[0].timing.fraction_of_ceiling = 0.25;
  const FloatFormat h = kFp16Format;
  for (double& v : b.cases[0].sample_value) {
    // One fp16 ulp up.
    v = v == 0 ? 0x1p-24 : v + std::ldexp(1.0, std::max(std::ilogb(v), h.emin) - h.mant);
  }
  b.cases[0].digest = std::string(64, '0');
  Comparison c = CompareRecords(a, b);
  EXPECT_EQ(c.cases[0].target_vs_source.max_ulp, 1.0);
  EXPECT_EQ(c.cases[0].source_vs_truth.max_ulp, 0.0);  // correctly rounded fp16 outputs
  EXPECT_EQ(c.cases[0].source_fraction, 0.5);
  EXPECT_EQ(c.cases[0].target_fraction, 0.25);
  const std::string table = ComparisonTable(c);
  EXPECT_NE(table.find("50%/25%"), std::string::npos) << table;
  EXPECT_NE(table.find("ceilings: source copy 10.0 GB/s, GEMM 100.0 GFLOP/s; target not "
                       "calibrated"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace cutover
