// Measuring a rollout spec's checks over one analysis window, and judging a past time range
// window by window without touching traffic (`cutover canary analyze`).
//
// MeasureInterval is the part of an analysis interval that only needs metrics: the request
// counts per side (when analysis.min_requests is set), then every check, each judged by
// canary/analysis. The controller adds what needs the load balancer (the realised share) and
// records the rows; AnalyzePast runs it over consecutive windows of a past range and replays
// the spec's analysis policy over the verdicts, as if the whole range were one weight step.
//
// Thread-safety: the functions keep no state; `metrics` must be usable from the calling thread.
#ifndef CUTOVER_CANARY_MEASURE_H_
#define CUTOVER_CANARY_MEASURE_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "canary/analysis.h"
#include "canary/prometheus_client.h"
#include "canary/spec.h"
#include "canary/state.h"
#include "core/status.h"

namespace cutover::canary {

// What one window's measurement found.
struct IntervalMeasurement {
  // One per check, in spec order (what CombineChecks takes).
  std::vector<CheckResult> results;
  // requests:canary and requests:baseline (when min_requests is set), then one per check, with
  // check, query, window, values, figures, verdict and reason filled in; the rollout, step,
  // interval index and time are the caller's.
  std::vector<MeasurementRow> rows;
  // Non-empty when a query is wrong (Prometheus answered bad_data or an execution error): a spec
  // error, so the rollout must stop; `results` then ends before the offending check.
  std::string spec_error;
};

// `tmpl` with {{servers}} set to `side` and the other check placeholders from the spec;
// {{interval}} is `interval` when given, else analysis.interval.
Result<std::string> RenderCheckQuery(const RolloutSpec& spec, const std::string& tmpl,
                                     const std::vector<std::string>& side,
                                     std::optional<Millis> interval = std::nullopt);

// Measures and judges the spec's checks over [start, end]: instant queries at `end`, range
// queries (Mann-Whitney checks) over the window at the metrics step. Transient metrics errors
// become kError results; a query that cannot render is returned as an error.
Result<IntervalMeasurement> MeasureInterval(const RolloutSpec& spec, Metrics& metrics,
                                            double start, double end);

// What the capacity gate (spec `capacity:`) found before a weight increase.
struct CapacityResult {
  bool pass = false;
  std::string query;  // as sent
  std::optional<double> value;
  std::string reason;      // why it passed or holds: the value against its bounds
  std::string spec_error;  // non-empty when Prometheus rejected the query as wrong
};

// Runs the capacity query with {{weight}} = `next_percent` as an instant query at `at`. It
// passes only on one finite value within min/max; no series, NaN, Inf or an unreachable
// Prometheus hold (evidence, not time). REQUIRES: spec.capacity.
Result<CapacityResult> CheckCapacity(const RolloutSpec& spec, Metrics& metrics, int next_percent,
                                     double at);

// The figures of a check result as stored in MeasurementRow::figures_json.
nlohmann::json CheckFiguresJson(const CheckFigures& figures);

// One window of AnalyzePast.
struct PastInterval {
  double start = 0;
  double end = 0;
  Verdict verdict = Verdict::kInconclusive;
  std::vector<MeasurementRow> rows;
  StepDecision decision;  // what the policy said after this window
};

struct PastAnalysis {
  std::vector<PastInterval> intervals;
  int passes = 0, failures = 0, inconclusives = 0, errors = 0;
  // The first window after which the policy said roll back or pause (the controller would have
  // stopped there), -1 when none did; the windows after it are still measured and reported.
  int stopped_at = -1;
  Decision outcome = Decision::kHold;  // kRollback, kPause, or kAdvance / kHold when none
  std::string reason;
  std::string spec_error;  // a query was wrong: measuring stopped there
};

// The most windows one AnalyzePast call measures.
inline constexpr int kMaxPastIntervals = 10000;

// Measures consecutive analysis windows [from, from + interval], ... ending at or before `to`,
// and replays the spec's policy over their verdicts. InvalidArgument when `to` is not after
// `from`, when the range holds no whole window, or more than kMaxPastIntervals.
Result<PastAnalysis> AnalyzePast(const RolloutSpec& spec, Metrics& metrics, double from,
                                 double to);

// The "cutover.canary-analysis/1" document of an AnalyzePast result.
nlohmann::json PastAnalysisJson(const RolloutSpec& spec, double from, double to,
                                const PastAnalysis& a);

// A time for --from / --to: unix seconds ("1733300000", "1733300000.5"), RFC 3339 in UTC or
// with an offset ("2026-12-04T10:00:00Z", "2026-12-04T11:00:00.5+01:00"), "now", or "now-" a
// duration ("now-1h", "now-90s"). `now` is the current unix time. InvalidArgument otherwise.
Result<double> ParseTimeArg(std::string_view text, double now);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_MEASURE_H_
