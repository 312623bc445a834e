#include "canary/spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <span>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "core/file_util.h"
#include "core/yaml_reader.h"

namespace cutover::canary {
namespace {

using yaml::Index;
using yaml::JoinKeys;
using yaml::Sub;

// The generic reader, plus the spec's own value kinds.
class SpecParser : public yaml::Reader {
 public:
  using Reader::Reader;

  // A duration; zero allowed only when `allow_zero`.
  std::optional<Millis> Duration(const YAML::Node& map, const std::string& path, const char* key,
                                 bool required, bool allow_zero) {
    YAML::Node v = Get(map, path, key, required);
    if (!v.IsDefined()) return std::nullopt;
    if (!v.IsScalar()) {
      Error(v, Sub(path, key), "must be a duration such as 30s or 2m");
      return std::nullopt;
    }
    Result<Millis> d = ParseSpecDuration(v.Scalar());
    if (!d.ok()) {
      Error(v, Sub(path, key), d.status().message());
      return std::nullopt;
    }
    if (!allow_zero && d->count() == 0) {
      Error(v, Sub(path, key), "must be above 0");
      return std::nullopt;
    }
    return *d;
  }

  // Checks the placeholders of the template under `key` against `allowed`.
  void Placeholders(const YAML::Node& map, const std::string& path, const char* key,
                    const std::string& tmpl, std::span<const std::string_view> allowed) {
    Result<std::vector<std::string>> names = TemplatePlaceholders(tmpl);
    if (!names.ok()) {
      Error(map[key], Sub(path, key), names.status().message());
      return;
    }
    for (const std::string& n : *names) {
      if (std::find(allowed.begin(), allowed.end(), n) == allowed.end()) {
        Error(map[key], Sub(path, key),
              "unknown placeholder {{" + n + "}} (allowed here: " + JoinKeys(allowed) + ")");
      }
    }
  }

};

bool IsShellSafeName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == ':' ||
           c == '/' || c == '-';
  });
}

bool UsesPlaceholder(const std::string& tmpl, std::string_view name) {
  Result<std::vector<std::string>> names = TemplatePlaceholders(tmpl);
  if (!names.ok()) return true;  // the malformed template is reported on its own
  return std::find(names->begin(), names->end(), name) != names->end();
}

constexpr std::string_view kTopKeys[] = {"apiVersion", "name",     "traffic",  "metrics",
                                         "steps",      "analysis", "capacity", "hooks"};
constexpr std::string_view kProviders[] = {"haproxy", "nginx", "command"};
constexpr std::string_view kHaproxyKeys[] = {"provider", "socket",   "address",
                                             "backend",  "baseline", "canary"};
constexpr std::string_view kNginxKeys[] = {"provider", "upstream_file", "upstream",      "baseline",
                                           "canary",   "test_command",  "reload_command"};
constexpr std::string_view kCommandKeys[] = {"provider", "set_weight", "get_weight",
                                             "timeout",  "baseline",   "canary"};
constexpr std::string_view kMetricsKeys[] = {"provider", "url", "timeout", "step"};
constexpr std::string_view kMetricProviders[] = {"prometheus"};
constexpr std::string_view kStepKeys[] = {"weight", "hold", "pause"};
constexpr std::string_view kPauseKeys[] = {"duration"};
constexpr std::string_view kAnalysisKeys[] = {"interval",
                                              "min_requests",
                                              "requests",
                                              "failure_limit",
                                              "inconclusive_limit",
                                              "consecutive_error_limit",
                                              "on_inconclusive",
                                              "checks",
                                              "aa"};
constexpr std::string_view kAaKeys[] = {"a", "b"};
constexpr std::string_view kOnInconclusive[] = {"rollback", "pause"};
constexpr std::string_view kCheckKeys[] = {"name",        "query", "max",      "min",
                                           "vs_baseline", "worse", "aggregate"};
constexpr std::string_view kVsBaselineKeys[] = {"max_ratio", "min_ratio", "test", "confidence",
                                                "min_samples"};
constexpr std::string_view kWorse[] = {"higher", "lower"};
constexpr std::string_view kAggregates[] = {"mean", "median", "max", "min", "last"};
constexpr std::string_view kTests[] = {"mann-whitney"};
constexpr std::string_view kCapacityKeys[] = {"query", "min", "max"};
constexpr std::string_view kHooksKeys[] = {"pre_step", "confirm_promotion", "on_rollback"};
constexpr std::string_view kHookKeys[] = {"url", "command", "timeout"};

void ParseTraffic(SpecParser& p, const YAML::Node& n, TrafficSpec& t) {
  const std::string path = "traffic";
  if (!n.IsMap()) {
    p.Error(n, path, "must be a mapping");
    return;
  }
  std::optional<std::string> provider = p.Enum(n, path, "provider", true, kProviders);
  if (!provider) return;
  if (*provider == "haproxy") {
    t.provider = TrafficProvider::kHaproxy;
    p.Map(n, path, kHaproxyKeys);
    auto socket = p.String(n, path, "socket", false);
    auto address = p.String(n, path, "address", false);
    if (socket.has_value() == address.has_value()) {
      p.Error(n, path, "give exactly one of socket (a unix socket path) or address (host:port)");
    }
    t.socket = socket.value_or("");
    t.address = address.value_or("");
    t.backend = p.String(n, path, "backend", true).value_or("");
  } else if (*provider == "nginx") {
    t.provider = TrafficProvider::kNginx;
    p.Map(n, path, kNginxKeys);
    t.upstream_file = p.String(n, path, "upstream_file", true).value_or("");
    t.upstream = p.String(n, path, "upstream", true).value_or("");
    t.test_command = p.String(n, path, "test_command", false).value_or(t.test_command);
    t.reload_command = p.String(n, path, "reload_command", false).value_or(t.reload_command);
  } else {
    t.provider = TrafficProvider::kCommand;
    p.Map(n, path, kCommandKeys);
    if (auto set = p.String(n, path, "set_weight", true)) {
      t.set_weight = *set;
      p.Placeholders(n, path, "set_weight", *set, kCommandPlaceholders);
      if (!UsesPlaceholder(*set, "weight")) {
        p.Error(n["set_weight"], Sub(path, "set_weight"), "must use {{weight}}");
      }
    }
    if (auto get = p.String(n, path, "get_weight", true)) {
      t.get_weight = *get;
      p.Placeholders(n, path, "get_weight", *get, kCommandPlaceholders);
      if (UsesPlaceholder(*get, "weight")) {
        p.Error(n["get_weight"], Sub(path, "get_weight"),
                "{{weight}} is what get_weight prints; it has no value here");
      }
    }
    t.timeout = p.Duration(n, path, "timeout", false, false).value_or(t.timeout);
  }
  t.baseline = p.StringList(n, path, "baseline", true).value_or(std::vector<std::string>{});
  t.canary = p.StringList(n, path, "canary", true).value_or(std::vector<std::string>{});
  for (const std::string& c : t.canary) {
    if (std::find(t.baseline.begin(), t.baseline.end(), c) != t.baseline.end()) {
      p.Error(n["canary"], "traffic.canary", c + " is also in traffic.baseline");
    }
  }
  if (t.provider == TrafficProvider::kCommand) {
    // The names reach /bin/sh unquoted through {{canary}} and {{baseline}}.
    for (const char* side : {"baseline", "canary"}) {
      for (const std::string& name : side[0] == 'b' ? t.baseline : t.canary) {
        if (!IsShellSafeName(name)) {
          p.Error(
              n[side], Sub(path, side),
              "'" + name + "': command traffic names may use only letters, digits and . _ : / -");
        }
      }
    }
  }
}

void ParseMetrics(SpecParser& p, const YAML::Node& n, MetricsSpec& m) {
  const std::string path = "metrics";
  if (!p.Map(n, path, kMetricsKeys)) return;
  m.provider = p.Enum(n, path, "provider", true, kMetricProviders).value_or(m.provider);
  if (auto url = p.String(n, path, "url", true)) {
    if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      p.Error(n["url"], "metrics.url", "must start with http:// or https://, got " + *url);
    }
    m.url = *url;
  }
  m.timeout = p.Duration(n, path, "timeout", false, false).value_or(m.timeout);
  m.step = p.Duration(n, path, "step", false, false).value_or(m.step);
}

void ParseSteps(SpecParser& p, const YAML::Node& n, std::vector<StepSpec>& steps) {
  const std::string path = "steps";
  if (!n.IsSequence() || n.size() == 0) {
    p.Error(n, path, "must be a non-empty list of steps");
    return;
  }
  bool any_weight = false;
  for (size_t i = 0; i < n.size(); ++i) {
    const YAML::Node& s = n[i];
    const std::string sp = Index(path, i);
    if (!p.Map(s, sp, kStepKeys)) continue;
    StepSpec step;
    step.line = s.Mark().line + 1;
    const bool has_pause = s["pause"].IsDefined();
    const bool has_weight = s["weight"].IsDefined();
    if (has_pause == has_weight) {
      p.Error(s, sp, "a step is either {weight, hold} or {pause: {...}}");
      continue;
    }
    if (has_pause) {
      step.kind = StepSpec::Kind::kPause;
      if (s["hold"].IsDefined()) p.Error(s["hold"], sp + ".hold", "a pause step has no hold");
      const YAML::Node& pause = s["pause"];
      if (pause.IsNull()) {  // a null node's mark is the next token's: point at the step
        p.Error(s, sp + ".pause",
                "must be a mapping: {} waits for promote, "
                "{duration: 10m} waits that long");
        continue;
      }
      if (!p.Map(pause, sp + ".pause", kPauseKeys)) continue;
      step.pause = p.Duration(pause, sp + ".pause", "duration", false, false);
    } else {
      any_weight = true;
      step.kind = StepSpec::Kind::kWeight;
      step.weight = static_cast<int>(p.Int(s, sp, "weight", true, 0, 100).value_or(0));
      step.hold = p.Duration(s, sp, "hold", false, true).value_or(Millis{0});
    }
    steps.push_back(step);
  }
  if (!any_weight && !steps.empty()) p.Error(n, path, "needs at least one weight step");
}

void ParseCheck(SpecParser& p, const YAML::Node& n, const std::string& path, CheckSpec& c) {
  if (!p.Map(n, path, kCheckKeys)) return;
  c.name = p.String(n, path, "name", true).value_or("");
  if (auto q = p.String(n, path, "query", true)) {
    c.query = *q;
    p.Placeholders(n, path, "query", *q, kCheckPlaceholders);
  }
  CheckBounds& b = c.bounds;
  b.max = p.Number(n, path, "max", false);
  b.min = p.Number(n, path, "min", false);
  if (b.max && b.min && *b.min > *b.max) {
    p.Error(n["min"], path + ".min", "must not be above max (" + FormatNumber(*b.max) + ")");
  }
  if (auto w = p.Enum(n, path, "worse", false, kWorse)) {
    b.worse = *w == "lower" ? Worse::kLower : Worse::kHigher;
  }
  if (auto a = p.Enum(n, path, "aggregate", false, kAggregates)) {
    static constexpr Aggregate kValues[] = {Aggregate::kMean, Aggregate::kMedian, Aggregate::kMax,
                                            Aggregate::kMin, Aggregate::kLast};
    for (size_t i = 0; i < std::size(kAggregates); ++i) {
      if (*a == kAggregates[i]) b.aggregate = kValues[i];
    }
  }
  const YAML::Node vs = n["vs_baseline"];
  if (vs.IsDefined()) {
    const std::string vp = path + ".vs_baseline";
    if (p.Map(vs, vp, kVsBaselineKeys)) {
      c.vs_baseline = true;
      b.max_ratio = p.Number(vs, vp, "max_ratio", false);
      b.min_ratio = p.Number(vs, vp, "min_ratio", false);
      for (const char* k : {"max_ratio", "min_ratio"}) {
        std::optional<double> r = std::string_view(k) == "max_ratio" ? b.max_ratio : b.min_ratio;
        if (r && *r <= 0) p.Error(vs[k], vp + "." + k, "must be above 0, got " + FormatNumber(*r));
      }
      if (b.max_ratio && b.min_ratio && *b.min_ratio > *b.max_ratio) {
        p.Error(vs["min_ratio"], vp + ".min_ratio",
                "must not be above max_ratio (" + FormatNumber(*b.max_ratio) + ")");
      }
      if (p.Enum(vs, vp, "test", false, kTests)) b.test = StatTest::kMannWhitney;
      const bool test_given = vs["test"].IsDefined();
      if (auto conf = p.Number(vs, vp, "confidence", false)) {
        if (!test_given) {
          p.Error(vs["confidence"], vp + ".confidence", "only applies with test: mann-whitney");
        } else if (*conf <= 0.5 || *conf >= 1) {
          p.Error(vs["confidence"], vp + ".confidence",
                  "must be between 0.5 and 1 (exclusive), got " + FormatNumber(*conf));
        } else {
          b.confidence = *conf;  // also kept when the test name was wrong
        }
      }
      if (auto ms = p.Int(vs, vp, "min_samples", false, 3, 100000)) {
        if (!test_given) {
          p.Error(vs["min_samples"], vp + ".min_samples", "only applies with test: mann-whitney");
        } else {
          b.min_samples = static_cast<int>(*ms);
        }
      }
      if (b.test != StatTest::kNone) {
        // A test that can never reach its level would hold every interval as inconclusive.
        const double alpha = (1 - b.confidence) / 2;
        if (MinAttainablePValue(b.min_samples, b.min_samples) > alpha) {
          int k = b.min_samples;
          while (MinAttainablePValue(k, k) > alpha) ++k;
          p.Error(vs["min_samples"].IsDefined() ? vs["min_samples"] : vs, vp + ".min_samples",
                  "with " + std::to_string(b.min_samples) +
                      " samples per side no result can fail at confidence " +
                      FormatNumber(b.confidence) + "; use at least " + std::to_string(k));
        }
      }
      if (!b.max_ratio && !b.min_ratio && b.test == StatTest::kNone) {
        p.Error(vs, vp, "needs max_ratio, min_ratio or test");
      }
      if (!c.query.empty() && !UsesPlaceholder(c.query, "servers")) {
        p.Error(n["query"], path + ".query",
                "vs_baseline needs {{servers}} in the query (it runs once per side)");
      }
    }
  }
  if (!b.max && !b.min && !c.vs_baseline && n.IsMap() && !vs.IsDefined()) {
    p.Error(n, path, "needs at least one bound: max, min or vs_baseline");
  }
}

// analysis.aa: two disjoint, non-empty groups of baseline servers.
void ParseAa(SpecParser& p, const YAML::Node& n, const TrafficSpec& traffic, AnalysisSpec& a) {
  const std::string path = "analysis.aa";
  if (!p.Map(n, path, kAaKeys)) return;
  a.aa_a = p.StringList(n, path, "a", true).value_or(std::vector<std::string>{});
  a.aa_b = p.StringList(n, path, "b", true).value_or(std::vector<std::string>{});
  for (const char* key : {"a", "b"}) {
    for (const std::string& name : key[0] == 'a' ? a.aa_a : a.aa_b) {
      const auto& base = traffic.baseline;
      if (std::find(base.begin(), base.end(), name) == base.end()) {
        p.Error(n[key], Sub(path, key), name + " is not in traffic.baseline");
      } else if (key[0] == 'b' && std::find(a.aa_a.begin(), a.aa_a.end(), name) != a.aa_a.end()) {
        p.Error(n[key], Sub(path, key), name + " is also in analysis.aa.a");
      }
    }
  }
}

void ParseAnalysis(SpecParser& p, const YAML::Node& n, const MetricsSpec& metrics,
                   const TrafficSpec& traffic, AnalysisSpec& a) {
  const std::string path = "analysis";
  if (!p.Map(n, path, kAnalysisKeys)) return;
  if (YAML::Node aa = p.Get(n, path, "aa", false); aa.IsDefined()) ParseAa(p, aa, traffic, a);
  a.interval = p.Duration(n, path, "interval", true, false).value_or(Millis{0});
  a.min_requests = p.Int(n, path, "min_requests", true, 0, INT64_MAX).value_or(0);
  if (auto r = p.String(n, path, "requests", a.min_requests > 0)) {
    a.requests = *r;
    p.Placeholders(n, path, "requests", *r, kCheckPlaceholders);
    if (!UsesPlaceholder(*r, "servers")) {
      p.Error(n["requests"], path + ".requests", "needs {{servers}} (it runs once per side)");
    }
  }
  AnalysisPolicy& pol = a.policy;
  pol.failure_limit =
      static_cast<int>(p.Int(n, path, "failure_limit", false, 1, 1000).value_or(pol.failure_limit));
  pol.inconclusive_limit = static_cast<int>(
      p.Int(n, path, "inconclusive_limit", false, 1, 1000).value_or(pol.inconclusive_limit));
  pol.consecutive_error_limit =
      static_cast<int>(p.Int(n, path, "consecutive_error_limit", false, 1, 1000)
                           .value_or(pol.consecutive_error_limit));
  if (auto on = p.Enum(n, path, "on_inconclusive", false, kOnInconclusive)) {
    pol.on_inconclusive = *on == "rollback" ? OnInconclusive::kRollback : OnInconclusive::kPause;
  }
  const YAML::Node checks = p.Get(n, path, "checks", true);
  if (!checks.IsDefined()) return;
  if (!checks.IsSequence() || checks.size() == 0) {
    p.Error(checks, path + ".checks", "must be a non-empty list of checks");
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < checks.size(); ++i) {
    const std::string cp = Index(path + ".checks", i);
    CheckSpec c;
    ParseCheck(p, checks[i], cp, c);
    c.bounds.min_requests = a.min_requests;
    if (!c.name.empty() && !names.insert(c.name).second) {
      p.Error(checks[i]["name"], cp + ".name", "duplicate check name " + c.name);
    }
    // The test needs min_samples scrape steps inside one interval.
    if (c.bounds.test != StatTest::kNone && a.interval.count() > 0 &&
        a.interval.count() / metrics.step.count() < c.bounds.min_samples) {
      const YAML::Node vs = checks[i]["vs_baseline"];
      p.Error(vs, cp + ".vs_baseline",
              "mann-whitney needs " + std::to_string(c.bounds.min_samples) +
                  " samples per interval: analysis.interval " + PromDuration(a.interval) +
                  " holds only " + std::to_string(a.interval.count() / metrics.step.count()) +
                  " at metrics.step " + PromDuration(metrics.step));
    }
    a.checks.push_back(std::move(c));
  }
}

void ParseCapacity(SpecParser& p, const YAML::Node& n, CapacitySpec& c) {
  const std::string path = "capacity";
  if (!p.Map(n, path, kCapacityKeys)) return;
  if (auto q = p.String(n, path, "query", true)) {
    c.query = *q;
    p.Placeholders(n, path, "query", *q, kCapacityPlaceholders);
  }
  c.min = p.Number(n, path, "min", false);
  c.max = p.Number(n, path, "max", false);
  if (!c.min && !c.max) p.Error(n, path, "needs min or max");
}

std::optional<HookSpec> ParseHook(SpecParser& p, const YAML::Node& hooks, const char* key) {
  const YAML::Node n = hooks[key];
  if (!n.IsDefined()) return std::nullopt;
  const std::string path = std::string("hooks.") + key;
  if (!p.Map(n, path, kHookKeys)) return std::nullopt;
  HookSpec h;
  auto url = p.String(n, path, "url", false);
  auto command = p.String(n, path, "command", false);
  if (url.has_value() == command.has_value()) {
    p.Error(n, path, "give exactly one of url (HTTP POST) or command");
  }
  if (url) {
    if (url->rfind("http://", 0) != 0 && url->rfind("https://", 0) != 0) {
      p.Error(n["url"], path + ".url", "must start with http:// or https://, got " + *url);
    }
    h.url = *url;
  }
  if (command) {
    h.command = *command;
    p.Placeholders(n, path, "command", *command, kHookPlaceholders);
  }
  h.timeout = p.Duration(n, path, "timeout", false, false).value_or(h.timeout);
  return h;
}

}  // namespace

std::string_view TrafficProviderName(TrafficProvider p) {
  switch (p) {
    case TrafficProvider::kHaproxy:
      return "haproxy";
    case TrafficProvider::kNginx:
      return "nginx";
    case TrafficProvider::kCommand:
      return "command";
  }
  return "?";
}

Result<RolloutSpec> ParseSpec(std::string_view yaml_text, std::string_view file_name) {
  SpecParser p(file_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, "", "YAML syntax: " + e.msg);
    return Status::InvalidArgument(p.errors().front());
  }
  RolloutSpec spec;
  try {
    if (!root.IsMap()) {
      p.Error(root.IsDefined() && !root.IsNull() ? root.Mark() : YAML::Mark::null_mark(), "",
              "the spec must be a mapping (apiVersion: cutover/v1, name, traffic, ...)");
      return Status::InvalidArgument(p.errors().front());
    }
    p.Map(root, "", kTopKeys);
    if (auto v = p.String(root, "", "apiVersion", true)) {
      spec.api_version = *v;
      if (*v != kSpecApiVersion) {
        p.Error(root["apiVersion"], "apiVersion",
                "unsupported version " + *v + " (this build reads " + std::string(kSpecApiVersion) +
                    ")");
      }
    }
    if (auto name = p.String(root, "", "name", true)) {
      spec.name = *name;
      const bool ok = std::all_of(name->begin(), name->end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
               ch == '.';
      });
      if (!ok) p.Error(root["name"], "name", "use a-z, 0-9, '-', '_' and '.', got " + *name);
    }
    if (YAML::Node t = p.Get(root, "", "traffic", true); t.IsDefined()) {
      ParseTraffic(p, t, spec.traffic);
    }
    if (YAML::Node m = p.Get(root, "", "metrics", true); m.IsDefined()) {
      ParseMetrics(p, m, spec.metrics);
    }
    if (YAML::Node s = p.Get(root, "", "steps", true); s.IsDefined()) {
      ParseSteps(p, s, spec.steps);
    }
    if (YAML::Node a = p.Get(root, "", "analysis", true); a.IsDefined()) {
      ParseAnalysis(p, a, spec.metrics, spec.traffic, spec.analysis);
    }
    if (YAML::Node c = p.Get(root, "", "capacity", false); c.IsDefined()) {
      spec.capacity.emplace();
      ParseCapacity(p, c, *spec.capacity);
    }
    if (YAML::Node h = p.Get(root, "", "hooks", false); h.IsDefined()) {
      if (p.Map(h, "hooks", kHooksKeys)) {
        spec.hooks.pre_step = ParseHook(p, h, "pre_step");
        spec.hooks.confirm_promotion = ParseHook(p, h, "confirm_promotion");
        spec.hooks.on_rollback = ParseHook(p, h, "on_rollback");
      }
    }
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, "", std::string("YAML: ") + e.what());
  }
  CUTOVER_RETURN_IF_ERROR(p.ErrorStatus());
  return spec;
}

Result<RolloutSpec> LoadSpec(const std::string& path) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseSpec(text, path);
}

Result<std::vector<std::string>> TemplatePlaceholders(std::string_view tmpl) {
  std::vector<std::string> names;
  size_t pos = 0;
  while ((pos = tmpl.find("{{", pos)) != std::string_view::npos) {
    size_t end = tmpl.find("}}", pos + 2);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("unterminated {{ at offset " + std::to_string(pos));
    }
    std::string_view inner = tmpl.substr(pos + 2, end - pos - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    names.emplace_back(inner);
    pos = end + 2;
  }
  return names;
}

Result<std::string> RenderTemplate(std::string_view tmpl,
                                   const std::map<std::string, std::string>& values) {
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t open = tmpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    size_t end = tmpl.find("}}", open + 2);
    if (end == std::string_view::npos) {
      return Status::InvalidArgument("unterminated {{ at offset " + std::to_string(open));
    }
    out.append(tmpl.substr(pos, open - pos));
    std::string_view inner = tmpl.substr(open + 2, end - open - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    auto it = values.find(std::string(inner));
    if (it == values.end()) {
      return Status::InvalidArgument("no value for placeholder {{" + std::string(inner) + "}}");
    }
    out += it->second;
    pos = end + 2;
  }
  out.append(tmpl.substr(pos));
  return out;
}

std::string ServersRegex(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += '|';
    for (char c : n) {
      if (std::string_view(".^$|?*+()[]{}\\").find(c) != std::string_view::npos) {
        out += "\\\\";  // PromQL string literal: a backslash is written twice
      }
      out += c;
    }
  }
  return out;
}

Result<Millis> ParseSpecDuration(std::string_view text) {
  auto bad = [text](const std::string& why) {
    return Status::InvalidArgument("bad duration '" + std::string(text) + "': " + why);
  };
  if (text == "0") return Millis{0};
  if (text.empty()) return bad("empty");
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
    if (i == start) return bad("expected a number at '" + std::string(text.substr(start)) + "'");
    std::string num(text.substr(start, i - start));
    if (std::count(num.begin(), num.end(), '.') > 1 || num == ".") {
      return bad("malformed number " + num);
    }
    // strtod, not stod: a number too large for a double is HUGE_VAL (then "too long"), not a throw.
    double value = std::strtod(num.c_str(), nullptr);
    size_t ustart = i;
    while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    double scale = 0;
    if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60e3;
    } else if (unit == "h") {
      scale = 3600e3;
    } else if (unit == "d") {
      scale = 86400e3;
    } else if (unit.empty()) {
      return bad("missing unit after " + num + " (use ms, s, m, h, d)");
    } else {
      return bad("unknown unit '" + std::string(unit) + "' (use ms, s, m, h, d)");
    }
    total_ms += value * scale;
  }
  if (total_ms > 1e15) return bad("too long");
  return Millis{static_cast<int64_t>(total_ms)};
}

std::string PromDuration(Millis d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  return std::to_string(d.count()) + "ms";
}

}  // namespace cutover::canary
