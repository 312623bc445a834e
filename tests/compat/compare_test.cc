#include "compat/compare.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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
  EXPECT_TRUE(std::isnan(MeasureError({1.0}, {1.0}, "bf16").max_ulp));
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
  EXPECT_EQ(c.cases[0].time_ratio, 1.0);
  EXPECT_EQ(ComparisonTable(c).find("slower"), std::string::npos) << ComparisonTable(c);
}

TEST(CompareTest, ASmallButCertainDifferenceIsTheSameSpeed) {
  CompatRecord a = Timed({1.0, 1.001, 0.999, 1.002, 0.998});
  CompatRecord b = Timed({1.03, 1.031, 1.029, 1.032, 1.028});  // 3% slower, tight spread
  Comparison c = CompareRecords(a, b);
  EXPECT_GT(c.cases[0].ratio_lo, 1.0);               // the interval excludes 1 ...
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

TEST(CompareTest, RecordsOfAnotherOpTableAreRefused) {
  CompatRecord a = RunRecord(false, Cases()), b = a;
  EXPECT_TRUE(CheckComparable(a, b, "a.rec", "b.rec").ok());
  b.op_table_version = 2;
  Status s = CheckComparable(a, b, "a.rec", "b.rec");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "compat compare: a.rec has op table version 1, b.rec 2: cases of different op "
            "tables are not comparable (record both with the same cutover)");
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
                             "compute capability 8.0 vs 9.0", "cublas 12.4.5.8 vs 12.6.3.3",
                             "NVIDIA_TF32_OVERRIDE 0 vs 1"}));
  EXPECT_EQ(notes, std::vector<std::string>{
                       "a cuda record without its device (SM count, library versions, TF32 "
                       "setting); cuBLAS results are bitwise reproducible only on the same "
                       "architecture and SM count"});
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

}  // namespace
}  // namespace cutover
