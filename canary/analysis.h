// Canary analysis: judging one check of one analysis interval, combining the checks of an
// interval, and turning a sequence of interval verdicts into a step decision.
//
// A pure library: no I/O, no clock, no randomness. The controller fetches the samples (one value
// of the metric per scrape step over the window, from Prometheus query_range, or a single value
// from an instant query) and the request counts per side, then calls JudgeCheck.
//
// Evidence, not time: empty samples, NaN or Inf, too few requests or too few samples for the
// statistical test give kInconclusive, never kPass.
//
// Thread-safety: every function is pure; distinct objects may be used from distinct threads.
#ifndef CUTOVER_CANARY_ANALYSIS_H_
#define CUTOVER_CANARY_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cutover::canary {

// A figure in a reason or message: printf's %.6g ("0.0123", "1.5e+06", "nan").
std::string FormatNumber(double v);

// The outcome of one check, or of one interval. kError: the measurement itself failed (query
// error, timeout); JudgeCheck never returns it, the controller builds it with ErrorResult.
enum class Verdict { kPass, kFail, kInconclusive, kError };

// "pass" | "fail" | "inconclusive" | "error".
std::string_view VerdictName(Verdict v);

// Which way is a regression: latency and error rate get worse going up, tokens/s going down.
enum class Worse { kHigher, kLower };

// How a side's samples are reduced to the one value the absolute and ratio bounds compare.
enum class Aggregate { kMean, kMedian, kMax, kMin, kLast };

// "mean" | "median" | "max" | "min" | "last".
std::string_view AggregateName(Aggregate a);

// The statistical test of a check.
enum class StatTest { kNone, kMannWhitney };

// The bounds of one check. Every bound is optional; a check with none is inconclusive.
struct CheckBounds {
  std::optional<double> max;        // canary aggregate must be <= max
  std::optional<double> min;        // canary aggregate must be >= min
  std::optional<double> max_ratio;  // canary / baseline must be <= max_ratio
  std::optional<double> min_ratio;  // canary / baseline must be >= min_ratio
  Worse worse = Worse::kHigher;
  Aggregate aggregate = Aggregate::kMean;
  // With kMannWhitney the ratio bound on the worse side (max_ratio for kHigher, min_ratio for
  // kLower, 1.0 when absent) is judged by the test instead of by the point ratio: the canary
  // fails when it is significantly worse than the baseline scaled by that ratio.
  StatTest test = StatTest::kNone;
  double confidence = 0.98;  // two-sided confidence; one tail (the worse one) is acted on
  int min_samples = 20;      // per side, before the test may decide
  int64_t min_requests = 0;  // per side per interval; 0 = not required
};

// What was measured for one check in one interval.
struct CheckInput {
  std::vector<double> canary;    // one value per scrape step (or a single value)
  std::vector<double> baseline;  // same; may be empty when no relative bound or test is set
  std::optional<double> canary_requests;    // requests served in the interval, per side
  std::optional<double> baseline_requests;  // (required when min_requests > 0)
};

// Which way the canary differs from the baseline (from the U statistic: U > nm/2 is "higher").
enum class Effect { kNone, kHigher, kLower };
std::string_view EffectName(Effect e);

// The result of a Mann-Whitney U test of `x` (canary) against `y` (baseline).
struct MannWhitneyResult {
  double u = 0;        // U of x: pairs (xi, yj) with xi > yj, plus half the ties
  double z = 0;        // normal approximation, continuity-corrected, in the tested direction
  double p_value = 1;  // one-sided, in the tested direction
  bool exact = false;  // p from the exact null distribution (no ties, both sides <= 50)
  Effect effect = Effect::kNone;
};

// One-sided Mann-Whitney U test: with `worse` kHigher the alternative is "x tends to be larger
// than y"; with kLower "x tends to be smaller". Ties get mid-ranks and the variance correction.
// All values tied gives p = 1. REQUIRES: x and y non-empty and finite.
MannWhitneyResult MannWhitney(const std::vector<double>& x, const std::vector<double>& y,
                              Worse worse);

// The smallest one-sided p-value any data can reach with n and m samples and no ties:
// 1 / C(n+m, n). When it is above the test level, the test can never fail.
double MinAttainablePValue(int n, int m);

// The figures behind a check verdict (for the measurement log and the report).
struct CheckFigures {
  std::optional<double> canary_value;  // the aggregate of each side
  std::optional<double> baseline_value;
  std::optional<double> ratio;  // canary_value / baseline_value
  std::optional<MannWhitneyResult> test;
  size_t canary_samples = 0;
  size_t baseline_samples = 0;
};

struct CheckResult {
  Verdict verdict = Verdict::kInconclusive;
  std::string reason;  // one line for people: why this verdict
  CheckFigures figures;
};

// Judges one check of one interval. Gates first (request counts, then empty or non-finite
// samples: inconclusive); then any violated bound fails; else any bound that cannot decide yet
// (too few samples for the test) makes it inconclusive; else it passes.
CheckResult JudgeCheck(const CheckBounds& bounds, const CheckInput& input);

// The canary's result once its A/A pair's is known (the pair judged in the same window by the
// relative bounds alone). A canary that fails only relative bounds (ratio or test) which the
// pair fails too is kInconclusive: the noise floor is above the band, so the failure is no
// evidence. A failed absolute bound (max/min on `input`) stays a failure; a pair that passed,
// could not decide or errored changes nothing.
CheckResult ApplyNoiseFloor(const CheckBounds& bounds, const CheckInput& input, CheckResult canary,
                            const CheckResult& pair);

// A check whose measurement failed (query error, timeout): verdict kError with `reason`.
CheckResult ErrorResult(std::string reason);

// The verdict of an interval from its checks: any fail -> fail; else any error -> error; else any
// inconclusive (or no checks at all) -> inconclusive; else pass.
Verdict CombineChecks(const std::vector<CheckResult>& checks);

enum class OnInconclusive { kRollback, kPause };

// The limits of a rollout's analysis (spec `analysis:`). A limit is reached when its counter
// equals it (failure_limit 2: the second failed interval rolls back). Note the difference from
// Argo Rollouts, which fails when the count exceeds the limit. REQUIRES: every limit >= 1.
struct AnalysisPolicy {
  int failure_limit = 1;            // failed intervals over the whole rollout
  int inconclusive_limit = 4;       // inconclusive intervals within the current step
  int consecutive_error_limit = 4;  // errored intervals in a row (any other verdict resets it)
  OnInconclusive on_inconclusive = OnInconclusive::kPause;
};

// The analysis counters of a rollout. Start with a value-initialised state; call BeginStep when
// the controller moves to a new step.
struct AnalysisState {
  int intervals = 0;  // over the rollout
  int failures = 0;   // over the rollout
  int errors = 0;     // over the rollout
  int consecutive_errors = 0;
  int step_intervals = 0;  // within the current step
  int step_passes = 0;
  int step_inconclusives = 0;
  std::optional<Verdict> last;  // the latest interval of the current step
};

enum class Decision {
  kHold,      // keep measuring the current step
  kAdvance,   // the step has its evidence: move on (once its hold time is over)
  kRollback,  // a limit was reached
  kPause,     // the inconclusive limit was reached and the spec says pause
};
std::string_view DecisionName(Decision d);

struct StepDecision {
  Decision decision = Decision::kHold;
  std::string reason;
};

// Resets the per-step counters (a new step starts with no evidence); keeps the rollout ones.
AnalysisState BeginStep(const AnalysisState& state);

// Records one interval verdict and returns the new state. Pure.
AnalysisState RecordInterval(const AnalysisState& state, Verdict interval);

// What to do after the intervals recorded in `state`. Limits are checked first (failures, then
// consecutive errors, then inconclusives). Otherwise kAdvance when `hold_elapsed`, the step has
// at least one passing interval and its latest interval passed; else kHold.
StepDecision Decide(const AnalysisState& state, const AnalysisPolicy& policy, bool hold_elapsed);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_ANALYSIS_H_
