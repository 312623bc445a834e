#include "canary/spec.h"

#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

// A full spec; line numbers matter to the error tests below (line 1 is apiVersion).
constexpr char kFullSpec[] = R"(apiVersion: cutover/v1
name: infer-cutover
traffic:
  provider: haproxy
  socket: /run/haproxy/admin.sock
  backend: infer
  baseline: [src1, src2]
  canary: [dst1]
metrics:
  provider: prometheus
  url: http://127.0.0.1:9090
  step: 1s
steps:
  - {weight: 1, hold: 2m}
  - {weight: 5, hold: 5m}
  - {weight: 25}
  - pause: {}
  - {pause: {duration: 10m}}
  - {weight: 100}
analysis:
  interval: 30s
  min_requests: 200
  requests: 'sum(increase(haproxy_server_http_responses_total{proxy="infer",server=~"{{servers}}"}[{{interval}}]))'
  failure_limit: 2
  inconclusive_limit: 4
  consecutive_error_limit: 4
  on_inconclusive: rollback
  checks:
    - name: error-rate
      query: 'sum(rate(haproxy_server_http_responses_total{server=~"{{servers}}",code="5xx"}[{{interval}}])) / sum(rate(haproxy_server_http_responses_total{server=~"{{servers}}"}[{{interval}}]))'
      max: 0.01
      vs_baseline: {max_ratio: 1.2}
    - name: p99-latency
      query: 'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{server=~"{{ servers }}"}[{{interval}}])))'
      vs_baseline: {max_ratio: 1.1, test: mann-whitney, confidence: 0.98}
    - name: tokens-per-second
      query: 'sum(rate(generated_tokens_total{server=~"{{servers}}"}[5s]))'
      worse: lower
      aggregate: median
      vs_baseline: {min_ratio: 0.8, test: mann-whitney, min_samples: 25}
capacity:
  query: 'min(gpu_memory_free_bytes{host=~"{{canary}}"}) - {{weight}} * 1e8'
  min: 0
hooks:
  pre_step: {url: http://127.0.0.1:8080/pre, timeout: 5s}
  confirm_promotion: {command: "test -f /tmp/ok-{{name}}"}
  on_rollback: {url: http://127.0.0.1:8080/rollback}
)";

// kFullSpec with the first occurrence of `from` replaced by `to`.
std::string Edit(const std::string& from, const std::string& to) {
  std::string s = kFullSpec;
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) s.replace(pos, from.size(), to);
  return s;
}

// The error message for `text`, or "parsed" when it parsed.
std::string ErrorOf(const std::string& text) {
  Result<RolloutSpec> r = ParseSpec(text, "spec.yaml");
  if (r.ok()) return "parsed";
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  return r.status().message();
}

TEST(SpecTest, ParsesTheFullSpec) {
  Result<RolloutSpec> r = ParseSpec(kFullSpec, "spec.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const RolloutSpec& s = *r;
  EXPECT_EQ(s.api_version, "cutover/v1");
  EXPECT_EQ(s.name, "infer-cutover");
  EXPECT_EQ(s.traffic.provider, TrafficProvider::kHaproxy);
  EXPECT_EQ(s.traffic.socket, "/run/haproxy/admin.sock");
  EXPECT_EQ(s.traffic.backend, "infer");
  EXPECT_EQ(s.traffic.baseline, (std::vector<std::string>{"src1", "src2"}));
  EXPECT_EQ(s.traffic.canary, (std::vector<std::string>{"dst1"}));
  EXPECT_EQ(s.metrics.url, "http://127.0.0.1:9090");
  EXPECT_EQ(s.metrics.timeout, Millis(5000));
  EXPECT_EQ(s.metrics.step, Millis(1000));

  ASSERT_EQ(s.steps.size(), 6u);
  EXPECT_EQ(s.steps[0].kind, StepSpec::Kind::kWeight);
  EXPECT_EQ(s.steps[0].weight, 1);
  EXPECT_EQ(s.steps[0].hold, Millis(120000));
  EXPECT_EQ(s.steps[0].line, 14);
  EXPECT_EQ(s.steps[2].hold, Millis(0));
  EXPECT_EQ(s.steps[3].kind, StepSpec::Kind::kPause);
  EXPECT_FALSE(s.steps[3].pause.has_value());
  EXPECT_EQ(s.steps[4].pause, Millis(600000));
  EXPECT_EQ(s.steps[5].weight, 100);

  const AnalysisSpec& a = s.analysis;
  EXPECT_EQ(a.interval, Millis(30000));
  EXPECT_EQ(a.min_requests, 200);
  EXPECT_EQ(a.policy.failure_limit, 2);
  EXPECT_EQ(a.policy.inconclusive_limit, 4);
  EXPECT_EQ(a.policy.consecutive_error_limit, 4);
  EXPECT_EQ(a.policy.on_inconclusive, OnInconclusive::kRollback);
  ASSERT_EQ(a.checks.size(), 3u);
  const CheckSpec& err = a.checks[0];
  EXPECT_EQ(err.name, "error-rate");
  EXPECT_TRUE(err.vs_baseline);
  EXPECT_EQ(err.bounds.max, 0.01);
  EXPECT_EQ(err.bounds.max_ratio, 1.2);
  EXPECT_EQ(err.bounds.test, StatTest::kNone);
  EXPECT_EQ(err.bounds.min_requests, 200);
  const CheckSpec& p99 = a.checks[1];
  EXPECT_EQ(p99.bounds.test, StatTest::kMannWhitney);
  EXPECT_EQ(p99.bounds.confidence, 0.98);
  EXPECT_EQ(p99.bounds.min_samples, 20);
  EXPECT_EQ(p99.bounds.worse, Worse::kHigher);
  const CheckSpec& tps = a.checks[2];
  EXPECT_EQ(tps.bounds.worse, Worse::kLower);
  EXPECT_EQ(tps.bounds.aggregate, Aggregate::kMedian);
  EXPECT_EQ(tps.bounds.min_ratio, 0.8);
  EXPECT_EQ(tps.bounds.min_samples, 25);

  ASSERT_TRUE(s.capacity.has_value());
  EXPECT_EQ(s.capacity->min, 0);
  EXPECT_FALSE(s.capacity->max.has_value());
  ASSERT_TRUE(s.hooks.pre_step.has_value());
  EXPECT_EQ(s.hooks.pre_step->url, "http://127.0.0.1:8080/pre");
  EXPECT_EQ(s.hooks.pre_step->timeout, Millis(5000));
  EXPECT_EQ(s.hooks.confirm_promotion->command, "test -f /tmp/ok-{{name}}");
  EXPECT_EQ(s.hooks.on_rollback->timeout, Millis(10000));
}

TEST(SpecTest, OtherProvidersAndDefaults) {
  constexpr char kNginx[] = R"(apiVersion: cutover/v1
name: web
traffic: {provider: nginx, upstream_file: /etc/nginx/conf.d/up.conf, upstream: web,
          baseline: ["10.0.0.1:80"], canary: ["10.0.0.2:80"]}
metrics: {provider: prometheus, url: https://prom:9090}
steps: [{weight: 50}, {weight: 100}]
analysis:
  interval: 1m
  min_requests: 0
  checks: [{name: up, query: 'min(up{instance=~"{{canary}}"})', min: 1}]
)";
  Result<RolloutSpec> r = ParseSpec(kNginx, "n.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->traffic.provider, TrafficProvider::kNginx);
  EXPECT_EQ(r->traffic.upstream_file, "/etc/nginx/conf.d/up.conf");
  EXPECT_EQ(r->traffic.test_command, "nginx -t");
  EXPECT_EQ(r->traffic.reload_command, "nginx -s reload");
  EXPECT_EQ(r->metrics.step, Millis(15000));
  EXPECT_EQ(r->analysis.policy.failure_limit, 1);
  EXPECT_EQ(r->analysis.policy.on_inconclusive, OnInconclusive::kPause);
  EXPECT_FALSE(r->capacity.has_value());
  EXPECT_FALSE(r->hooks.pre_step.has_value());

  std::string cmd = kNginx;
  cmd.replace(cmd.find("traffic:"), cmd.find("metrics:") - cmd.find("traffic:"),
              "traffic: {provider: command, set_weight: './lb set {{weight}}', "
              "get_weight: './lb get {{canary}}', baseline: [a], canary: [b], timeout: 3s}\n");
  r = ParseSpec(cmd, "c.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->traffic.set_weight, "./lb set {{weight}}");
  EXPECT_EQ(r->traffic.get_weight, "./lb get {{canary}}");
  EXPECT_EQ(r->traffic.timeout, Millis(3000));
}

// The command provider's own rules: weights are read back, names reach the shell unquoted.
TEST(SpecTest, AaPair) {
  auto r = ParseSpec(Edit("  on_inconclusive: rollback\n",
                          "  on_inconclusive: rollback\n  aa: {a: [src1], b: [src2]}\n"),
                     "spec.yaml");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->analysis.aa_a, std::vector<std::string>{"src1"});
  EXPECT_EQ(r->analysis.aa_b, std::vector<std::string>{"src2"});
  EXPECT_TRUE(ParseSpec(kFullSpec, "spec.yaml")->analysis.aa_a.empty());
}

TEST(SpecErrorTest, AaPair) {
  auto with = [](const std::string& aa) {
    return ErrorOf(
        Edit("  on_inconclusive: rollback\n", "  on_inconclusive: rollback\n  aa: " + aa + "\n"));
  };
  EXPECT_EQ(with("{a: [src1], b: [dst1]}"),
            "spec.yaml:28:22: analysis.aa.b: dst1 is not in traffic.baseline");
  EXPECT_EQ(with("{a: [src1], b: [src1]}"),
            "spec.yaml:28:22: analysis.aa.b: src1 is also in analysis.aa.a");
  EXPECT_EQ(with("{a: [src1]}"), "spec.yaml:28:7: analysis.aa.b: required");
}

TEST(SpecErrorTest, CommandTraffic) {
  const std::string traffic =
      "traffic:\n  provider: haproxy\n  socket: /run/haproxy/admin.sock\n  backend: infer\n";
  auto with = [&](const std::string& t) { return Edit(traffic, "traffic:\n" + t); };
  EXPECT_EQ(ErrorOf(with("  provider: command\n  set_weight: lb {{weight}}\n")),
            "spec.yaml:4:3: traffic.get_weight: required");
  EXPECT_EQ(ErrorOf(with("  provider: command\n  set_weight: lb {{weight}}\n"
                         "  get_weight: lb get {{weight}}\n")),
            "spec.yaml:6:15: traffic.get_weight: {{weight}} is what get_weight prints; it has no "
            "value here");
  std::string names = with("  provider: command\n  set_weight: lb {{weight}}\n  get_weight: lb\n");
  names.replace(names.find("[src1, src2]"), 12, "[src1, 'a;rm']");
  EXPECT_EQ(ErrorOf(names),
            "spec.yaml:7:13: traffic.baseline: 'a;rm': command traffic names may use only "
            "letters, digits and . _ : / -");
}

// --- Each error message, pinned ---

TEST(SpecErrorTest, WeightOutOfRange) {
  EXPECT_EQ(ErrorOf(Edit("{weight: 5, hold: 5m}", "{weight: 150, hold: 5m}")),
            "spec.yaml:15:14: steps[1].weight: must be 0..100, got 150");
  EXPECT_EQ(ErrorOf(Edit("{weight: 25}", "{weight: 2.5}")),
            "spec.yaml:16:14: steps[2].weight: must be an integer, got 2.5");
}

// A number written in quotes is a string: a type error like any other, not a number.
TEST(SpecErrorTest, QuotedNumberIsATypeError) {
  EXPECT_EQ(ErrorOf(Edit("      max: 0.01\n", "      max: \"0.01\"\n")),
            "spec.yaml:31:12: analysis.checks[0].max: must be a number, got the string \"0.01\"");
  EXPECT_EQ(ErrorOf(Edit("{weight: 25}", "{weight: '25'}")),
            "spec.yaml:16:14: steps[2].weight: must be an integer, got the string \"25\"");
}

TEST(SpecErrorTest, UnknownKeysAreErrors) {
  EXPECT_EQ(ErrorOf(Edit("hooks:", "hookz:")),
            "spec.yaml:44:1: hookz: unknown key (expected one of: apiVersion, name, traffic, "
            "metrics, steps, analysis, capacity, hooks)");
  // Every error is reported, in document order.
  EXPECT_EQ(ErrorOf(Edit("{max_ratio: 1.2}", "{max_ration: 1.2}")),
            "spec.yaml:32:21: analysis.checks[0].vs_baseline.max_ration: unknown key (expected "
            "one of: max_ratio, min_ratio, test, confidence, min_samples)\n"
            "spec.yaml:32:20: analysis.checks[0].vs_baseline: needs max_ratio, min_ratio or test");
  EXPECT_EQ(ErrorOf(Edit("  socket:", "  sokcet: x\n  socket:")),
            "spec.yaml:5:3: traffic.sokcet: unknown key (expected one of: provider, socket, "
            "address, backend, baseline, canary)");
  // A key of another provider is unknown here.
  EXPECT_EQ(ErrorOf(Edit("  backend: infer", "  backend: infer\n  upstream: web")),
            "spec.yaml:7:3: traffic.upstream: unknown key (expected one of: provider, socket, "
            "address, backend, baseline, canary)");
}

TEST(SpecErrorTest, DuplicateKey) {
  EXPECT_EQ(ErrorOf(Edit("  failure_limit: 2", "  failure_limit: 2\n  failure_limit: 3")),
            "spec.yaml:25:3: analysis.failure_limit: duplicate key");
}

TEST(SpecErrorTest, ApiVersion) {
  EXPECT_EQ(ErrorOf(Edit("cutover/v1", "cutover/v2")),
            "spec.yaml:1:13: apiVersion: unsupported version cutover/v2 (this build reads "
            "cutover/v1)");
  EXPECT_EQ(ErrorOf(Edit("apiVersion: cutover/v1\n", "")), "spec.yaml:1:1: apiVersion: required");
}

TEST(SpecErrorTest, MissingRequiredKey) {
  EXPECT_EQ(ErrorOf(Edit("  backend: infer\n", "")), "spec.yaml:4:3: traffic.backend: required");
  EXPECT_EQ(ErrorOf(Edit("  interval: 30s\n", "")), "spec.yaml:21:3: analysis.interval: required");
}

TEST(SpecErrorTest, Durations) {
  EXPECT_EQ(ErrorOf(Edit("hold: 2m", "hold: 2x")),
            "spec.yaml:14:23: steps[0].hold: bad duration '2x': unknown unit 'x' (use ms, s, m, "
            "h, d)");
  EXPECT_EQ(ErrorOf(Edit("interval: 30s", "interval: 30")),
            "spec.yaml:21:13: analysis.interval: bad duration '30': missing unit after 30 (use "
            "ms, s, m, h, d)");
  EXPECT_EQ(ErrorOf(Edit("interval: 30s", "interval: 0")),
            "spec.yaml:21:13: analysis.interval: must be above 0");
}

TEST(SpecErrorTest, Placeholders) {
  EXPECT_EQ(ErrorOf(Edit("{host=~\"{{canary}}\"}", "{host=~\"{{canery}}\"}")),
            "spec.yaml:42:10: capacity.query: unknown placeholder {{canery}} (allowed here: "
            "canary, baseline, interval, weight)");
  EXPECT_EQ(ErrorOf(Edit("generated_tokens_total{server=~\"{{servers}}\"}",
                         "generated_tokens_total{server=\"dst1\"}")),
            "spec.yaml:37:14: analysis.checks[2].query: vs_baseline needs {{servers}} in the "
            "query (it runs once per side)");
  EXPECT_EQ(ErrorOf(Edit("[{{interval}}])))'", "[{{interval])))'")),
            "spec.yaml:34:14: analysis.checks[1].query: unterminated {{ at offset 105");
}

TEST(SpecErrorTest, StatisticalTest) {
  EXPECT_EQ(ErrorOf(Edit("min_samples: 25", "min_samples: 4")),
            "spec.yaml:40:70: analysis.checks[2].vs_baseline.min_samples: with 4 samples per "
            "side no result can fail at confidence 0.98; use at least 5");
  EXPECT_EQ(ErrorOf(Edit("confidence: 0.98", "confidence: 1.2")),
            "spec.yaml:35:69: analysis.checks[1].vs_baseline.confidence: must be between 0.5 "
            "and 1 (exclusive), got 1.2");
  EXPECT_EQ(ErrorOf(Edit("test: mann-whitney, confidence", "test: t-test, confidence")),
            "spec.yaml:35:43: analysis.checks[1].vs_baseline.test: must be one of mann-whitney, "
            "got t-test");
  EXPECT_EQ(ErrorOf(Edit("interval: 30s", "interval: 10s")),
            "spec.yaml:35:20: analysis.checks[1].vs_baseline: mann-whitney needs 20 samples "
            "per interval: analysis.interval 10s holds only 10 at metrics.step 1s\n"
            "spec.yaml:40:20: analysis.checks[2].vs_baseline: mann-whitney needs 25 samples "
            "per interval: analysis.interval 10s holds only 10 at metrics.step 1s");
}

TEST(SpecErrorTest, TrafficSides) {
  EXPECT_EQ(ErrorOf(Edit("canary: [dst1]", "canary: [dst1, src2]")),
            "spec.yaml:8:11: traffic.canary: src2 is also in traffic.baseline");
  EXPECT_EQ(ErrorOf(Edit("  socket: /run/haproxy/admin.sock\n", "")),
            "spec.yaml:4:3: traffic: give exactly one of socket (a unix socket path) or address "
            "(host:port)");
  EXPECT_EQ(ErrorOf(Edit("provider: haproxy", "provider: envoy")),
            "spec.yaml:4:13: traffic.provider: must be one of haproxy, nginx, command, got envoy");
  EXPECT_EQ(ErrorOf(Edit("baseline: [src1, src2]", "baseline: []")),
            "spec.yaml:7:13: traffic.baseline: must be a non-empty list of names");
}

TEST(SpecErrorTest, Steps) {
  EXPECT_EQ(ErrorOf(Edit("- pause: {}", "- {pause: {}, weight: 3}")),
            "spec.yaml:17:5: steps[3]: a step is either {weight, hold} or {pause: {...}}");
  EXPECT_EQ(ErrorOf(Edit("- pause: {}", "- pause:")),
            "spec.yaml:17:5: steps[3].pause: must be a mapping: {} waits for promote, "
            "{duration: 10m} waits that long");
  EXPECT_EQ(ErrorOf(Edit("{pause: {duration: 10m}}", "{pause: {duration: 10m, hold: 1m}}")),
            "spec.yaml:18:29: steps[4].pause.hold: unknown key (expected one of: duration)");
}

TEST(SpecErrorTest, AnalysisLimits) {
  EXPECT_EQ(ErrorOf(Edit("failure_limit: 2", "failure_limit: 0")),
            "spec.yaml:24:18: analysis.failure_limit: must be 1..1000, got 0");
  EXPECT_EQ(ErrorOf(Edit("on_inconclusive: rollback", "on_inconclusive: ignore")),
            "spec.yaml:27:20: analysis.on_inconclusive: must be one of rollback, pause, got "
            "ignore");
  std::string no_requests = Edit("  requests: 'sum", "  not_requests: 'sum");
  EXPECT_EQ(ErrorOf(no_requests),
            "spec.yaml:23:3: analysis.not_requests: unknown key (expected one of: interval, "
            "min_requests, requests, failure_limit, inconclusive_limit, consecutive_error_limit, "
            "on_inconclusive, checks, aa)\n"
            "spec.yaml:21:3: analysis.requests: required");
  EXPECT_EQ(ErrorOf(Edit("    - name: p99-latency", "    - name: error-rate")),
            "spec.yaml:33:13: analysis.checks[1].name: duplicate check name error-rate");
  EXPECT_EQ(ErrorOf(Edit("      max: 0.01\n      vs_baseline: {max_ratio: 1.2}\n", "")),
            "spec.yaml:29:7: analysis.checks[0]: needs at least one bound: max, min or "
            "vs_baseline");
}

TEST(SpecErrorTest, Hooks) {
  EXPECT_EQ(ErrorOf(Edit("{url: http://127.0.0.1:8080/rollback}",
                         "{url: http://127.0.0.1:8080/rollback, command: true}")),
            "spec.yaml:47:16: hooks.on_rollback: give exactly one of url (HTTP POST) or command");
  EXPECT_EQ(ErrorOf(Edit("ok-{{name}}", "ok-{{rollout}}")),
            "spec.yaml:46:32: hooks.confirm_promotion.command: unknown placeholder {{rollout}} "
            "(allowed here: name, step, weight)");
}

TEST(SpecErrorTest, NotYamlOrNotAMapping) {
  EXPECT_EQ(ErrorOf("apiVersion: [unclosed\n"),
            "spec.yaml:2:1: YAML syntax: end of sequence flow not found");
  EXPECT_EQ(ErrorOf(""),
            "spec.yaml: the spec must be a mapping (apiVersion: cutover/v1, name, "
            "traffic, ...)");
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "spec.yaml:1:1: the spec must be a mapping (apiVersion: "
            "cutover/v1, name, traffic, ...)");
}

TEST(SpecTest, LoadSpecReadsTheFileAndNamesIt) {
  testing::TempDir dir;
  Result<RolloutSpec> missing = LoadSpec(dir.Join("none.yaml"));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  std::string path = dir.Join("r.yaml");
  ASSERT_TRUE(WriteFileAtomic(path, Edit("weight: 25", "weight: 125")).ok());
  Result<RolloutSpec> r = LoadSpec(path);
  EXPECT_EQ(r.status().message(), path + ":16:14: steps[2].weight: must be 0..100, got 125");
}

// --- Templates and durations ---

TEST(TemplateTest, PlaceholdersAndRendering) {
  Result<std::vector<std::string>> names = TemplatePlaceholders("a{{x}}b{{ y }}c");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(TemplatePlaceholders("a{{x").status().message(), "unterminated {{ at offset 1");
  Result<std::string> out =
      RenderTemplate("rate(x{s=~\"{{servers}}\"}[{{ interval }}])",
                     {{"servers", ServersRegex({"src1", "10.0.0.1:80"})}, {"interval", "30s"}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "rate(x{s=~\"src1|10\\\\.0\\\\.0\\\\.1:80\"}[30s])");
  EXPECT_EQ(RenderTemplate("{{nope}}", {}).status().message(), "no value for placeholder {{nope}}");
}

TEST(DurationTest, ParsesAndRejects) {
  EXPECT_EQ(*ParseSpecDuration("30s"), Millis(30000));
  EXPECT_EQ(*ParseSpecDuration("2m"), Millis(120000));
  EXPECT_EQ(*ParseSpecDuration("1h30m"), Millis(5400000));
  EXPECT_EQ(*ParseSpecDuration("1.5s"), Millis(1500));
  EXPECT_EQ(*ParseSpecDuration("250ms"), Millis(250));
  EXPECT_EQ(*ParseSpecDuration("0"), Millis(0));
  EXPECT_EQ(ParseSpecDuration("").status().message(), "bad duration '': empty");
  EXPECT_EQ(ParseSpecDuration("s").status().message(),
            "bad duration 's': expected a number at 's'");
  EXPECT_EQ(ParseSpecDuration("1..2s").status().message(),
            "bad duration '1..2s': malformed number 1..2");
  // Found by fuzz_canary_spec: these threw from std::stod.
  EXPECT_EQ(ParseSpecDuration(".s").status().message(), "bad duration '.s': malformed number .");
  EXPECT_EQ(ParseSpecDuration(std::string(400, '9') + "s").status().message(),
            "bad duration '" + std::string(400, '9') + "s': too long");
  EXPECT_EQ(PromDuration(Millis(30000)), "30s");
  EXPECT_EQ(PromDuration(Millis(1500)), "1500ms");
}

}  // namespace
}  // namespace cutover::canary
