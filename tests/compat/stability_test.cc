// Stability statistics (compat/stability.h) on hand-made and seeded samples: the figures, the
// "not assessed" rule, the verdict's A/A false-difference rate over 1,000 seeded trials, its
// power against a really noisier target, and the likely cause the records name.
#include "compat/stability.h"

#include <random>

#include <gtest/gtest.h>

#include "compat/compare.h"

namespace cutover {
namespace {

// n draws of a normal time with mean 1 ms and the given CV.
std::vector<double> Normal(std::mt19937_64& rng, int n, double cv) {
  std::normal_distribution<double> d(1e-3, 1e-3 * cv);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(std::max(1e-6, d(rng)));
  return v;
}

// n draws of a log-normal time (a right tail, like real timings).
std::vector<double> LogNormal(std::mt19937_64& rng, int n, double sigma) {
  std::lognormal_distribution<double> d(std::log(1e-3), sigma);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

TEST(SpreadTest, FiguresOfAHandMadeSample) {
  // 1 ms x 27, then three slow reps in a row (1.5 ms), 30 in all.
  std::vector<double> v(27, 1e-3);
  v.insert(v.begin() + 10, {1.5e-3, 1.5e-3, 1.5e-3});
  Spread s = ComputeSpread(v);
  EXPECT_EQ(s.reps, 30);
  EXPECT_TRUE(s.assessed);
  EXPECT_DOUBLE_EQ(s.p50_s, 1e-3);
  EXPECT_DOUBLE_EQ(s.max_over_min, 1.5);
  EXPECT_EQ(s.longest_slow_run, 3);
  // mean = (27 + 4.5) / 30 = 1.05 ms; sd = sqrt((27 * 0.05^2 + 3 * 0.45^2) / 29) ms
  //    = sqrt((0.0675 + 0.6075) / 29) = 0.152564 ms; cv = 0.145299
  EXPECT_NEAR(s.mean_s, 1.05e-3, 1e-12);
  EXPECT_NEAR(s.cv, 0.145299, 1e-6);
  // p99 at position 0.99 * 29 = 28.71 of the sorted sample: between 1.5 and 1.5.
  EXPECT_DOUBLE_EQ(s.p99_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(s.Tail(), 1.5);
}

TEST(SpreadTest, FewerThanThirtyRepsAreNotAssessed) {
  Spread s = ComputeSpread({1e-3, 1e-3, 2e-3, 1e-3, 1e-3});
  EXPECT_FALSE(s.assessed);
  EXPECT_EQ(s.p99_s, 0) << "the maximum of five runs is not a p99";
  EXPECT_EQ(s.Tail(), 0);
  EXPECT_DOUBLE_EQ(s.max_over_min, 2);
  EXPECT_EQ(s.longest_slow_run, 1);
  EXPECT_EQ(CompareStability({1e-3, 1e-3}, {1e-3, 5e-3}, 1).verdict,
            StabilityVerdict::kNotAssessed);
  nlohmann::json j = SpreadToJson(s);
  EXPECT_TRUE(j["p99_s"].is_null());
  EXPECT_FALSE(j["assessed"].get<bool>());
  EXPECT_EQ(ComputeSpread({}).reps, 0);
}

// Two draws of one distribution, 1,000 seeded trials each: the rate at which the verdict calls
// them different stays within the stated 2% (docs/compat.md "Stability").
TEST(StabilityVerdictTest, AaFalseDifferenceRateIsWithinTheStatedRate) {
  struct Dist {
    const char* name;
    int n;
    std::vector<double> (*draw)(std::mt19937_64&, int);
  };
  const Dist kDists[] = {
      {"normal cv 5%, 30 reps", 30, [](std::mt19937_64& r, int n) { return Normal(r, n, 0.05); }},
      {"lognormal sigma 0.2, 30 reps", 30,
       [](std::mt19937_64& r, int n) { return LogNormal(r, n, 0.2); }},
      {"lognormal sigma 0.1, 60 reps", 60,
       [](std::mt19937_64& r, int n) { return LogNormal(r, n, 0.1); }},
  };
  for (const Dist& d : kDists) {
    std::mt19937_64 rng(20261207);
    int differ = 0;
    for (int trial = 0; trial < 1000; ++trial) {
      std::vector<double> a = d.draw(rng, d.n), b = d.draw(rng, d.n);
      StabilityComparison c = CompareStability(a, b, trial);
      ASSERT_NE(c.verdict, StabilityVerdict::kNotAssessed);
      differ += c.verdict != StabilityVerdict::kSame;
    }
    EXPECT_LE(differ, 20) << d.name << ": " << differ << " of 1000 A/A trials called different";
    std::printf("A/A %s: %d of 1000 trials called different\n", d.name, differ);
  }
}

// Two quiet hosts (CV well under the minimum effect) never differ, whatever their ratio.
TEST(StabilityVerdictTest, TwoQuietHostsNeverDiffer) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> a = Normal(rng, 200, 0.002), b = Normal(rng, 200, 0.008);
    EXPECT_EQ(CompareStability(a, b, trial).verdict, StabilityVerdict::kSame) << trial;
  }
}

TEST(StabilityVerdictTest, ANoisierTargetIsFoundAndASteadierOneToo) {
  std::mt19937_64 rng(11);
  int noisier = 0, steadier = 0;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<double> quiet = Normal(rng, 60, 0.02), noisy = Normal(rng, 60, 0.08);
    noisier += CompareStability(quiet, noisy, trial).verdict == StabilityVerdict::kNoisier;
    steadier += CompareStability(noisy, quiet, trial).verdict == StabilityVerdict::kSteadier;
  }
  EXPECT_GE(noisier, 95);
  EXPECT_GE(steadier, 95);
}

TEST(StabilityVerdictTest, BurstsOfInterferenceMakeTheTailNoisier) {
  std::mt19937_64 rng(13);
  std::vector<double> a = Normal(rng, 200, 0.01), b = Normal(rng, 200, 0.01);
  for (int i = 50; i < 56; ++i) b[i] *= 2;  // a neighbour's burst: six reps twice as slow
  StabilityComparison c = CompareStability(a, b, 1);
  EXPECT_EQ(c.verdict, StabilityVerdict::kNoisier);
  EXPECT_GT(c.tail_ratio, kStabilityMinRatio);
  EXPECT_EQ(c.target.longest_slow_run, 6);
}

CaseResult Case(std::vector<double> reps) {
  CaseResult c;
  c.spec = CaseSpec{.op = "copy", .dtype = "fp32", .shape = {64}, .layout = "row-major"};
  c.id = c.spec.Id();
  c.status = "ok";
  c.timing.reps_s = std::move(reps);
  return c;
}

TEST(StabilityCauseTest, NamesStealSwitchesThrottlingAndSharing) {
  CompatRecord src, dst;
  CaseResult s = Case({1e-3}), t = Case({1e-3});
  EXPECT_EQ(StabilityCause(s, t, src, dst), "");
  s.timing.interference = {
      .measured = true, .wall_s = 10, .steal_share = 0, .involuntary_switches = 30};
  t.timing.interference = {
      .measured = true, .wall_s = 10, .steal_share = 0.041, .involuntary_switches = 2000};
  t.timing.interference.throttle_reasons = 0x4;
  t.timing.interference.other_processes = 2;
  dst.fingerprint = {{"driver", {{"sharing", {{"hints", {"mig"}}}}}}};
  EXPECT_EQ(StabilityCause(s, t, src, dst),
            "steal time 4.1% of CPU time on the target (0.0% on the source): another VM on the "
            "same host; 200 involuntary context switches/s on the target (3 on the source): "
            "another process competes for its CPUs; GPU clocks throttled on the target "
            "(clock-event reasons 0x4); 2 other process(es) on the target's GPU; the target GPU "
            "is shared (mig)");
}

TEST(StabilityCompareTest, CompareRecordsJudgesEachCaseAndOverall) {
  std::mt19937_64 rng(17);
  CompatRecord src, dst;
  src.cases.push_back(Case(Normal(rng, 60, 0.02)));
  dst.cases.push_back(Case(Normal(rng, 60, 0.10)));
  Comparison c = CompareRecords(src, dst);
  ASSERT_EQ(c.cases.size(), 1u);
  EXPECT_EQ(c.cases[0].stability.verdict, StabilityVerdict::kNoisier);
  EXPECT_EQ(c.Stability(), StabilityVerdict::kNoisier);
  nlohmann::json j = ComparisonToJson(c);
  EXPECT_EQ(j["summary"]["stability"], "noisier");
  EXPECT_EQ(j["cases"][0]["stability"]["verdict"], "noisier");
  EXPECT_GT(j["cases"][0]["stability"]["cv_ratio"]["ratio"].get<double>(), 2);
  const std::string table = StabilityLines(c);
  EXPECT_NE(table.find("stability: noisier copy/"), std::string::npos) << table;
  EXPECT_NE(table.find("stability: noisier (1 cases assessed)"), std::string::npos) << table;

  CompatRecord few_src, few_dst;
  few_src.cases.push_back(Case({1e-3, 1e-3, 1e-3}));
  few_dst.cases.push_back(Case({1e-3, 2e-3, 1e-3}));
  Comparison f = CompareRecords(few_src, few_dst);
  EXPECT_EQ(f.Stability(), StabilityVerdict::kNotAssessed);
  EXPECT_EQ(StabilityLines(f),
            "stability: not assessed; 1 cases not assessed (under 30 repetitions a side: run "
            "compat run --soak)\n");
}

}  // namespace
}  // namespace cutover
