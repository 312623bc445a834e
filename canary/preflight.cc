#include "canary/preflight.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "canary/measure.h"
#include "canary/prometheus.h"

namespace cutover::canary {
namespace {

bool DoesNotAnswer(const Status& s) {
  switch (s.code()) {
    case Code::kUnavailable:
    case Code::kIoError:
    case Code::kDeadlineExceeded:
    case Code::kEnvironment:
      return true;
    default:
      return false;
  }
}

// Runs `query` and judges its answer: one series passes. A transient fault, or no series yet (a
// counter's window may hold one scrape only), is asked again, three tries `retry_wait` apart:
// the pre-flight judges the setup, not luck.
PreflightCheck QueryCheck(const std::string& name, const Result<std::string>& query,
                          Metrics& metrics, double now, const std::string& side,
                          double retry_wait) {
  PreflightCheck c{name, PreflightOutcome::kPass, ""};
  if (!query.ok()) return {name, PreflightOutcome::kFail, query.status().message()};
  Result<PromResult> r = metrics.Query(*query, now);
  for (int attempt = 1; attempt < 3; ++attempt) {
    const bool again = r.ok() ? r->series.empty() : IsTransientMetricsError(r.status());
    if (!again) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(retry_wait));
    now += retry_wait;
    r = metrics.Query(*query, now);
  }
  if (!r.ok()) {
    const bool transient = IsTransientMetricsError(r.status()) && DoesNotAnswer(r.status());
    return {name, transient ? PreflightOutcome::kUnreachable : PreflightOutcome::kFail,
            r.status().message()};
  }
  Result<std::vector<double>> v = SingleSeriesValues(*r);
  if (!v.ok()) return {name, PreflightOutcome::kFail, v.status().message()};
  if (v->empty()) {
    return {name, PreflightOutcome::kFail, "returns no series" + side + ": " + *query};
  }
  c.detail = "one series" + side + " (" + FormatNumber(v->back()) + ")";
  return c;
}

}  // namespace

std::string_view PreflightOutcomeName(PreflightOutcome o) {
  switch (o) {
    case PreflightOutcome::kPass:
      return "pass";
    case PreflightOutcome::kFail:
      return "fail";
    case PreflightOutcome::kUnreachable:
      return "no answer";
    case PreflightOutcome::kSkipped:
      return "skipped";
  }
  return "?";
}

bool PreflightReport::ok() const {
  for (const PreflightCheck& c : checks) {
    if (c.outcome != PreflightOutcome::kPass) return false;
  }
  return true;
}

int PreflightReport::ExitCode() const {
  int code = 0;
  for (const PreflightCheck& c : checks) {
    if (c.outcome == PreflightOutcome::kUnreachable) return 3;
    if (c.outcome == PreflightOutcome::kFail) code = 1;
  }
  return code;
}

std::string PreflightReport::Problems() const {
  std::string out;
  for (const PreflightCheck& c : checks) {
    if (c.outcome == PreflightOutcome::kPass || c.outcome == PreflightOutcome::kSkipped) continue;
    out += (out.empty() ? "" : "; ") + c.name + ": " + c.detail;
  }
  return out;
}

PreflightReport RunPreflight(const RolloutSpec& spec, Traffic& traffic, Metrics& metrics,
                             double now) {
  PreflightReport report;
  // The load balancer first: it does not need Prometheus.
  std::vector<std::string> servers = spec.traffic.baseline;
  servers.insert(servers.end(), spec.traffic.canary.begin(), spec.traffic.canary.end());
  PreflightCheck lb{"load-balancer", PreflightOutcome::kPass, ""};
  Result<Weights> weights = traffic.ReadWeights(servers);
  if (!weights.ok()) {
    lb.outcome =
        DoesNotAnswer(weights.status()) ? PreflightOutcome::kUnreachable : PreflightOutcome::kFail;
    lb.detail = weights.status().message();
  } else if (Status ready = traffic.CheckReady(); !ready.ok()) {
    lb.outcome = DoesNotAnswer(ready) ? PreflightOutcome::kUnreachable : PreflightOutcome::kFail;
    lb.detail = ready.message();
  } else {
    lb.detail = std::string(TrafficProviderName(spec.traffic.provider)) + " reports " +
                WeightsToJson(*weights);
  }
  report.checks.push_back(lb);

  // Retries wait one scrape (at most 2 s); queries see a window of at least five scrapes, so a
  // counter has samples to compare even right after Prometheus started.
  const double step = Seconds(spec.metrics.step);
  const double retry_wait = std::min(step, 2.0);
  const Millis window = std::max(spec.analysis.interval, 5 * spec.metrics.step);
  PreflightCheck up = QueryCheck("metrics", std::string("vector(1)"), metrics, now, "", retry_wait);
  if (up.outcome == PreflightOutcome::kPass)
    up.detail = "prometheus answers at " + spec.metrics.url;
  report.checks.push_back(up);
  const bool metrics_up = up.outcome == PreflightOutcome::kPass;
  auto add = [&](const std::string& name, const Result<std::string>& query,
                 const std::string& side) {
    if (!metrics_up) {
      report.checks.push_back({name, PreflightOutcome::kSkipped, "prometheus does not answer"});
      return;
    }
    report.checks.push_back(QueryCheck(name, query, metrics, now, side, retry_wait));
  };
  const std::string for_baseline = " for the baseline";
  if (!spec.analysis.requests.empty()) {
    add("requests",
        RenderCheckQuery(spec, spec.analysis.requests, spec.traffic.baseline, window),
        for_baseline);
  }
  for (const CheckSpec& check : spec.analysis.checks) {
    add("check " + check.name,
        RenderCheckQuery(spec, check.query, spec.traffic.baseline, window), for_baseline);
  }
  if (spec.capacity) {
    int first = 0;
    for (const StepSpec& s : spec.steps) {
      if (s.kind == StepSpec::Kind::kWeight) {
        first = s.weight;
        break;
      }
    }
    std::map<std::string, std::string> values = {{"canary", ServersRegex(spec.traffic.canary)},
                                                 {"baseline", ServersRegex(spec.traffic.baseline)},
                                                 {"interval", PromDuration(window)},
                                                 {"weight", std::to_string(first)}};
    add("capacity", RenderTemplate(spec.capacity->query, values), "");
    // No capacity series is the gate's business (it holds until there is one), not a wrong spec.
    PreflightCheck& c = report.checks.back();
    if (c.outcome == PreflightOutcome::kFail && c.detail.rfind("returns no series", 0) == 0) {
      c.outcome = PreflightOutcome::kPass;
      c.detail = "no series now: the gate holds until it has one";
    }
  }
  return report;
}

nlohmann::json PreflightJson(const RolloutSpec& spec, const PreflightReport& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const PreflightCheck& c : report.checks) {
    checks.push_back({{"name", c.name},
                      {"outcome", std::string(PreflightOutcomeName(c.outcome))},
                      {"detail", c.detail}});
  }
  // Bump the version on an incompatible change of this document.
  return {{"schema", "cutover.canary-preflight/1"},
          {"rollout", spec.name},
          {"ok", report.ok()},
          {"checks", std::move(checks)}};
}

std::string PreflightTable(const RolloutSpec& spec, const PreflightReport& report) {
  std::string out = "pre-flight of " + spec.name + ": " +
                    (report.ok() ? std::string("every check passed") : "not ready") + "\n";
  for (const PreflightCheck& c : report.checks) {
    out += "  " + c.name + ": " + std::string(PreflightOutcomeName(c.outcome)) +
           (c.detail.empty() ? "" : " (" + c.detail + ")") + "\n";
  }
  return out;
}

}  // namespace cutover::canary
