// The canary controller end to end: real HAProxy (runtime API, exporter), real Prometheus (1 s
// scrape), two test backends (baseline s1, canary d1) with settable errors and latency, and a
// load generator on loopback. Intervals are 3 s, so each test takes seconds.
#include "canary/controller.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "canary/haproxy_traffic.h"
#include "canary/measure.h"
#include "canary/prometheus_client.h"
#include "canary/state.h"
#include "core/file_util.h"
#include "tests/canary/test_backend.h"
#include "tests/harness/fault_proxy.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using namespace std::chrono_literals;
using cutover::testing::Haproxy;
using cutover::testing::Prometheus;
using testing::LoadGenerator;
using testing::TestBackend;

class CanaryItest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(s1_.Start().ok());
    ASSERT_TRUE(d1_.Start().ok());
    s1_.SetLatency(5ms);
    d1_.SetLatency(5ms);
    haproxy_ = std::make_unique<Haproxy>(cutover::testing::HaproxyOptions{
        .servers = {{"s1", s1_.address(), 1}, {"d1", d1_.address(), 0}}});
    Status hs = haproxy_->Start();
    if (hs.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(hs.message());
    ASSERT_TRUE(hs.ok()) << hs.ToString();
    prometheus_ = std::make_unique<Prometheus>(cutover::testing::PrometheusOptions{
        .jobs = {{"haproxy", {"127.0.0.1:" + std::to_string(haproxy_->metrics_port())}},
                 {"backends", {s1_.address(), d1_.address()}}}});
    Status ps = prometheus_->Start();
    if (ps.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(ps.message());
    ASSERT_TRUE(ps.ok()) << ps.ToString();
    // Wait until every target has been scraped.
    Status up = testing::WaitForTargetsUp(prometheus_->url(), 3);
    ASSERT_TRUE(up.ok()) << up.ToString();
    auto store = RolloutStore::Open(dir_.Join("state.db"));
    ASSERT_TRUE(store.ok());
    watcher_.emplace(std::move(*store));
  }

  std::string SpecText(const std::string& steps = "[{weight: 25}, {weight: 50}, {weight: 100}]") {
    const std::string count =
        "haproxy_server_http_responses_total{proxy=\"infer\",server=~\"{{servers}}\"";
    return "apiVersion: cutover/v1\n"
           "name: itest\n"
           "traffic: {provider: haproxy, socket: '" +
           haproxy_->admin_socket() +
           "', backend: infer, baseline: [s1], canary: [d1]}\n"
           "metrics: {provider: prometheus, url: '" +
           prometheus_->url() +
           "', step: 1s, timeout: 1s}\n"
           "steps: " +
           steps +
           "\n"
           "analysis:\n"
           "  interval: 3s\n"
           "  min_requests: 10\n"
           "  requests: 'sum(increase(" +
           count +
           "}[{{interval}}]))'\n"
           "  failure_limit: 1\n"
           "  inconclusive_limit: 3\n"
           "  consecutive_error_limit: 2\n"
           "  on_inconclusive: rollback\n"
           "  checks:\n"
           "    - name: error-rate\n"
           "      query: 'sum(increase(" +
           count + ",code=\"5xx\"}[{{interval}}])) / sum(increase(" + count +
           "}[{{interval}}]))'\n"
           "      max: 0.01\n"
           "    - name: p99-latency\n"
           "      query: 'histogram_quantile(0.99, sum by (le) (rate("
           "test_request_duration_seconds_bucket{server=~\"{{servers}}\"}[{{interval}}])))'\n"
           "      vs_baseline: {max_ratio: 2}\n";
  }

  // SpecText with the command provider: the operator's scripts drive the same HAProxy through
  // its admin socket with socat, in canary percents (s1 gets 100 - percent).
  std::string CommandSpecText(const std::string& extra) {
    const std::string sock = "socat - UNIX-CONNECT:" + haproxy_->admin_socket();
    std::string text = SpecText();
    const size_t a = text.find("traffic:");
    const size_t b = text.find("metrics:");
    text.replace(a, b - a,
                 "traffic:\n"
                 "  provider: command\n"
                 "  set_weight: 'w={{weight}}; echo \"set weight infer/{{canary}} $w; set weight "
                 "infer/{{baseline}} $((100 - w))\" | " +
                     sock +
                     "'\n"
                     "  get_weight: 'echo \"get weight infer/{{canary}}\" | " +
                     sock +
                     " | cut -d\" \" -f1'\n"
                     "  baseline: [s1]\n"
                     "  canary: [d1]\n");
    return text + extra;
  }

  // A spec judged by one latency check with a Mann-Whitney test: a 21 s interval holds the 20
  // scrapes per side the test needs at the 1 s scrape step.
  std::string LatencySpecText(const std::string& query, const std::string& vs_baseline) {
    std::string text = SpecText("[{weight: 50}, {weight: 100}]");
    text.replace(text.find("  interval: 3s"), 14, "  interval: 21s");
    text.erase(text.find("  checks:\n"));
    return text + "  checks:\n    - name: latency\n      query: '" + query +
           "'\n      vs_baseline: {" + vs_baseline + ", test: mann-whitney, confidence: 0.98}\n";
  }

  // Runs the controller on its own thread; `during` runs on this one until it returns.
  Result<RolloutOutcome> RunController(const std::string& text,
                                       const std::function<void()>& during = nullptr) {
    auto spec = ParseSpec(text, "itest.yaml");
    if (!spec.ok()) return spec.status();
    Result<RolloutOutcome> out = Status::Internal("not run");
    std::thread t([&] {
      auto store = RolloutStore::Open(dir_.Join("state.db"));
      if (!store.ok()) {
        out = store.status();
        return;
      }
      std::unique_ptr<Traffic> traffic = MakeTraffic(spec->traffic);
      PrometheusClient metrics(metrics_url_.empty() ? prometheus_->url() : metrics_url_, 1000ms);
      RealClock clock;
      Controller c(*spec, "itest.yaml", text, &*store, traffic.get(), &metrics, &clock);
      out = c.Run();
    });
    if (during) during();
    t.join();
    return out;
  }

  // Waits until the newest rollout has step `step` applied (up to 20 s).
  bool WaitApplied(int step) {
    for (int i = 0; i < 400; ++i) {
      auto r = watcher_->LatestRollout("itest");
      if (r.ok() && r->has_value()) {
        auto s = watcher_->GetStep((*r)->id, step);
        if (s.ok() && s->has_value() && (*s)->applied_at) return true;
      }
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  int Weight(const std::string& server) {
    auto r = haproxy_->AdminCommand("get weight infer/" + server);
    return r.ok() ? ParseGetWeight(*r).value_or(-1) : -1;
  }

  std::vector<MeasurementRow> Intervals(int64_t id) {
    std::vector<MeasurementRow> all = watcher_->Measurements(id).value_or({});
    std::vector<MeasurementRow> out;
    for (auto& m : all) {
      if (m.check == "interval") out.push_back(m);
    }
    return out;
  }

  // Every measurement and event of a rollout, one per line: printed when an expectation fails.
  std::string Trace(int64_t id) {
    std::string out = "\n";
    for (const auto& m : watcher_->Measurements(id).value_or({})) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "  step %d interval %d [%.2f, %.2f] %s: canary=%s base=%s ",
                    m.step_index, m.interval_index, m.window_start, m.window_end, m.check.c_str(),
                    m.canary_value ? std::to_string(*m.canary_value).c_str() : "-",
                    m.baseline_value ? std::to_string(*m.baseline_value).c_str() : "-");
      out += buf + m.verdict + " " + m.reason + "\n";
    }
    for (const auto& e : watcher_->Events(id).value_or({})) {
      out += "  event " + std::to_string(e.at) + " " + e.kind + ": " + e.message + "\n";
    }
    return out;
  }

  void ReportLatency(int64_t id) {
    double worst = 0;
    for (const auto& m : Intervals(id)) worst = std::max(worst, m.canary_value.value_or(0));
    RecordProperty("worst_decision_latency_after_interval_end_s", std::to_string(worst));
    std::printf(
        "worst decision latency after interval end: %.3f s (1 s of it waits for the "
        "first scrape)\n",
        worst);
    EXPECT_LT(worst, 1.0 + 1.0) << "decided within 1 s of the first scrape after the interval";
  }

  // Starts a fault proxy in front of Prometheus (one decision per request) that the controller
  // of RunController talks to from now on.
  cutover::testing::FaultProxy& ProxyPrometheus(std::vector<cutover::testing::FaultRule> rules) {
    cutover::testing::FaultProxyOptions o;
    o.upstream_port = prometheus_->port();
    o.granularity = cutover::testing::FaultGranularity::kHttpRequest;
    o.rules = std::move(rules);
    o.seed = 11;
    o.retry_after_s = 0;
    o.truncate_bytes = 150;  // past the head, inside the JSON
    proxy_ = std::make_unique<cutover::testing::FaultProxy>(o);
    EXPECT_TRUE(proxy_->Start().ok());
    metrics_url_ = proxy_->url();
    return *proxy_;
  }

  cutover::testing::TempDir dir_;
  std::unique_ptr<cutover::testing::FaultProxy> proxy_;
  std::string metrics_url_;  // empty: Prometheus itself
  TestBackend s1_{"s1"};
  TestBackend d1_{"d1"};
  std::unique_ptr<Haproxy> haproxy_;
  std::unique_ptr<Prometheus> prometheus_;
  std::optional<RolloutStore> watcher_;
};

TEST_F(CanaryItest, HealthyCanaryIsPromotedAcrossAHaproxyReload) {
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(SpecText(), [&] {
    ASSERT_TRUE(WaitApplied(0));
    std::this_thread::sleep_for(500ms);
    ASSERT_TRUE(haproxy_->Reload(Haproxy::ReloadState::kDrop).ok());
  });
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 100);
  EXPECT_EQ(Weight("s1"), 0);
  auto steps = watcher_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(steps[i].step_index, i);
  bool reasserted = false, restarted = false;
  for (const auto& e : watcher_->Events(out->rollout_id).value_or({})) {
    reasserted = reasserted || e.kind == "reassert";
    restarted = restarted || e.kind == "interval-restart";
  }
  EXPECT_TRUE(reasserted) << "the reload dropped the weights and they were re-asserted";
  EXPECT_TRUE(restarted) << "the interval measured under the dropped weights started again"
                         << Trace(out->rollout_id);
  EXPECT_GT(d1_.served(), 0);
  ReportLatency(out->rollout_id);
}

TEST_F(CanaryItest, FivePercentErrorsRollBackWithinTwoIntervals) {
  d1_.SetErrorRate(0.05);
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_LE(Intervals(out->rollout_id).size(), 2u);
  EXPECT_EQ(Weight("d1"), 0);
  // Its request rate in Prometheus falls to about zero.
  std::this_thread::sleep_for(3500ms);
  PrometheusClient prom(prometheus_->url(), 2000ms);
  auto r = prom.Query(
      "sum(rate(haproxy_server_http_responses_total{proxy=\"infer\",server=\"d1\"}[2s]))",
      RealClock().Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto v = SingleSeriesValues(*r);
  ASSERT_TRUE(v.ok() && !v->empty());
  EXPECT_LT(v->back(), 0.5) << "canary requests/s after the rollback";
  load.Stop();
  ReportLatency(out->rollout_id);
}

// The command provider and every gate on the real load balancer and Prometheus: a capacity
// query Prometheus answers, a pre_step URL hook, and a confirm_promotion command that holds the
// rollout at 50% until the operator's file appears.
TEST_F(CanaryItest, CommandProviderWithGatesPromotesWhenTheOperatorConfirms) {
  if (::system("command -v socat >/dev/null") != 0) CUTOVER_SKIP_OR_FAIL("socat is not installed");
  cutover::testing::ScriptedHttpServer hook_server;
  ASSERT_TRUE(hook_server.Start().ok());
  hook_server.SetHandler(
      [](const auto&) { return cutover::testing::ScriptedResponse{.status = 200}; });
  const std::string ok_file = dir_.Join("confirmed");
  const std::string text = CommandSpecText(
      "capacity: {query: 'sum(up{job=\"backends\"}) * 100 - {{weight}}', min: 0}\n"
      "hooks:\n"
      "  pre_step: {url: '" +
      hook_server.Url("/pre") +
      "'}\n"
      "  confirm_promotion: {command: 'test -f " +
      ok_file + "'}\n");
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  double confirmed_at = 0;
  auto out = RunController(text, [&] {
    ASSERT_TRUE(WaitApplied(1));
    // Held at the gate of the last step: at least two intervals pass without it.
    std::this_thread::sleep_for(8s);
    EXPECT_EQ(Weight("d1"), 50);
    confirmed_at = RealClock().Now();
    std::ofstream(ok_file) << "yes\n";
  });
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->status, "promoted") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 100);
  EXPECT_EQ(Weight("s1"), 0);
  auto steps = watcher_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_GE(*steps[2].applied_at, confirmed_at);
  std::vector<int> weights;
  for (const auto& r : hook_server.requests()) {
    weights.push_back(nlohmann::json::parse(r.body).at("weight").get<int>());
  }
  EXPECT_EQ(weights, (std::vector<int>{25, 50, 100})) << "pre_step once per weight change";
  bool held = false;
  for (const auto& e : watcher_->Events(out->rollout_id).value()) {
    if (e.kind == "gate" &&
        e.message.rfind("held at the gate: hook confirm_promotion: sh exited with status 1", 0) ==
            0) {
      held = true;
    }
  }
  EXPECT_TRUE(held) << Trace(out->rollout_id);
}

// A failing canary behind the command provider: rolled back, confirmed from Prometheus (the
// scripts report no per-server counters), and on_rollback is told.
TEST_F(CanaryItest, CommandProviderRollsBackConfirmedFromPrometheusAndTellsOnRollback) {
  if (::system("command -v socat >/dev/null") != 0) CUTOVER_SKIP_OR_FAIL("socat is not installed");
  cutover::testing::ScriptedHttpServer hook_server;
  ASSERT_TRUE(hook_server.Start().ok());
  hook_server.SetHandler(
      [](const auto&) { return cutover::testing::ScriptedResponse{.status = 200}; });
  d1_.SetErrorRate(0.05);
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(
      CommandSpecText("hooks: {on_rollback: {url: '" + hook_server.Url("/rb") + "'}}\n"));
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 0);
  EXPECT_EQ(Weight("s1"), 100);
  bool from_prometheus = false;
  for (const auto& e : watcher_->Events(out->rollout_id).value()) {
    if (e.message.rfind("confirmed from prometheus", 0) == 0) from_prometheus = true;
  }
  EXPECT_TRUE(from_prometheus) << Trace(out->rollout_id);
  auto reqs = hook_server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  auto event = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(event.at("hook"), "on_rollback");
  EXPECT_EQ(event.at("from_weight"), 25);
  EXPECT_EQ(event.at("reason").get<std::string>().rfind("rolled-back: ", 0), 0u);
}

// p99 from the services' own histograms (HAProxy has no latency histograms). The histogram's
// buckets resolve 20 ms (in 0.01..0.025 s) from 30 ms (in 0.025..0.05 s): +50% is a bucket up.
TEST_F(CanaryItest, P99LatencyUpFiftyPercentRollsBack) {
  s1_.SetLatency(20ms);
  d1_.SetLatency(30ms);
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 4, 25);
  load.Start();
  auto out = RunController(LatencySpecText(
      "histogram_quantile(0.99, sum by (le) (rate(test_request_duration_seconds_bucket{"
      "server=~\"{{servers}}\"}[5s])))",
      "max_ratio: 1.2"));
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << Trace(out->rollout_id);
  int latency_failed = 0;
  for (const auto& m : watcher_->Measurements(out->rollout_id).value_or({})) {
    if (m.check == "latency" && m.verdict == "fail") ++latency_failed;
  }
  EXPECT_EQ(latency_failed, 1) << Trace(out->rollout_id);
  // The first interval may be inconclusive (a 5 s rate window in which the canary had served
  // nothing yet gives 0/0); the first failing one ends the rollout.
  EXPECT_LE(Intervals(out->rollout_id).size(), 2u) << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 0);
}

// The canary runs on other hardware, 30% slower by design, and the spec's band says so
// (max_ratio 1.5 on mean latency): promoted. The same stretch judged against a 1.1 band by
// `analyze` rolls back, so the band, not luck, decided.
TEST_F(CanaryItest, SlowerByDesignWithinItsHardwareBandIsPromoted) {
  s1_.SetLatency(20ms);
  d1_.SetLatency(26ms);
  const std::string mean =
      "sum(rate(test_request_duration_seconds_sum{server=~\"{{servers}}\"}[5s])) / "
      "sum(rate(test_request_duration_seconds_count{server=~\"{{servers}}\"}[5s]))";
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 4, 25);
  load.Start();
  const double t0 = RealClock().Now();
  auto out = RunController(LatencySpecText(mean, "max_ratio: 1.5"));
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->status, "promoted") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 100);
  // One passing interval promotes; an inconclusive one may come first (a 5 s rate window in
  // which the canary had served nothing yet gives 0/0). The passing one is judged again below.
  auto iv = Intervals(out->rollout_id);
  ASSERT_GE(iv.size(), 1u) << Trace(out->rollout_id);
  ASSERT_LE(iv.size(), 2u) << Trace(out->rollout_id);
  const double from = iv.back().window_start, to = iv.back().window_end;
  EXPECT_GE(from, t0);
  auto tight = ParseSpec(LatencySpecText(mean, "max_ratio: 1.1"), "tight.yaml");
  ASSERT_TRUE(tight.ok()) << tight.status().ToString();
  PrometheusClient prom(prometheus_->url(), 2000ms);
  auto past = AnalyzePast(*tight, prom, from, to);
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  EXPECT_EQ(past->outcome, Decision::kRollback) << past->reason;
}

TEST_F(CanaryItest, NoTrafficIsInconclusiveNeverPromotesAndRollsBack) {
  auto out = RunController(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << Trace(out->rollout_id);
  auto iv = Intervals(out->rollout_id);
  ASSERT_EQ(iv.size(), 3u);
  for (const auto& m : iv) EXPECT_EQ(m.verdict, "inconclusive");
  EXPECT_EQ(watcher_->Steps(out->rollout_id)->size(), 1u);
  EXPECT_EQ(Weight("d1"), 0);
}

TEST_F(CanaryItest, PrometheusStoppedHoldsThenRollsBack) {
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(SpecText(), [&] {
    ASSERT_TRUE(WaitApplied(0));
    prometheus_->Stop();
  });
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << Trace(out->rollout_id);
  auto iv = Intervals(out->rollout_id);
  ASSERT_GE(iv.size(), 2u);
  EXPECT_EQ(iv.back().verdict, "error");
  EXPECT_EQ(iv[iv.size() - 2].verdict, "error");
  EXPECT_EQ(Weight("d1"), 0);
}

// Transient faults between the controller and Prometheus (resets, 503s, answers cut inside
// their JSON) are retried or judged as errors, never as a pass, and a healthy canary is still
// promoted.
TEST_F(CanaryItest, TransientPrometheusFaultsStillPromoteAHealthyCanary) {
  using cutover::testing::FaultMode;
  auto& proxy = ProxyPrometheus(
      {{FaultMode::kReset, 0.04}, {FaultMode::kHttp503, 0.03}, {FaultMode::kTruncate, 0.03}});
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(SpecText());
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto c = proxy.counters();
  std::printf("prometheus through the fault proxy: %s\n", c.ToString().c_str());
  RecordProperty("faults_injected", static_cast<int>(c.decisions - c.fault(FaultMode::kNone)));
  EXPECT_GT(c.decisions - c.fault(FaultMode::kNone), 0u) << "no fault was injected";
  EXPECT_EQ(out->status, "promoted") << out->reason << Trace(out->rollout_id);
  EXPECT_EQ(Weight("d1"), 100);
}

// Prometheus answering only with errors or JSON cut short: every interval is an error, the
// rollout never advances and rolls back after consecutive_error_limit intervals.
// Every answer of Prometheus cut short or failing from the start: the pre-flight stops the start
// before any weight moves (it used to move 10% and roll back after two errored intervals).
TEST_F(CanaryItest, PrometheusAnswersCutShortOrFailingStopTheStartBeforeTrafficMoves) {
  using cutover::testing::FaultMode;
  auto& proxy = ProxyPrometheus({{FaultMode::kTruncate, 0.6}, {FaultMode::kHttp500, 0.4}});
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  auto out = RunController(SpecText());
  load.Stop();
  std::printf("prometheus through the fault proxy: %s\n", proxy.counters().ToString().c_str());
  EXPECT_GT(proxy.counters().fault(FaultMode::kTruncate) + proxy.counters().fault(FaultMode::kHttp500),
            0u);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("canary itest not started: pre-flight: metrics: "),
            std::string::npos)
      << out.status().ToString();
  EXPECT_EQ(Weight("d1"), 0) << "no traffic moved to the canary";
  EXPECT_FALSE(watcher_->LatestRollout("itest").value().has_value()) << "nothing recorded";
}

// Reads VmRSS of `pid` in kB (0 when gone).
long RssKb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

TEST_F(CanaryItest, KilledMidStepThenRestartedFinishesWithEveryStepOnce) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("spec.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText()).ok());
  const std::string db = dir_.Join("state.db");
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  // First run: killed right after step 1 is applied and recorded.
  ::setenv("CUTOVER_FAILPOINTS", "canary.after_transition:after=2:kill", 1);
  cutover::testing::ChildProcess first;
  ASSERT_TRUE(first.Spawn({bin, "canary", "start", spec, "--db", db}, dir_.Join("run1.log")).ok());
  ::unsetenv("CUTOVER_FAILPOINTS");
  for (int i = 0; i < 600 && first.Running(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_EQ(first.exit_description(), "signal 9");
  auto mid = watcher_->LatestRollout("itest").value();
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(mid->status, "running");
  EXPECT_EQ(mid->step_index, 1);
  EXPECT_EQ(Weight("d1"), 1) << "step 1 (50%: 1:1) weights stay on the load balancer";
  EXPECT_EQ(Weight("s1"), 1);
  // Second run: resumes step 1 and finishes.
  cutover::testing::ChildProcess second;
  ASSERT_TRUE(second.Spawn({bin, "canary", "start", spec, "--db", db}, dir_.Join("run2.log")).ok());
  long max_rss = 0;
  for (int i = 0; i < 600 && second.Running(); ++i) {
    max_rss = std::max(max_rss, RssKb(second.pid()));
    std::this_thread::sleep_for(50ms);
  }
  load.Stop();
  std::string log2 = ReadFile(dir_.Join("run2.log")).value_or("");
  EXPECT_EQ(second.exit_description(), "exit 0") << log2;
  std::printf("controller RSS (second run, max seen): %ld kB\n", max_rss);
  RecordProperty("controller_max_rss_kb", std::to_string(max_rss));
  // The budget is the uninstrumented binary's; ASan's shadow memory and quarantine add to it.
  if (!cutover::testing::kAddressSanitizer) {
    EXPECT_LT(max_rss, 30 * 1024);
  }
  std::string out;
  ASSERT_EQ(cutover::testing::RunShell(bin + " canary history --json --db " + db + " 2>&1", &out),
            0)
      << out;
  auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(doc.is_object()) << out;
  EXPECT_EQ(doc["schema"], "cutover.rollout-history/1");
  EXPECT_EQ(doc["rollout"]["status"], "promoted");
  ASSERT_EQ(doc["steps"].size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(doc["steps"][i]["index"], i);
  bool resumed = false;
  for (const auto& e : doc["events"]) resumed = resumed || e["kind"] == "resume";
  EXPECT_TRUE(resumed);
  EXPECT_EQ(Weight("d1"), 100);
  EXPECT_EQ(Weight("s1"), 0);
}

// Kills `canary start` (SIGKILL, through a failpoint) after each state transition of a two-step
// rollout in turn, checks the state and the load balancer right after the kill, then restarts
// it and checks that the rollout finishes with every step recorded exactly once and the load
// balancer's weights equal to the recorded state. A rolling back controller is killed as well.
TEST_F(CanaryItest, KilledAfterEveryStateTransitionResumesWithEveryStepOnce) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("kill-spec.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText("[{weight: 50}, {weight: 100}]")).ok());
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  // A healthy two-step rollout passes each point this often: one start, and per step one
  // intent, one apply and one recorded transition; one interval (passing at once) in step 0,
  // none at 100 %, where the baseline has no traffic to compare with.
  const std::vector<std::pair<std::string, int>> points = {{"canary.after_start", 1},
                                                           {"canary.after_intent", 2},
                                                           {"canary.after_apply", 2},
                                                           {"canary.after_transition", 2},
                                                           {"canary.after_interval", 1}};
  int tried = 0, run = 0;
  auto lb = [&]() { return Weights{{"d1", Weight("d1")}, {"s1", Weight("s1")}}; };
  auto kill_and_resume = [&](const std::string& point, int n, const std::string& final_status) {
    const std::string context = point + " #" + std::to_string(n);
    const std::string db = dir_.Join("kill-" + std::to_string(++run) + ".db");
    ASSERT_TRUE(haproxy_->AdminCommand("set weight infer/s1 1").ok());
    ASSERT_TRUE(haproxy_->AdminCommand("set weight infer/d1 0").ok());
    const Weights initial = lb();
    ::setenv("CUTOVER_FAILPOINTS", (point + ":after=" + std::to_string(n) + ":kill").c_str(), 1);
    cutover::testing::ChildProcess first;
    ASSERT_TRUE(first.Spawn({bin, "canary", "start", spec, "--db", db}, db + ".run1.log").ok());
    ::unsetenv("CUTOVER_FAILPOINTS");
    for (int i = 0; i < 600 && first.Running(); ++i) std::this_thread::sleep_for(50ms);
    ASSERT_EQ(first.exit_description(), "signal 9") << context << ": the point was not reached\n"
                                                    << ReadFile(db + ".run1.log").value_or("");
    ++tried;
    {
      auto state = RolloutStore::Open(db);
      ASSERT_TRUE(state.ok()) << state.status().ToString();
      auto r = state->LatestRollout("itest");
      ASSERT_TRUE(r.ok() && r->has_value()) << context;
      EXPECT_TRUE(IsActiveStatus((*r)->status)) << context << ": " << (*r)->status;
      auto steps = state->Steps((*r)->id).value_or({});
      for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i].step_index, static_cast<int>(i));
      // The load balancer holds the last applied step's weights, or the current step's intent
      // when the kill came between setting and recording them.
      Weights previous = initial;
      for (const StepRow& st : steps) {
        if (st.applied_at) previous = st.readback;
      }
      const Weights now = lb();
      bool ok = now == previous || (!steps.empty() && now == steps.back().weights) ||
                (*r)->status == "rolling-back";
      EXPECT_TRUE(ok) << context << ": load balancer " << WeightsToJson(now) << ", recorded "
                      << WeightsToJson(previous);
    }
    cutover::testing::ChildProcess second;
    ASSERT_TRUE(second.Spawn({bin, "canary", "start", spec, "--db", db}, db + ".run2.log").ok());
    for (int i = 0; i < 600 && second.Running(); ++i) std::this_thread::sleep_for(50ms);
    const std::string log2 = ReadFile(db + ".run2.log").value_or("");
    EXPECT_EQ(second.exit_description(), final_status == "promoted" ? "exit 0" : "exit 1")
        << context << "\n"
        << log2;
    auto state = RolloutStore::Open(db);
    ASSERT_TRUE(state.ok());
    auto r = state->LatestRollout("itest");
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((*r)->status, final_status) << context << "\n" << log2;
    auto steps = state->Steps((*r)->id).value_or({});
    for (size_t i = 0; i < steps.size(); ++i) {
      EXPECT_EQ(steps[i].step_index, static_cast<int>(i)) << context << ": a step twice";
      EXPECT_FALSE(steps[i].outcome.empty()) << context << ": step " << i << " never ended";
    }
    bool resumed = false;
    for (const auto& e : state->Events((*r)->id).value_or({})) resumed |= e.kind == "resume";
    EXPECT_TRUE(resumed) << context;
    if (final_status == "promoted") {
      EXPECT_EQ(steps.size(), 2u) << context;
      EXPECT_EQ(lb(), (Weights{{"d1", 100}, {"s1", 0}})) << context;
    } else {
      EXPECT_EQ(Weight("d1"), 0) << context;
    }
  };
  for (const auto& [point, hits] : points) {
    for (int n = 1; n <= hits && !HasFailure(); ++n) kill_and_resume(point, n, "promoted");
  }
  // A failing canary: killed once the rollback is decided, before the weights move.
  d1_.SetErrorRate(0.2);
  if (!HasFailure()) kill_and_resume("canary.after_rollback_intent", 1, "rolled-back");
  load.Stop();
  std::printf("canary kill points tried: %d\n", tried);
  RecordProperty("canary_kill_points", tried);
}

// `canary analyze` on the recorded past: a healthy stretch advances (exit 0), a stretch with
// 20% canary errors rolls back at its first interval (exit 1), and neither run moves traffic.
TEST_F(CanaryItest, AnalyzeJudgesPastRangesFromPrometheusWithoutMovingTraffic) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("analyze-spec.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText()).ok());
  ASSERT_TRUE(haproxy_->AdminCommand("set weight infer/d1 1").ok());
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  std::this_thread::sleep_for(1500ms);
  const double t0 = RealClock().Now();
  std::this_thread::sleep_for(6500ms);  // two healthy 3 s intervals
  const double t1 = RealClock().Now();
  d1_.SetErrorRate(0.2);
  std::this_thread::sleep_for(6500ms);
  const double t2 = RealClock().Now();
  load.Stop();
  std::this_thread::sleep_for(1500ms);  // a scrape past t2
  auto analyze = [&](double from, double to, const std::string& extra, std::string* out) {
    char range[96];
    std::snprintf(range, sizeof range, " --from %.3f --to %.3f", from, to);
    return cutover::testing::RunShell(bin + " canary analyze " + spec + range + extra + " 2>&1",
                                      out);
  };
  std::string out;
  ASSERT_EQ(analyze(t0, t1, " --json", &out), 0) << out;
  nlohmann::json healthy = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(healthy.is_object()) << out;
  EXPECT_EQ(healthy["schema"], "cutover.canary-analysis/1");
  EXPECT_EQ(healthy["outcome"], "advance") << out;
  EXPECT_EQ(healthy["counts"]["intervals"], 2);
  EXPECT_EQ(healthy["counts"]["pass"], 2) << out;
  CUTOVER_EXPECT_VALID(healthy, "canary-analysis-1.json");

  ASSERT_EQ(analyze(t1, t2, " --json", &out), 1) << out;
  nlohmann::json bad = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(bad.is_object()) << out;
  EXPECT_EQ(bad["outcome"], "rollback") << out;
  EXPECT_EQ(bad["stopped_at"], 0) << out;
  EXPECT_EQ(bad["intervals"][0]["verdict"], "fail") << out;
  CUTOVER_EXPECT_VALID(bad, "canary-analysis-1.json");
  // The table names the failing check and the outcome.
  ASSERT_EQ(analyze(t1, t2, "", &out), 1) << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("error-rate: fail"), std::string::npos) << out;
  EXPECT_NE(out.find("outcome: rollback after interval 1"), std::string::npos) << out;

  EXPECT_EQ(Weight("d1"), 1) << "analyze moved traffic";
  EXPECT_EQ(Weight("s1"), 1) << "analyze moved traffic";
  // Bad input: one line, exit 2.
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary analyze " + spec +
                                           " --from yesterday 2>&1",
                                       &out),
            2);
  EXPECT_NE(out.find("expected unix seconds, RFC 3339"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

// Two `canary start` of one spec at the same moment: exactly one takes the lease and drives the
// rollout to its end; the other is refused (exit 2) naming the holder and moves nothing.
TEST_F(CanaryItest, TwoControllersAtOnceExactlyOneDrives) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("two.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText("[{weight: 50}, {weight: 100}]")).ok());
  const std::string db = dir_.Join("state.db");
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  cutover::testing::ChildProcess a, b;
  ASSERT_TRUE(
      a.Spawn({bin, "canary", "start", spec, "--db", db, "--events"}, dir_.Join("a.log")).ok());
  ASSERT_TRUE(
      b.Spawn({bin, "canary", "start", spec, "--db", db, "--events"}, dir_.Join("b.log")).ok());
  const pid_t pid_a = a.pid(), pid_b = b.pid();  // pid() is -1 once a child is reaped
  for (int i = 0; i < 900 && (a.Running() || b.Running()); ++i) std::this_thread::sleep_for(50ms);
  load.Stop();
  const std::string la = ReadFile(dir_.Join("a.log")).value_or("");
  const std::string lb = ReadFile(dir_.Join("b.log")).value_or("");
  const bool a_drove = a.exit_description() == "exit 0";
  EXPECT_NE(a_drove, b.exit_description() == "exit 0") << la << "\n----\n" << lb;
  const std::string& refused_log = a_drove ? lb : la;
  EXPECT_EQ((a_drove ? b : a).exit_description(), "exit 2") << refused_log;
  EXPECT_NE(refused_log.find("rollout itest is driven by another controller: pid " +
                             std::to_string(a_drove ? pid_a : pid_b)),
            std::string::npos)
      << refused_log;
  auto r = watcher_->LatestRollout("itest").value();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->id, 1) << "one rollout, not two";
  EXPECT_EQ(r->status, "promoted");
  int leases = 0, resumes = 0;
  for (const auto& e : watcher_->Events(r->id).value_or({})) {
    leases += e.kind == "lease";
    resumes += e.kind == "resume";
  }
  EXPECT_EQ(leases, 1) << Trace(r->id);
  EXPECT_EQ(resumes, 0) << "the refused controller never resumed the rollout" << Trace(r->id);
  EXPECT_EQ(watcher_->Steps(r->id)->size(), 2u);
  EXPECT_EQ(Weight("d1"), 100);
  // --events: one line per event as it happens, each interval with every check's figures.
  const std::string& driver_log = a_drove ? la : lb;
  EXPECT_NE(driver_log.find(" step: step 0 applied: canary 50% weights {\"d1\":1,\"s1\":1}"),
            std::string::npos)
      << driver_log;
  EXPECT_NE(driver_log.find(" interval: interval 1 (step 0, canary 50%): error-rate pass ("),
            std::string::npos)
      << driver_log;
  EXPECT_NE(driver_log.find(" promoted: every step done"), std::string::npos) << driver_log;
  // The history's text: times, and each check's value against its bound.
  std::string out;
  ASSERT_EQ(cutover::testing::RunShell(bin + " canary history --db " + db + " 2>&1", &out), 0);
  EXPECT_NE(out.find("    interval 1 "), std::string::npos) << out;
  EXPECT_NE(out.find("      error-rate: pass ("), std::string::npos) << out;
  EXPECT_NE(out.find(" <= max 0.01"), std::string::npos) << out;
  EXPECT_NE(out.find("  events:\n"), std::string::npos) << out;
}

// The holder is suspended (SIGSTOP) past three missed beats; a second `start` takes the lease
// over and drives. The first, resumed while the second is held still, writes nothing: not the
// weights a controller re-asserts (a trap weight stays), not an event; it exits 3 saying it lost
// the lease. The second then finishes the rollout.
TEST_F(CanaryItest, SuspendedHolderIsTakenOverAndWritesNothingWhenResumed) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("stop.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText("[{weight: 50}, {pause: {}}, {weight: 100}]")).ok());
  const std::string db = dir_.Join("state.db");
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  cutover::testing::ChildProcess first, second;
  ASSERT_TRUE(first.Spawn({bin, "canary", "start", spec, "--db", db}, dir_.Join("1.log")).ok());
  ASSERT_TRUE(WaitApplied(1)) << ReadFile(dir_.Join("1.log")).value_or("");
  first.Signal(SIGSTOP);
  std::this_thread::sleep_for(3500ms);  // three beats of 1 s missed
  ASSERT_TRUE(second.Spawn({bin, "canary", "start", spec, "--db", db}, dir_.Join("2.log")).ok());
  const int64_t id = watcher_->LatestRollout("itest").value()->id;
  auto taken_over = [&]() {
    for (const auto& e : watcher_->Events(id).value_or({})) {
      if (e.kind == "resume") return true;
    }
    return false;
  };
  for (int i = 0; i < 200 && !taken_over(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(taken_over()) << ReadFile(dir_.Join("2.log")).value_or("") << Trace(id);
  std::this_thread::sleep_for(300ms);
  second.Signal(SIGSTOP);
  std::string lease_event;
  for (const auto& e : watcher_->Events(id).value_or({})) {
    if (e.kind == "lease") lease_event = e.message;
  }
  EXPECT_NE(lease_event.find("holds the lease (generation 2), taken over from pid " +
                             std::to_string(first.pid())),
            std::string::npos)
      << lease_event;
  EXPECT_NE(lease_event.find(": no heartbeat for "), std::string::npos) << lease_event;
  // A trap: a controller that still acted would re-assert the step's 1:1.
  ASSERT_TRUE(haproxy_->AdminCommand("set weight infer/d1 7").ok());
  const size_t events = watcher_->Events(id)->size();
  const size_t measurements = watcher_->Measurements(id)->size();
  ::kill(first.pid(), SIGCONT);
  for (int i = 0; i < 200 && first.Running(); ++i) std::this_thread::sleep_for(50ms);
  const std::string log1 = ReadFile(dir_.Join("1.log")).value_or("");
  EXPECT_EQ(first.exit_description(), "exit 3") << log1;
  EXPECT_NE(log1.find("lost the lease of rollout itest (generation 1) to pid " +
                      std::to_string(second.pid())),
            std::string::npos)
      << log1;
  EXPECT_EQ(Weight("d1"), 7) << "the controller that lost its lease moved traffic";
  EXPECT_EQ(watcher_->Events(id)->size(), events) << Trace(id);
  EXPECT_EQ(watcher_->Measurements(id)->size(), measurements);
  // The holder goes on: it re-asserts the step's weights and finishes on promote.
  ::kill(second.pid(), SIGCONT);
  std::this_thread::sleep_for(1500ms);  // its heartbeat catches up
  std::string out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary promote --db " + db + " 2>&1", &out), 0)
      << out;
  for (int i = 0; i < 600 && second.Running(); ++i) std::this_thread::sleep_for(50ms);
  load.Stop();
  EXPECT_EQ(second.exit_description(), "exit 0") << ReadFile(dir_.Join("2.log")).value_or("");
  EXPECT_EQ(watcher_->GetRollout(id)->status, "promoted") << Trace(id);
  EXPECT_EQ(Weight("d1"), 100);
}

// After Ctrl-C on `start` (exit 3, the rollout stays active) no controller runs: `status` says so,
// `pause` is refused (exit 2, nothing would act on it), and `abort` rolls back itself: HAProxy's
// canary weight goes to 0, the rollback is confirmed and recorded.
TEST_F(CanaryItest, AbortWithNoControllerRunningRollsBackItself) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string spec = dir_.Join("abort.yaml");
  ASSERT_TRUE(WriteFileAtomic(spec, SpecText("[{weight: 25}, {pause: {}}, {weight: 100}]")).ok());
  const std::string db = dir_.Join("state.db");
  LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy_->port()) + "/", 2, 50);
  load.Start();
  cutover::testing::ChildProcess start;
  ASSERT_TRUE(start.Spawn({bin, "canary", "start", spec, "--db", db}, dir_.Join("s.log")).ok());
  ASSERT_TRUE(WaitApplied(1)) << ReadFile(dir_.Join("s.log")).value_or("");
  start.Signal(SIGINT);
  for (int i = 0; i < 200 && start.Running(); ++i) std::this_thread::sleep_for(50ms);
  ASSERT_EQ(start.exit_description(), "exit 3") << ReadFile(dir_.Join("s.log")).value_or("");
  ASSERT_EQ(Weight("d1"), 1) << "the canary keeps its weight (25%: 3:1)";

  std::string out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary status --db " + db + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("controller: none (released); nothing acts on this rollout until `canary "
                     "start` runs again"),
            std::string::npos)
      << out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary pause --db " + db + " 2>&1", &out), 2) << out;
  EXPECT_EQ(out,
            "cutover: no controller drives rollout itest (released): nothing would act on pause "
            "until `cutover canary start` runs again\n");
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary abort --db " + db + " 2>&1", &out), 0) << out;
  EXPECT_NE(out.find("rolled back rollout itest here (no controller was running): rolled-back"),
            std::string::npos)
      << out;
  load.Stop();
  EXPECT_EQ(Weight("d1"), 0);
  EXPECT_EQ(Weight("s1"), 100);
  auto r = watcher_->LatestRollout("itest").value();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, "rolled-back");
  EXPECT_EQ(r->reason, "aborted by command; no controller was running (released)");
  bool confirmed = false;
  for (const auto& e : watcher_->Events(r->id).value_or({})) {
    confirmed = confirmed || (e.kind == "rollback" &&
                              e.message.rfind("confirmed from load balancer counters", 0) == 0);
  }
  EXPECT_TRUE(confirmed) << Trace(r->id);
}

// The pre-flight with the real servers: Prometheus down stops `start` before any weight moves;
// `canary lint` checks the spec offline, `lint --live` runs the pre-flight (0 ready, 1 a query
// returns nothing for the baseline, 3 Prometheus does not answer).
TEST_F(CanaryItest, PreflightStopsStartAndLintLiveReportsIt) {
  const std::string bin = cutover::testing::BinaryDir() + "/apps/cutover/cutover";
  if (::access(bin.c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built: " + bin);
  const std::string db = dir_.Join("state.db");
  const std::string good = dir_.Join("good.yaml");
  ASSERT_TRUE(WriteFileAtomic(good, SpecText()).ok());
  std::string no_series_text = SpecText();
  no_series_text.replace(no_series_text.find("test_request_duration_seconds_bucket"), 36,
                         "no_such_duration_seconds_bucket");
  const std::string no_series = dir_.Join("no-series.yaml");
  ASSERT_TRUE(WriteFileAtomic(no_series, no_series_text).ok());
  std::string out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary lint " + good + " 2>&1", &out), 0) << out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary lint --live " + good + " 2>&1", &out), 0)
      << out;
  EXPECT_NE(out.find("pre-flight of itest: every check passed"), std::string::npos) << out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary lint --live " + no_series + " 2>&1", &out), 1)
      << out;
  EXPECT_NE(out.find("check p99-latency: fail (returns no series for the baseline: "),
            std::string::npos)
      << out;
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary start " + no_series + " --db " + db + " 2>&1",
                                       &out),
            2)
      << out;
  EXPECT_NE(out.find("cutover: canary itest not started: pre-flight: check p99-latency: returns no "
                     "series for the baseline"),
            std::string::npos)
      << out;

  prometheus_->Stop();
  EXPECT_EQ(cutover::testing::RunShell(bin + " canary lint --live " + good + " 2>&1", &out), 3)
      << out;
  EXPECT_NE(out.find("  metrics: no answer (prometheus"), std::string::npos) << out;
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(
      cutover::testing::RunShell(bin + " canary start " + good + " --db " + db + " 2>&1", &out), 3)
      << out;
  EXPECT_NE(out.find("cutover: canary itest not started: pre-flight: metrics: prometheus"),
            std::string::npos)
      << out;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 15s) << "no interval was waited for";
  EXPECT_EQ(Weight("d1"), 0) << "no traffic moved to the canary";
  EXPECT_FALSE(watcher_->LatestRollout("itest").value().has_value()) << "nothing recorded";
}

}  // namespace
}  // namespace cutover::canary
