#include "canary/analysis.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace cutover::canary {
namespace {

// A pinned lognormal generator: std::mt19937_64 is specified bit for bit by the standard; the
// uniform and normal draws are our own (the standard's distributions differ between libraries).
class PinnedLognormal {
 public:
  // Samples with the given mean and coefficient of variation.
  PinnedLognormal(uint64_t seed, double mean, double cv) : rng_(seed) {
    sigma_ = std::sqrt(std::log(1 + cv * cv));
    mu_ = std::log(mean) - sigma_ * sigma_ / 2;
  }
  double Next() { return std::exp(mu_ + sigma_ * Normal()); }
  std::vector<double> Draw(size_t n) {
    std::vector<double> v(n);
    for (double& x : v) x = Next();
    return v;
  }
  void SetMean(double mean) { mu_ = std::log(mean) - sigma_ * sigma_ / 2; }

 private:
  // In (0, 1): the top 53 bits, offset by half a unit so neither end is reachable.
  double Uniform() { return (static_cast<double>(rng_() >> 11) + 0.5) * 0x1p-53; }
  // Box-Muller, both values of each pair used.
  double Normal() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    double r = std::sqrt(-2 * std::log(Uniform()));
    double theta = 2 * M_PI * Uniform();
    spare_ = r * std::sin(theta);
    have_spare_ = true;
    return r * std::cos(theta);
  }

  std::mt19937_64 rng_;
  double mu_ = 0, sigma_ = 0;
  bool have_spare_ = false;
  double spare_ = 0;
};

CheckBounds MannWhitneyBounds() {
  CheckBounds b;
  b.test = StatTest::kMannWhitney;
  b.confidence = 0.98;
  return b;
}

// The fraction of `runs` seeded runs whose Mann-Whitney check fails: baseline with mean 100,
// canary with mean 100 * `factor`, CV 0.2, `n` samples per side.
double FailRate(int runs, size_t n, double factor, uint64_t seed_base) {
  int fails = 0;
  for (int run = 0; run < runs; ++run) {
    PinnedLognormal gen(seed_base + static_cast<uint64_t>(run), 100, 0.2);
    CheckInput in;
    in.baseline = gen.Draw(n);
    gen.SetMean(100 * factor);
    in.canary = gen.Draw(n);
    CheckResult r = JudgeCheck(MannWhitneyBounds(), in);
    EXPECT_NE(r.verdict, Verdict::kInconclusive) << r.reason;
    if (r.verdict == Verdict::kFail) ++fails;
  }
  return static_cast<double>(fails) / runs;
}

TEST(PinnedLognormalTest, HasTheRequestedMeanAndSpread) {
  PinnedLognormal gen(7, 100, 0.2);
  std::vector<double> v = gen.Draw(100000);
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  double mean = sum / v.size();
  for (double x : v) sq += (x - mean) * (x - mean);
  double cv = std::sqrt(sq / (v.size() - 1)) / mean;
  EXPECT_NEAR(mean, 100, 0.5);
  EXPECT_NEAR(cv, 0.2, 0.005);
}

TEST(AnalysisStatisticsTest, AaFalseFailRateAtMostOnePercent) {
  double rate200 = FailRate(1000, 200, 1.0, 1000);
  double rate20 = FailRate(1000, 20, 1.0, 5000);
  std::printf(
      "A/A false-fail rate, mann-whitney at confidence 0.98, 1000 runs: "
      "%.1f%% at 200 samples per side, %.1f%% at 20\n",
      100 * rate200, 100 * rate20);
  EXPECT_LE(rate200, 0.01);
  EXPECT_LE(rate20, 0.01);
}

TEST(AnalysisStatisticsTest, TenPercentIncreaseDetectedAtLeast95Percent) {
  double rate = FailRate(1000, 200, 1.10, 9000);
  std::printf("detection rate of a 10%% increase, 200 samples per side, 1000 runs: %.1f%%\n",
              100 * rate);
  EXPECT_GE(rate, 0.95);
}

// --- Exact values against hand computation ---

TEST(MannWhitneyTest, ExactSmallCompleteSeparation) {
  // x above every y: U = 3 * 3 = 9, and only 1 of C(6,3) = 20 arrangements reaches it.
  MannWhitneyResult r = MannWhitney({4, 5, 6}, {1, 2, 3}, Worse::kHigher);
  EXPECT_DOUBLE_EQ(r.u, 9);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.p_value, 1.0 / 20);
  EXPECT_EQ(r.effect, Effect::kHigher);
  // Normal approximation: (9 - 4.5 - 0.5) / sqrt(9 * 7 / 12).
  EXPECT_NEAR(r.z, 4 / std::sqrt(5.25), 1e-12);

  MannWhitneyResult low = MannWhitney({1, 2, 3}, {4, 5, 6}, Worse::kLower);
  EXPECT_DOUBLE_EQ(low.u, 0);
  EXPECT_DOUBLE_EQ(low.p_value, 1.0 / 20);
  EXPECT_EQ(low.effect, Effect::kLower);
}

TEST(MannWhitneyTest, ExactSmallMiddleCase) {
  // U = 0 + 3 + 3 = 6. The counts of U = 0..9 for 3 and 3 are 1,1,2,3,3,3,3,2,1,1, so
  // P(U >= 6) = (3 + 2 + 1 + 1) / 20 and P(U <= 6) = 16 / 20.
  MannWhitneyResult r = MannWhitney({1, 5, 6}, {2, 3, 4}, Worse::kHigher);
  EXPECT_DOUBLE_EQ(r.u, 6);
  EXPECT_DOUBLE_EQ(r.p_value, 7.0 / 20);
  EXPECT_DOUBLE_EQ(MannWhitney({1, 5, 6}, {2, 3, 4}, Worse::kLower).p_value, 16.0 / 20);
}

TEST(MannWhitneyTest, TiesUseMidRanksAndTheVarianceCorrection) {
  // Pooled: 1y 2x 2y 2y 3x 3x 3y 4x. The 2s share rank 3, the 3s rank 6: R_x = 3 + 6 + 6 + 8
  // = 23, U = 23 - 4 * 5 / 2 = 13. Var = 16/12 * (9 - (24 + 24) / (8 * 7)) = 10.857142...
  MannWhitneyResult r = MannWhitney({2, 3, 3, 4}, {1, 2, 2, 3}, Worse::kHigher);
  EXPECT_DOUBLE_EQ(r.u, 13);
  EXPECT_FALSE(r.exact);
  EXPECT_NEAR(r.z, 1.365698202000489, 1e-12);
  EXPECT_NEAR(r.p_value, 0.08601685446091145, 1e-12);
  MannWhitneyResult low = MannWhitney({2, 3, 3, 4}, {1, 2, 2, 3}, Worse::kLower);
  EXPECT_NEAR(low.z, -5.5 / std::sqrt(10.857142857142856), 1e-12);
  EXPECT_NEAR(low.p_value, 0.9524598065992065, 1e-12);
}

TEST(MannWhitneyTest, NormalApproximationAboveFiftyPerSide) {
  // x = 1, 3, ..., 119 and y = 2, 4, ..., 120: x_k has k - 1 values of y below it, so
  // U = 0 + 1 + ... + 59 = 1770, mean 1800, variance 60 * 60 * 121 / 12 = 36300.
  std::vector<double> x, y;
  for (int k = 1; k <= 60; ++k) {
    x.push_back(2 * k - 1);
    y.push_back(2 * k);
  }
  MannWhitneyResult r = MannWhitney(x, y, Worse::kHigher);
  EXPECT_DOUBLE_EQ(r.u, 1770);
  EXPECT_FALSE(r.exact);
  EXPECT_NEAR(r.z, -0.1600834837298508, 1e-12);
  EXPECT_NEAR(r.p_value, 0.5635923442716833, 1e-12);
  EXPECT_NEAR(MannWhitney(x, y, Worse::kLower).p_value, 0.4384757600934124, 1e-12);
}

TEST(MannWhitneyTest, AllTiedGivesNoEvidence) {
  MannWhitneyResult r = MannWhitney({1, 1}, {1, 1, 1}, Worse::kHigher);
  EXPECT_DOUBLE_EQ(r.u, 3);
  EXPECT_DOUBLE_EQ(r.p_value, 1);
  EXPECT_EQ(r.effect, Effect::kNone);
}

TEST(MannWhitneyTest, MinAttainablePValue) {
  EXPECT_DOUBLE_EQ(MinAttainablePValue(4, 4), 1.0 / 70);
  EXPECT_DOUBLE_EQ(MinAttainablePValue(5, 5), 1.0 / 252);
  EXPECT_DOUBLE_EQ(MinAttainablePValue(3, 3), 1.0 / 20);
}

// --- Every inconclusive rule, with the reason pinned ---

CheckBounds MaxBound(double max) {
  CheckBounds b;
  b.max = max;
  return b;
}

TEST(JudgeCheckTest, MissingRequestCountsAreInconclusive) {
  CheckBounds b = MaxBound(0.01);
  b.min_requests = 200;
  CheckInput in{.canary = {0.001}, .baseline = {0.001}};
  CheckResult r = JudgeCheck(b, in);
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "canary request count unknown (min_requests 200)");
  in.canary_requests = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(JudgeCheck(b, in).reason, "canary request count unknown (min_requests 200)");
  in.canary_requests = 500;
  EXPECT_EQ(JudgeCheck(b, in).reason, "baseline request count unknown (min_requests 200)");
}

TEST(JudgeCheckTest, FewerThanMinRequestsIsInconclusiveEvenWhenBad) {
  CheckBounds b = MaxBound(0.01);
  b.min_requests = 200;
  // One error in three requests would fail the bound, but three requests prove nothing.
  CheckInput in{.canary = {0.33}, .canary_requests = 3, .baseline_requests = 1000};
  CheckResult r = JudgeCheck(b, in);
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "canary served 3 requests, fewer than min_requests 200");
  in.canary_requests = 200;
  in.baseline_requests = 199.5;
  EXPECT_EQ(JudgeCheck(b, in).reason,
            "baseline served 199.5 requests, fewer than min_requests 200");
  in.baseline_requests = 200;
  EXPECT_EQ(JudgeCheck(b, in).verdict, Verdict::kFail);
}

TEST(JudgeCheckTest, EmptySamplesAreInconclusiveNeverPass) {
  CheckResult r = JudgeCheck(MaxBound(0.01), CheckInput{});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "no canary samples (empty result)");
  CheckBounds ratio;
  ratio.max_ratio = 1.2;
  r = JudgeCheck(ratio, CheckInput{.canary = {1.0}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "no baseline samples (empty result)");
}

TEST(JudgeCheckTest, NanOrInfIsInconclusiveNeverPass) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CheckResult r = JudgeCheck(MaxBound(0.01), CheckInput{.canary = {0.001, nan, 0.002}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "canary samples contain NaN or Inf (1 of 3)");
  CheckBounds b = MaxBound(0.01);
  b.max_ratio = 2;
  r = JudgeCheck(b, CheckInput{.canary = {0.001}, .baseline = {inf, -inf}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "baseline samples contain NaN or Inf (2 of 2)");
  // A check without a relative bound does not read the baseline.
  r = JudgeCheck(MaxBound(0.01), CheckInput{.canary = {0.001}, .baseline = {nan}});
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.reason, "canary mean 0.001 <= max 0.01");
}

TEST(JudgeCheckTest, NoBoundsIsInconclusive) {
  CheckResult r = JudgeCheck(CheckBounds{}, CheckInput{.canary = {1}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "check has no bounds");
}

TEST(JudgeCheckTest, TooFewSamplesForTheTestIsInconclusive) {
  PinnedLognormal gen(3, 100, 0.2);
  CheckInput in{.canary = gen.Draw(12), .baseline = gen.Draw(20)};
  CheckResult r = JudgeCheck(MannWhitneyBounds(), in);
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "mann-whitney needs 20 samples per side, got canary 12, baseline 20");
  EXPECT_FALSE(r.figures.test.has_value());
}

TEST(JudgeCheckTest, FourPointsPerSideCanNeverFailSoItIsInconclusive) {
  // Even with complete separation, p = 1/70 > 0.01 (one tail of a two-sided 98% test).
  CheckBounds b = MannWhitneyBounds();
  b.min_samples = 4;
  CheckResult r = JudgeCheck(b, CheckInput{.canary = {10, 11, 12, 13}, .baseline = {1, 2, 3, 4}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "mann-whitney with 4 and 4 samples can never reach p <= 0.01");
  // With 5 per side the floor is 1/252 and complete separation fails.
  b.min_samples = 5;
  r = JudgeCheck(b, CheckInput{.canary = {10, 11, 12, 13, 14}, .baseline = {1, 2, 3, 4, 5}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "mann-whitney: canary higher than baseline, p=0.00397 (U=25, n=5/5) <= 0.01");
}

TEST(JudgeCheckTest, AViolatedBoundFailsEvenWhenTheTestCannotDecide) {
  CheckBounds b = MannWhitneyBounds();
  b.max = 0.01;
  CheckResult r = JudgeCheck(b, CheckInput{.canary = {0.05, 0.07}, .baseline = {0.001, 0.002}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "canary mean 0.06 > max 0.01");
}

// --- Bounds ---

TEST(JudgeCheckTest, AbsoluteBounds) {
  CheckBounds b;
  b.min = 50;
  b.aggregate = Aggregate::kMedian;
  CheckResult r = JudgeCheck(b, CheckInput{.canary = {40, 45, 100}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "canary median 45 < min 50");
  EXPECT_DOUBLE_EQ(*r.figures.canary_value, 45);
  b.aggregate = Aggregate::kMean;
  r = JudgeCheck(b, CheckInput{.canary = {40, 45, 100}});
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.reason, "canary mean 61.6667 >= min 50");
}

TEST(JudgeCheckTest, PointRatioAgainstBaseline) {
  CheckBounds b;
  b.max_ratio = 1.2;
  CheckResult r = JudgeCheck(b, CheckInput{.canary = {0.015}, .baseline = {0.01}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "ratio 1.5 > max_ratio 1.2 (canary 0.015, baseline 0.01)");
  EXPECT_DOUBLE_EQ(*r.figures.ratio, 1.5);
  r = JudgeCheck(b, CheckInput{.canary = {0.011}, .baseline = {0.01}});
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.reason, "ratio 1.1 <= max_ratio 1.2");
  // Both clean: ratio 1. Canary errors over a clean baseline: +Inf, a failure.
  EXPECT_EQ(JudgeCheck(b, CheckInput{.canary = {0}, .baseline = {0}}).verdict, Verdict::kPass);
  r = JudgeCheck(b, CheckInput{.canary = {0.002}, .baseline = {0}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "ratio inf > max_ratio 1.2 (canary 0.002, baseline 0)");
  r = JudgeCheck(b, CheckInput{.canary = {1}, .baseline = {-2}});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "ratio undefined for a negative baseline (canary 1, baseline -2)");
  CheckBounds lower;
  lower.min_ratio = 0.9;
  r = JudgeCheck(lower, CheckInput{.canary = {80}, .baseline = {100}});
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason, "ratio 0.8 < min_ratio 0.9 (canary 80, baseline 100)");
}

TEST(JudgeCheckTest, TestAgainstAHardwareBand) {
  // The target is 30% slower by design; the band allows 40%. Judged by the test against the
  // baseline scaled by max_ratio, not by the noisy point ratio.
  CheckBounds b = MannWhitneyBounds();
  b.max_ratio = 1.4;
  PinnedLognormal base(11, 100, 0.2), canary(12, 130, 0.2);
  CheckInput in{.canary = canary.Draw(60), .baseline = base.Draw(60)};
  CheckResult r = JudgeCheck(b, in);
  EXPECT_EQ(r.verdict, Verdict::kPass) << r.reason;
  ASSERT_TRUE(r.figures.test.has_value());
  EXPECT_FALSE(r.figures.test->exact);
  // 80% slower: well outside the band.
  PinnedLognormal slow(13, 180, 0.2);
  in.canary = slow.Draw(60);
  r = JudgeCheck(b, in);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.reason.rfind("mann-whitney: canary higher than 1.4 x baseline, p=", 0), 0)
      << r.reason;
}

TEST(JudgeCheckTest, LowerIsWorseForThroughput) {
  CheckBounds b = MannWhitneyBounds();
  b.worse = Worse::kLower;
  b.min_ratio = 0.9;
  PinnedLognormal base(21, 1000, 0.2), good(22, 980, 0.2), bad(23, 700, 0.2);
  CheckInput in{.canary = good.Draw(100), .baseline = base.Draw(100)};
  EXPECT_EQ(JudgeCheck(b, in).verdict, Verdict::kPass);
  in.canary = bad.Draw(100);
  CheckResult r = JudgeCheck(b, in);
  EXPECT_EQ(r.verdict, Verdict::kFail);
  EXPECT_EQ(r.figures.test->effect, Effect::kLower);
  EXPECT_EQ(r.reason.rfind("mann-whitney: canary lower than 0.9 x baseline, p=", 0), 0) << r.reason;
}

TEST(JudgeCheckTest, ScaledTestRefusesNegativeSamples) {
  CheckBounds b = MannWhitneyBounds();
  b.max_ratio = 1.1;
  std::vector<double> x(20, -1.0), y(20, 1.0);
  CheckResult r = JudgeCheck(b, CheckInput{.canary = x, .baseline = y});
  EXPECT_EQ(r.verdict, Verdict::kInconclusive);
  EXPECT_EQ(r.reason, "mann-whitney against a scaled baseline needs non-negative samples");
}

// --- Combining checks and intervals ---

CheckResult WithVerdict(Verdict v) {
  CheckResult r;
  r.verdict = v;
  return r;
}

TEST(CombineChecksTest, FailThenErrorThenInconclusiveThenPass) {
  using V = Verdict;
  EXPECT_EQ(CombineChecks({}), V::kInconclusive);
  EXPECT_EQ(CombineChecks({WithVerdict(V::kPass), WithVerdict(V::kPass)}), V::kPass);
  EXPECT_EQ(CombineChecks({WithVerdict(V::kPass), WithVerdict(V::kInconclusive)}),
            V::kInconclusive);
  EXPECT_EQ(CombineChecks({WithVerdict(V::kInconclusive), ErrorResult("timeout")}), V::kError);
  EXPECT_EQ(CombineChecks({ErrorResult("timeout"), WithVerdict(V::kFail)}), V::kFail);
  EXPECT_EQ(ErrorResult("query timed out").reason, "query timed out");
}

AnalysisPolicy Policy(OnInconclusive on = OnInconclusive::kRollback) {
  AnalysisPolicy p;
  p.failure_limit = 2;
  p.inconclusive_limit = 3;
  p.consecutive_error_limit = 2;
  p.on_inconclusive = on;
  return p;
}

TEST(DecideTest, FailureLimitCountsOverTheRollout) {
  AnalysisState s = RecordInterval({}, Verdict::kFail);
  StepDecision d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kHold);
  EXPECT_EQ(d.reason, "no passing interval in this step yet");
  s = RecordInterval(BeginStep(RecordInterval(s, Verdict::kPass)), Verdict::kFail);
  d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kRollback);
  EXPECT_EQ(d.reason, "failure limit reached: 2 failed intervals (failure_limit 2)");
}

TEST(DecideTest, ConsecutiveErrorsResetByAnyOtherVerdict) {
  AnalysisState s = RecordInterval({}, Verdict::kError);
  s = RecordInterval(s, Verdict::kInconclusive);
  s = RecordInterval(s, Verdict::kError);
  EXPECT_EQ(s.consecutive_errors, 1);
  EXPECT_EQ(Decide(s, Policy(), true).decision, Decision::kHold);
  s = RecordInterval(s, Verdict::kError);
  StepDecision d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kRollback);
  EXPECT_EQ(d.reason,
            "consecutive error limit reached: 2 errored intervals in a row "
            "(consecutive_error_limit 2)");
}

TEST(DecideTest, InconclusiveLimitRollsBackOrPausesAndIsPerStep) {
  AnalysisState s;
  for (int i = 0; i < 2; ++i) s = RecordInterval(s, Verdict::kInconclusive);
  EXPECT_EQ(Decide(s, Policy(), true).decision, Decision::kHold);
  AnalysisState next = BeginStep(s);
  EXPECT_EQ(next.step_inconclusives, 0);
  EXPECT_EQ(next.intervals, 2);
  s = RecordInterval(s, Verdict::kInconclusive);
  StepDecision d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kRollback);
  EXPECT_EQ(d.reason,
            "inconclusive limit reached: 3 inconclusive intervals in this step "
            "(inconclusive_limit 3)");
  EXPECT_EQ(Decide(s, Policy(OnInconclusive::kPause), true).decision, Decision::kPause);
}

TEST(DecideTest, AdvanceNeedsAPassingLatestIntervalAndTheHoldOver) {
  AnalysisState s = RecordInterval({}, Verdict::kPass);
  EXPECT_EQ(Decide(s, Policy(), false).reason, "hold time not over");
  StepDecision d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kAdvance);
  EXPECT_EQ(d.reason, "1 of 1 intervals passed in this step");
  s = RecordInterval(s, Verdict::kInconclusive);
  d = Decide(s, Policy(), true);
  EXPECT_EQ(d.decision, Decision::kHold);
  EXPECT_EQ(d.reason, "latest interval was inconclusive, not pass");
  s = RecordInterval(s, Verdict::kPass);
  EXPECT_EQ(Decide(s, Policy(), true).reason, "2 of 3 intervals passed in this step");
  // A new step starts with no evidence.
  EXPECT_EQ(Decide(BeginStep(s), Policy(), true).decision, Decision::kHold);
}

}  // namespace
}  // namespace cutover::canary
