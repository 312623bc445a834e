// The pre-flight of a rollout: what `canary start` checks before the first weight change, and
// `canary lint --live` runs alone, without moving traffic.
//
//   metrics        Prometheus answers a trivial query (vector(1))
//   load-balancer  the provider answers and reports every server of the spec (HAProxy: the
//                  runtime API knows each; nginx: the upstream file parses and names each;
//                  command: get_weight answers) and is ready (nginx: test_command passes)
//   requests       analysis.requests, for the baseline: parses and returns one series
//   check NAME     each check's query, for the baseline: parses and returns one series
// ({{interval}} is at least five scrape steps here, and a query without a series yet is asked
// again twice, one scrape apart, so a counter just scraped for the first time does not fail it)
//   capacity       the capacity query at the first step's weight parses (no series passes: the
//                  capacity gate holds until there is one)
// A check that does not answer (Prometheus or the load balancer unreachable, a timeout) is
// kUnreachable; one that answers wrongly (an unknown server, a query Prometheus rejects, no
// series) is kFail. Once Prometheus or the load balancer does not answer, the checks that need it
// are not run (kSkipped).
//
// Thread-safety: RunPreflight keeps no state; `traffic` and `metrics` are used from the calling
// thread.
#ifndef CUTOVER_CANARY_PREFLIGHT_H_
#define CUTOVER_CANARY_PREFLIGHT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "canary/prometheus_client.h"
#include "canary/spec.h"
#include "canary/traffic.h"
#include "core/status.h"

namespace cutover::canary {

enum class PreflightOutcome { kPass, kFail, kUnreachable, kSkipped };
std::string_view PreflightOutcomeName(PreflightOutcome o);

struct PreflightCheck {
  std::string name;  // "metrics", "load-balancer", "requests", "check error-rate", "capacity"
  PreflightOutcome outcome = PreflightOutcome::kPass;
  std::string detail;  // what was seen ("prometheus: ... connection refused", "1 series")
};

struct PreflightReport {
  std::vector<PreflightCheck> checks;
  // True when every check passed.
  bool ok() const;
  // 0 every check passed, 3 something did not answer, 1 otherwise (a check failed).
  int ExitCode() const;
  // "metrics: prometheus: ... ; check error-rate: returns no series for the baseline": the
  // checks that did not pass, for one error line.
  std::string Problems() const;
};

// Runs the pre-flight of `spec` at unix time `now`.
PreflightReport RunPreflight(const RolloutSpec& spec, Traffic& traffic, Metrics& metrics,
                             double now);

// The "cutover.canary-preflight/1" document, and its table (one line per check).
nlohmann::json PreflightJson(const RolloutSpec& spec, const PreflightReport& report);
std::string PreflightTable(const RolloutSpec& spec, const PreflightReport& report);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_PREFLIGHT_H_
