#include "canary/measure.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "canary/prometheus.h"
#include "core/time_util.h"

namespace cutover::canary {
namespace {

using nlohmann::json;

json Opt(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

// The one series' values of a result; InvalidArgument for several series.
Result<std::vector<double>> Values(const Result<PromResult>& r) {
  if (!r.ok()) return r.status();
  return SingleSeriesValues(*r);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The placeholders every query template of the spec may use: each side and the interval.
std::map<std::string, std::string> QueryValues(const RolloutSpec& spec, Millis interval) {
  return {{"canary", ServersRegex(spec.traffic.canary)},
          {"baseline", ServersRegex(spec.traffic.baseline)},
          {"interval", PromDuration(interval)}};
}

}  // namespace

Result<std::string> RenderCheckQuery(const RolloutSpec& spec, const std::string& tmpl,
                                     const std::vector<std::string>& side,
                                     std::optional<Millis> interval) {
  std::map<std::string, std::string> v =
      QueryValues(spec, interval.value_or(spec.analysis.interval));
  v["servers"] = ServersRegex(side);
  return RenderTemplate(tmpl, v);
}

Result<CapacityResult> CheckCapacity(const RolloutSpec& spec, Metrics& metrics, int next_percent,
                                     double at) {
  const CapacitySpec& c = *spec.capacity;
  CapacityResult out;
  std::map<std::string, std::string> values = QueryValues(spec, spec.analysis.interval);
  values["weight"] = std::to_string(next_percent);
  CUTOVER_ASSIGN_OR_RETURN(out.query, RenderTemplate(c.query, values));
  Result<std::vector<double>> v = Values(metrics.Query(out.query, at));
  if (!v.ok()) {
    if (!IsTransientMetricsError(v.status())) {
      out.spec_error = "spec error in capacity.query: " + v.status().message();
    }
    out.reason = "capacity query failed: " + v.status().message();
    return out;
  }
  if (v->empty()) {
    out.reason = "capacity query returned no series";
    return out;
  }
  out.value = v->back();
  const std::string shown = FormatNumber(*out.value);
  if (!std::isfinite(*out.value)) {
    out.reason = "capacity is " + shown + ", not a finite value";
  } else if (c.min && *out.value < *c.min) {
    out.reason = "capacity " + shown + " below min " + FormatNumber(*c.min);
  } else if (c.max && *out.value > *c.max) {
    out.reason = "capacity " + shown + " above max " + FormatNumber(*c.max);
  } else {
    out.pass = true;
    out.reason = "capacity " + shown + " within bounds for " + std::to_string(next_percent) + "%";
  }
  return out;
}

json CheckFiguresJson(const CheckFigures& f) {
  json j = {{"canary_samples", f.canary_samples},
            {"baseline_samples", f.baseline_samples},
            {"ratio", Opt(f.ratio)}};
  if (f.test) {
    j["test"] = {{"u", f.test->u},
                 {"z", std::isfinite(f.test->z) ? json(f.test->z) : json(nullptr)},
                 {"p_value", f.test->p_value},
                 {"exact", f.test->exact},
                 {"effect", std::string(EffectName(f.test->effect))}};
  }
  return j;
}

Result<IntervalMeasurement> MeasureInterval(const RolloutSpec& spec, Metrics& metrics,
                                            double start, double end) {
  IntervalMeasurement out;
  const double settle = Seconds(spec.metrics.step);
  auto row = [&](const std::string& check, const std::string& query) {
    MeasurementRow m;
    m.check = check;
    m.query = query;
    m.window_start = start;
    m.window_end = end;
    return m;
  };
  // The sides measured: canary, baseline, and the A/A pair's b and a when the spec has one.
  enum Side { kCanary, kBaseline, kAaB, kAaA };
  const std::vector<std::string>* names[] = {&spec.traffic.canary, &spec.traffic.baseline,
                                             &spec.analysis.aa_b, &spec.analysis.aa_a};
  const char* request_rows[] = {"requests:canary", "requests:baseline", "requests:aa-b",
                                "requests:aa-a"};
  const bool aa = !spec.analysis.aa_a.empty();
  const int sides = aa ? 4 : 2;
  std::optional<double> requests[4];
  std::string request_error[2];  // [0]: canary/baseline, [1]: the A/A pair
  if (spec.analysis.min_requests > 0) {
    for (int side = 0; side < sides; ++side) {
      CUTOVER_ASSIGN_OR_RETURN(std::string q,
                               RenderCheckQuery(spec, spec.analysis.requests, *names[side]));
      Result<std::vector<double>> v = Values(metrics.Query(q, end));
      if (!v.ok() && !IsTransientMetricsError(v.status())) {
        out.spec_error = "spec error in analysis.requests: " + v.status().message();
        return out;
      }
      if (!v.ok()) {
        request_error[side / 2] = v.status().message();
      } else if (!v->empty()) {
        requests[side] = v->back();
      }
      MeasurementRow m = row(request_rows[side], q);
      m.canary_value = requests[side];
      m.verdict = v.ok() ? "info" : "error";
      m.reason = v.ok() ? "" : v.status().message();
      out.rows.push_back(std::move(m));
    }
  }
  for (const CheckSpec& check : spec.analysis.checks) {
    const bool ranged = check.bounds.test == StatTest::kMannWhitney;
    // inputs[0]: canary against baseline; inputs[1]: the A/A pair, b in the canary's place.
    CheckInput inputs[2];
    for (int pair = 0; pair < 2; ++pair) {
      inputs[pair].canary_requests = requests[2 * pair];
      inputs[pair].baseline_requests = requests[2 * pair + 1];
    }
    std::string query_text;
    Status error[2];
    const int measured = check.vs_baseline ? sides : 1;
    for (int side = 0; side < measured && error[side / 2].ok(); ++side) {
      CUTOVER_ASSIGN_OR_RETURN(std::string q, RenderCheckQuery(spec, check.query, *names[side]));
      if (side == kCanary) query_text = q;
      Result<std::vector<double>> v =
          Values(ranged ? metrics.QueryRange(q, start, end, settle) : metrics.Query(q, end));
      if (!v.ok()) {
        error[side / 2] = v.status();
        continue;
      }
      CheckInput& in = inputs[side / 2];
      (side % 2 == 0 ? in.canary : in.baseline) = std::move(*v);
    }
    for (const Status& e : error) {
      if (!e.ok() && !IsTransientMetricsError(e)) {
        out.spec_error = "spec error in check " + check.name + ": " + e.message();
        return out;
      }
    }
    CheckResult r;
    if (!request_error[0].empty()) {
      r = ErrorResult("requests: " + request_error[0]);
    } else if (!error[0].ok()) {
      r = ErrorResult(error[0].message());
    } else {
      r = JudgeCheck(check.bounds, inputs[0]);
    }
    std::optional<MeasurementRow> aa_row;
    if (aa && check.vs_baseline) {
      // The pair is judged by the relative bounds alone: an absolute bound is about the canary.
      CheckBounds relative = check.bounds;
      relative.max.reset();
      relative.min.reset();
      CheckResult pair = !request_error[1].empty() ? ErrorResult("requests: " + request_error[1])
                         : !error[1].ok()          ? ErrorResult(error[1].message())
                                                   : JudgeCheck(relative, inputs[1]);
      aa_row = row("aa:" + check.name, "");
      aa_row->canary_value = pair.figures.canary_value;
      aa_row->baseline_value = pair.figures.baseline_value;
      aa_row->figures_json = CheckFiguresJson(pair.figures).dump();
      aa_row->verdict = std::string(VerdictName(pair.verdict));
      aa_row->reason = pair.reason;
      r = ApplyNoiseFloor(check.bounds, inputs[0], std::move(r), pair);
    }
    MeasurementRow m = row(check.name, query_text);
    m.canary_value = r.figures.canary_value;
    m.baseline_value = r.figures.baseline_value;
    m.figures_json = CheckFiguresJson(r.figures).dump();
    m.verdict = std::string(VerdictName(r.verdict));
    m.reason = r.reason;
    out.rows.push_back(std::move(m));
    if (aa_row) out.rows.push_back(std::move(*aa_row));
    out.results.push_back(std::move(r));
  }
  return out;
}

Result<PastAnalysis> AnalyzePast(const RolloutSpec& spec, Metrics& metrics, double from,
                                 double to) {
  const double interval = Seconds(spec.analysis.interval);
  if (!(std::isfinite(from) && std::isfinite(to) && to > from)) {
    return Status::InvalidArgument("canary analyze: --to must be after --from");
  }
  if (!(interval > 0)) return Status::InvalidArgument("canary analyze: the spec has no interval");
  const double windows = std::floor((to - from) / interval + 1e-9);
  if (windows < 1) {
    return Status::InvalidArgument("canary analyze: the range is shorter than one analysis " +
                                   std::string("interval (") + PromDuration(spec.analysis.interval) +
                                   ")");
  }
  if (windows > kMaxPastIntervals) {
    return Status::InvalidArgument("canary analyze: the range holds " +
                                   std::to_string(static_cast<int64_t>(windows)) +
                                   " intervals, more than " + std::to_string(kMaxPastIntervals) +
                                   "; narrow it or lengthen analysis.interval");
  }
  PastAnalysis a;
  AnalysisState state;
  for (int i = 0; i < static_cast<int>(windows); ++i) {
    PastInterval w;
    w.start = from + i * interval;
    w.end = w.start + interval;
    CUTOVER_ASSIGN_OR_RETURN(IntervalMeasurement m, MeasureInterval(spec, metrics, w.start, w.end));
    if (!m.spec_error.empty()) {
      a.spec_error = m.spec_error;
      break;
    }
    w.verdict = CombineChecks(m.results);
    w.rows = std::move(m.rows);
    switch (w.verdict) {
      case Verdict::kPass: ++a.passes; break;
      case Verdict::kFail: ++a.failures; break;
      case Verdict::kInconclusive: ++a.inconclusives; break;
      case Verdict::kError: ++a.errors; break;
    }
    state = RecordInterval(state, w.verdict);
    // The hold does not matter here: the range stands for one step whose hold is over.
    w.decision = Decide(state, spec.analysis.policy, /*hold_elapsed=*/true);
    if (a.stopped_at < 0) {
      a.outcome = w.decision.decision;
      a.reason = w.decision.reason;
      if (a.outcome == Decision::kRollback || a.outcome == Decision::kPause) a.stopped_at = i;
    }
    a.intervals.push_back(std::move(w));
  }
  return a;
}

json PastAnalysisJson(const RolloutSpec& spec, double from, double to, const PastAnalysis& a) {
  json intervals = json::array();
  for (const PastInterval& w : a.intervals) {
    json checks = json::array();
    for (const MeasurementRow& m : w.rows) {
      checks.push_back({{"check", m.check},
                        {"query", m.query},
                        {"canary", Opt(m.canary_value)},
                        {"baseline", Opt(m.baseline_value)},
                        {"figures", json::parse(m.figures_json.empty() ? "null" : m.figures_json,
                                                nullptr, false)},
                        {"verdict", m.verdict},
                        {"reason", m.reason}});
    }
    intervals.push_back({{"window", {w.start, w.end}},
                         {"verdict", std::string(VerdictName(w.verdict))},
                         {"decision", std::string(DecisionName(w.decision.decision))},
                         {"decision_reason", w.decision.reason},
                         {"checks", std::move(checks)}});
  }
  json doc = {{"schema", "cutover.canary-analysis/1"},
              {"name", spec.name},
              {"from", from},
              {"to", to},
              {"interval_s", Seconds(spec.analysis.interval)},
              {"counts",
               {{"intervals", a.intervals.size()},
                {"pass", a.passes},
                {"fail", a.failures},
                {"inconclusive", a.inconclusives},
                {"error", a.errors}}},
              {"outcome", std::string(DecisionName(a.outcome))},
              {"reason", a.reason},
              {"stopped_at", a.stopped_at >= 0 ? json(a.stopped_at) : json(nullptr)},
              {"intervals", std::move(intervals)}};
  if (!a.spec_error.empty()) doc["spec_error"] = a.spec_error;
  return doc;
}

Result<double> ParseTimeArg(std::string_view text, double now) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "time '" + std::string(text.substr(0, 64)) +
        "': expected unix seconds, RFC 3339 (2026-12-04T10:00:00Z), now or now-DURATION");
  };
  if (text == "now") return now;
  if (text.substr(0, 4) == "now-") {
    Result<Millis> d = ParseSpecDuration(text.substr(4));
    if (!d.ok()) return bad();
    return now - Seconds(*d);
  }
  if (!text.empty() && IsDigit(text[0]) && text.find('-') == std::string_view::npos) {
    size_t p = 0;
    while (p < text.size() && IsDigit(text[p])) ++p;
    if (p < text.size() && text[p] == '.') {
      ++p;
      size_t first = p;
      while (p < text.size() && IsDigit(text[p])) ++p;
      if (p == first) return bad();
    }
    if (p != text.size() || text.size() > 24) return bad();
    double v = std::strtod(std::string(text).c_str(), nullptr);
    if (!(v >= 0 && v < 253402300800.0)) return bad();  // before year 10000
    return v;
  }
  std::optional<double> t = ParseRfc3339(text);
  if (!t) return bad();
  return *t;
}

}  // namespace cutover::canary
