// The rollout spec (`apiVersion: cutover/v1`): a YAML file parsed into plain structs and
// validated, with every error naming the file, line and column ("spec.yaml:12:5:
// steps[2].weight: must be 0..100, got 150"). Unknown keys are errors, so a typo is never
// silently ignored. The schema, with examples, is documented in docs/canary.md.
//
// Query templates use {{name}} placeholders; which names a template may use depends on where it
// is (see kCheckPlaceholders etc. below), and any other name is a validation error.
//
// Thread-safety: the parse functions are pure (LoadSpec reads one file); specs are values.
#ifndef CUTOVER_CANARY_SPEC_H_
#define CUTOVER_CANARY_SPEC_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "canary/analysis.h"
#include "core/status.h"

namespace cutover::canary {

// The only apiVersion this build reads. Bump (cutover/v2) on an incompatible schema change.
inline constexpr std::string_view kSpecApiVersion = "cutover/v1";

using Millis = std::chrono::milliseconds;

// A spec duration in seconds.
inline double Seconds(Millis d) { return static_cast<double>(d.count()) / 1000.0; }

enum class TrafficProvider { kHaproxy, kNginx, kCommand };
std::string_view TrafficProviderName(TrafficProvider p);

struct TrafficSpec {
  TrafficProvider provider = TrafficProvider::kHaproxy;
  std::vector<std::string> baseline;  // server names (haproxy), addresses (nginx), or labels
  std::vector<std::string> canary;
  // haproxy: the runtime API, on a unix socket or a TCP address (exactly one), and the backend.
  std::string socket;
  std::string address;
  std::string backend;
  // nginx: the upstream include file rewritten with weights, the upstream's name in it, and the
  // commands that check and reload the configuration.
  std::string upstream_file;
  std::string upstream;
  std::string test_command = "nginx -t";
  std::string reload_command = "nginx -s reload";
  // command: set_weight runs with {{weight}} (canary percent 0..100); get_weight, when given,
  // prints the current canary percent.
  std::string set_weight;
  std::string get_weight;
  Millis timeout{10000};
};

struct MetricsSpec {
  std::string provider = "prometheus";
  std::string url;
  Millis timeout{5000};
  Millis step{15000};  // the scrape interval: query_range step, one sample per step
};

struct StepSpec {
  enum class Kind { kWeight, kPause };
  Kind kind = Kind::kWeight;
  int weight = 0;               // kWeight: canary percent 0..100
  Millis hold{0};               // kWeight: minimum time at this weight (0: first pass advances)
  std::optional<Millis> pause;  // kPause: how long; nullopt waits for `promote`
  int line = 0;                 // 1-based line in the spec, for messages
};

struct CheckSpec {
  std::string name;
  std::string query;
  bool vs_baseline = false;  // the query is run for both sides ({{servers}})
  CheckBounds bounds;        // bounds.min_requests is analysis.min_requests
};

struct AnalysisSpec {
  Millis interval{0};
  int64_t min_requests = 0;
  std::string requests;  // query: requests served by {{servers}} over {{interval}}
  AnalysisPolicy policy;
  std::vector<CheckSpec> checks;
  // The A/A pair (analysis.aa): two disjoint groups of baseline servers judged against each
  // other by every vs_baseline check, in the same window, to measure the noise floor. Both
  // empty when not set.
  std::vector<std::string> aa_a;
  std::vector<std::string> aa_b;
};

struct CapacitySpec {
  std::string query;  // instant query; {{weight}} is the next step's canary percent
  std::optional<double> min;
  std::optional<double> max;
};

struct HookSpec {
  std::string url;      // HTTP POST of a JSON event, a 2xx passes; or
  std::string command;  // run with /bin/sh, exit 0 passes (exactly one of the two)
  Millis timeout{10000};
};

struct HooksSpec {
  std::optional<HookSpec> pre_step;           // before each weight change; failure holds
  std::optional<HookSpec> confirm_promotion;  // before the final step; failure holds
  std::optional<HookSpec> on_rollback;        // after a rollback (errors only logged)
};

struct RolloutSpec {
  std::string api_version;
  std::string name;
  TrafficSpec traffic;
  MetricsSpec metrics;
  std::vector<StepSpec> steps;
  AnalysisSpec analysis;
  std::optional<CapacitySpec> capacity;
  HooksSpec hooks;
};

// The placeholders each kind of template may use.
//   servers: the side being measured, as a regex alternation of its names ("src1|src2")
//   canary, baseline: each side's names the same way; interval: the analysis interval ("30s");
//   weight: a canary percent (capacity: the next step's; set_weight: the one to set);
//   name, step: the rollout name and the 0-based step index (hooks).
inline constexpr std::string_view kCheckPlaceholders[] = {"servers", "canary", "baseline",
                                                          "interval"};
inline constexpr std::string_view kCapacityPlaceholders[] = {"canary", "baseline", "interval",
                                                             "weight"};
inline constexpr std::string_view kCommandPlaceholders[] = {"weight", "canary", "baseline"};
inline constexpr std::string_view kHookPlaceholders[] = {"name", "step", "weight"};

// Parses and validates spec text; `file_name` prefixes every message. On failure the Status is
// InvalidArgument with every error found, one per line, in document order.
Result<RolloutSpec> ParseSpec(std::string_view yaml_text, std::string_view file_name);

// Reads `path` and parses it (NotFound / IoError when unreadable).
Result<RolloutSpec> LoadSpec(const std::string& path);

// The names of the {{placeholders}} in `tmpl` (spaces inside the braces allowed), in order.
// InvalidArgument on an unterminated "{{".
Result<std::vector<std::string>> TemplatePlaceholders(std::string_view tmpl);

// Substitutes every {{name}} from `values`. InvalidArgument naming the first unknown one.
Result<std::string> RenderTemplate(std::string_view tmpl,
                                   const std::map<std::string, std::string>& values);

// "src1|src2" with regex metacharacters escaped ("10\\.0\\.0\\.1:80"), for =~ matchers.
std::string ServersRegex(const std::vector<std::string>& names);

// The canary package's duration parser: one or more <number><unit> terms, unit ms, s, m, h or d
// ("30s", "1m30s", "1.5s"), or "0". Will give way to core/units.h ParseDuration.
Result<Millis> ParseSpecDuration(std::string_view text);

// The analysis interval as PromQL writes it: whole seconds as "30s", else milliseconds "500ms".
std::string PromDuration(Millis d);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_SPEC_H_
