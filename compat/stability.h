// Performance stability: how steadily a case runs, computed from the repetition times a record
// keeps (timing.reps_s) when the record is read, so records of any age work and the record
// format needs no new version. And the comparison of the target's spread with the source's.
//
//   cv                sample standard deviation / mean of the repetitions
//   p50, p99          quantiles (linear interpolation between order statistics)
//   max_over_min      slowest / fastest repetition
//   longest_slow_run  the most consecutive repetitions slower than kSlowFactor * p50 (interference
//                     that comes and goes shows as runs; one outlier as a run of 1)
//
// A p99 and a stability verdict need at least kStabilityMinReps repetitions (a soak gives them:
// `compat run --soak`); with fewer the spread is "not assessed" and p99 is not reported, rather
// than calling the maximum of five runs a p99.
//
// Verdict (docs/compat.md "Stability"): the target is noisier when the 95% bootstrap interval of
// cv_target / cv_source lies above 1, that ratio is at least kStabilityMinRatio and the CVs differ
// by at least kStabilityMinCvDelta; or likewise for the tail, (p99/p50)_target / (p99/p50)_source
// with kStabilityMinTailDelta. Steadier is the mirror image; anything else is "same". The minimum
// effects keep two quiet hosts from ever differing. A noisier target is a risk to report with its
// figures, never a blocker on its own.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_STABILITY_H_
#define CUTOVER_COMPAT_STABILITY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/record.h"

namespace cutover {

inline constexpr int kStabilityMinReps = 30;
inline constexpr double kSlowFactor = 1.10;
inline constexpr double kStabilityMinRatio = 1.75;
inline constexpr double kStabilityMinCvDelta = 0.02;
inline constexpr double kStabilityMinTailDelta = 0.10;

struct Spread {
  int reps = 0;
  bool assessed = false;  // reps >= kStabilityMinReps
  double mean_s = 0, cv = 0, p50_s = 0;
  double p99_s = 0;  // 0 when not assessed
  double max_over_min = 0;
  int longest_slow_run = 0;
  // p99 / p50; 0 when not assessed.
  double Tail() const { return assessed && p50_s > 0 ? p99_s / p50_s : 0; }
};

// REQUIRES: every time > 0 (RecordFromJson guarantees it). An empty list gives reps = 0.
Spread ComputeSpread(const std::vector<double>& reps_s);

enum class StabilityVerdict { kSteadier, kSame, kNoisier, kNotAssessed };
std::string_view StabilityVerdictName(StabilityVerdict v);  // "steadier", "same", "noisier",
                                                            // "not assessed"

struct StabilityComparison {
  Spread source, target;
  StabilityVerdict verdict = StabilityVerdict::kNotAssessed;
  double cv_ratio = 0, cv_lo = 0, cv_hi = 0;        // target / source; 95% bootstrap interval
  double tail_ratio = 0, tail_lo = 0, tail_hi = 0;  // of p99/p50
  std::string cause;  // what the records name as the likely cause of a noisier target; "" none
};

// Judges one case's spread. `seed` makes the bootstrap deterministic.
StabilityComparison CompareStability(const std::vector<double>& source_reps,
                                     const std::vector<double>& target_reps, uint64_t seed);

// The likely cause of a noisier target the two cases and records name ("steal time 4.1% of CPU
// time on the target (0.0% on the source): a noisy neighbour VM", "GPU clocks throttled (power
// cap)", "3 other processes on the GPU", "the target GPU is shared: MIG") or "".
std::string StabilityCause(const CaseResult& source, const CaseResult& target,
                           const CompatRecord& source_rec, const CompatRecord& target_rec);

// The overall verdict over cases: noisier when any case is, else steadier when any is, else same;
// not assessed when no case was.
StabilityVerdict OverallStability(const std::vector<StabilityVerdict>& cases);

nlohmann::json SpreadToJson(const Spread& s);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_STABILITY_H_
