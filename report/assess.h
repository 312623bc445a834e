// The assessment (`cutover assess`): joins a source and a target fingerprint (probe diff), and
// optionally two compat records (compat compare), a datasync plan and a canary rollout history,
// into one verdict with its reasons, rendered as HTML, Markdown, JSON ("cutover.report/2",
// docs/schemas/report-2.json) and JUnit XML. With a cost file (report/cost.h) it also prices a
// unit of work on each side from the measured compat throughput.
//
// Verdict:
//   no-go          a blocker: a diff blocker, a compat case that regressed or broke, a rollout
//                  that rolled back (confirmed or not)
//   go-with-risks  no blocker, but warnings: diff warnings, numerics drift, a slower case, a case
//                  missing on one side, a rollout not promoted yet
//   go             neither
//
// Measured ceilings: a compat record carries no separate peak measurement, so each record's
// ceilings are its own best measured rates: GB/s from the bandwidth ops (copy, triad), GFLOP/s
// from its fastest GEMM. Each case's fraction of its unit's ceiling is charted per side.
//
// Thread-safety: pure functions over values.
#ifndef CUTOVER_REPORT_ASSESS_H_
#define CUTOVER_REPORT_ASSESS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/compare.h"
#include "compat/record.h"
#include "core/fingerprint.h"
#include "core/junit.h"
#include "core/status.h"
#include "probe/diff.h"
#include "report/cluster_section.h"
#include "report/cost.h"

namespace cutover::report {

// Bump on any incompatible change to the report document.
inline constexpr char kReportSchema[] = "cutover.report/2";
// The chart of the cost model, written beside report.md (which links it).
inline constexpr char kCostChartFile[] = "cost-chart.svg";

struct AssessInputs {
  Fingerprint source, target;
  probe::DiffMode mode = probe::DiffMode::kHost;
  std::optional<CompatRecord> compat_source, compat_target;
  std::optional<nlohmann::json> datasync_plan;       // cutover.datasync-plan/1
  std::optional<nlohmann::json> canary_history;      // cutover.rollout-history/1
  std::optional<double> price_source, price_target;  // per GPU-hour, any currency
  std::optional<CostModel> cost_model;  // --cost; needs both compat records, excludes prices
  // --cluster: two cutover.compat-cluster/1 records (compat/cluster_compare.h
  // LoadClusterRecord), and the floors they are held against (the built-in table unless
  // --fabric-floors names a file).
  std::optional<nlohmann::json> cluster_source, cluster_target;
  std::optional<probe::FabricFloors> fabric_floors;
  std::map<std::string, std::string> input_paths;  // "source" -> path, shown in the report
  bool redacted = false;
  std::string generated_at;  // RFC 3339 UTC
};

// One finding of the assessment, from any part.
struct ReportFinding {
  std::string severity;  // "blocker" | "warning" | "info"
  std::string code;      // "driver.too_old_for_toolkit", "compat.regression", ...
  std::string component;
  std::string source, target;  // compared values, "" when not applicable
  std::string message;
  std::string fix;
};

// One row of the side-by-side host table.
struct HostRow {
  std::string field;
  std::string source, target;
  bool differs = false;
};

// One compat case, as the report shows it.
struct CompatRow {
  CaseComparison cmp;
  std::string rate_unit;
  double source_rate = 0, target_rate = 0;          // 0 when not measured
  double source_fraction = 0, target_fraction = 0;  // of that side's ceiling; 0 when unknown
};

struct CostRow {
  std::string rate_unit;                              // "GFLOP/s" | "GB/s"
  double source_rate = 0, target_rate = 0;            // geometric mean over cases ok on both sides
  double source_per_price = 0, target_per_price = 0;  // rate * 3600 / price per GPU-hour
  int cases = 0;
};

// What the report assessed, and with what input: one row per area (fingerprints, numerics, speed,
// stability, data plan, canary), so a verdict never hides what was not measured.
struct CoverageRow {
  std::string area;
  bool assessed = false;
  std::string input;  // what it was assessed with, or why not ("no --compat records")
};

struct Assessment {
  std::string verdict;   // "go" | "go-with-risks" | "no-go"
  std::string headline;  // one sentence: why
  AssessInputs inputs;
  probe::DiffReport diff;
  std::vector<ReportFinding> findings;  // blockers, then warnings, then infos
  std::vector<HostRow> hosts;
  std::optional<Comparison> comparison;
  std::vector<CompatRow> compat;
  std::map<std::string, double> source_ceilings, target_ceilings;  // unit -> rate
  std::vector<CostRow> cost;
  std::optional<CostReport> cost_model;   // when inputs.cost_model
  std::optional<ClusterSection> cluster;  // when inputs.cluster_source
  std::vector<CoverageRow> coverage;

  int Count(const std::string& severity) const;
  int ExitCode() const { return verdict == "no-go" ? 1 : 0; }
};

// Checks the optional documents' schemas (InvalidArgument naming the input), that the two compat
// records are comparable case by case (compat/compare.h CheckComparable: FailedPrecondition
// "assess: --compat: src.rec has op table version 1, dst.rec 2: ...") and judges. A cost model
// needs both compat records and no price (InvalidArgument), and its measured throughput
// (report/cost.h ComputeCost).
Result<Assessment> Assess(AssessInputs inputs);

// The ceilings of a record: its calibration (copy GB/s, GEMM GFLOP/s) when it has one, else the
// best measured rate per unit (see the header comment); units with no case measured are absent.
// A ceiling is never below a rate the record measured in its unit (a calibration that ran slower
// than a case is raised to that case), so no fraction of a ceiling exceeds 100%.
std::map<std::string, double> MeasuredCeilings(const CompatRecord& rec);

nlohmann::json AssessmentToJson(const Assessment& a);
// One suite "findings" (a case per finding: blocker = failure, warning = passed with the message
// in system-out), plus compat's suites (a case per compat case).
JunitReport AssessmentJunit(const Assessment& a);
std::string RenderMarkdown(const Assessment& a);
// Self-contained HTML: inline CSS and SVG only, no script, a Content-Security-Policy that forbids
// every external load.
std::string RenderHtml(const Assessment& a);
// The one-line summary the command prints.
std::string VerdictLine(const Assessment& a);

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_ASSESS_H_
