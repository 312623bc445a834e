// The canary controller on a real nginx load balancer: two test backends (baseline s1, canary d1)
// behind an `upstream` block in an include file, nginx -t and a SIGHUP reload for each weight
// change, real Prometheus (1 s scrape) counting each backend's requests by scrape target. nginx
// keeps no per-server counters, so these also prove the rollback confirmed from Prometheus.
#include "canary/nginx_traffic.h"

#include <thread>

#include <gtest/gtest.h>

#include "canary/controller.h"
#include "canary/prometheus_client.h"
#include "canary/state.h"
#include "core/file_util.h"
#include "tests/canary/test_backend.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using namespace std::chrono_literals;
using cutover::testing::NginxDav;
using cutover::testing::Prometheus;
using testing::LoadGenerator;
using testing::TestBackend;

class NginxCanaryItest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(s1_.Start().ok());
    ASSERT_TRUE(d1_.Start().ok());
    s1_.SetLatency(5ms);
    d1_.SetLatency(5ms);
    upstream_file_ = dir_.Join("upstream.conf");
    ASSERT_TRUE(WriteFileAtomic(upstream_file_, "# written by the test\nupstream infer {\n"
                                                "    server " + s1_.address() +
                                                    " weight=100;\n"
                                                    "    server " +
                                                    d1_.address() + " down max_fails=0;\n}\n")
                    .ok());
    nginx_ = std::make_unique<NginxDav>(cutover::testing::NginxDavOptions{
        .extra_server_config = "    location /lb/ { proxy_pass http://infer/; }\n",
        .extra_http_config = "  include " + upstream_file_ + ";\n"});
    Status ns = nginx_->Start();
    if (ns.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(ns.message());
    ASSERT_TRUE(ns.ok()) << ns.ToString();
    prometheus_ = std::make_unique<Prometheus>(cutover::testing::PrometheusOptions{
        .jobs = {{"backends", {s1_.address(), d1_.address()}}}});
    Status ps = prometheus_->Start();
    if (ps.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(ps.message());
    ASSERT_TRUE(ps.ok()) << ps.ToString();
    Status up = testing::WaitForTargetsUp(prometheus_->url(), 2);
    ASSERT_TRUE(up.ok()) << up.ToString();
  }

  std::string SpecText() {
    const std::string d = nginx_->dir();
    const std::string count = "test_request_duration_seconds_count{instance=~\"{{servers}}\"}";
    return "apiVersion: cutover/v1\n"
           "name: nginx-itest\n"
           "traffic:\n"
           "  provider: nginx\n"
           "  upstream_file: '" + upstream_file_ + "'\n"
           "  upstream: infer\n"
           "  test_command: '/usr/sbin/nginx -t -q -p " + d + " -c " + d + "/nginx.conf -e " + d +
           "/error.log'\n"
           "  reload_command: 'kill -HUP $(cat " + d + "/nginx.pid)'\n"
           "  baseline: ['" + s1_.address() + "']\n"
           "  canary: ['" + d1_.address() + "']\n"
           "metrics: {provider: prometheus, url: '" + prometheus_->url() +
           "', step: 1s, timeout: 1s}\n"
           "steps: [{weight: 50}, {weight: 100}]\n"
           "analysis:\n"
           "  interval: 3s\n"
           "  min_requests: 10\n"
           "  requests: 'sum(increase(" + count + "[{{interval}}]))'\n"
           "  failure_limit: 1\n"
           "  inconclusive_limit: 3\n"
           "  on_inconclusive: rollback\n"
           "  checks:\n"
           "    - name: p99-latency\n"
           "      query: 'histogram_quantile(0.99, sum by (le) (rate("
           "test_request_duration_seconds_bucket{instance=~\"{{servers}}\"}[{{interval}}])))'\n"
           "      vs_baseline: {max_ratio: 2}\n";
  }

  Result<RolloutOutcome> Run() {
    const std::string text = SpecText();
    auto spec = ParseSpec(text, "nginx-itest.yaml");
    if (!spec.ok()) return spec.status();
    auto store = RolloutStore::Open(dir_.Join("state.db"));
    if (!store.ok()) return store.status();
    NginxTraffic traffic({.upstream_file = spec->traffic.upstream_file,
                          .upstream = spec->traffic.upstream,
                          .test_command = spec->traffic.test_command,
                          .reload_command = spec->traffic.reload_command,
                          .timeout = spec->traffic.timeout});
    PrometheusClient metrics(prometheus_->url(), 1000ms);
    RealClock clock;
    Controller c(*spec, "nginx-itest.yaml", text, &*store, &traffic, &metrics, &clock);
    Result<RolloutOutcome> out = c.Run();
    if (out.ok()) id_ = out->rollout_id;
    return out;
  }

  std::string Events() {
    auto store = RolloutStore::Open(dir_.Join("state.db"));
    std::string out;
    if (!store.ok()) return out;
    for (const auto& e : store->Events(id_).value_or({})) out += e.kind + ": " + e.message + "\n";
    for (const auto& m : store->Measurements(id_).value_or({})) {
      out += "  " + m.check + " " + m.verdict + " " + m.reason + "\n";
    }
    return out;
  }

  Weights FileWeights() {
    auto b = ParseUpstream(ReadFile(upstream_file_).value_or(""), "infer");
    return b.ok() ? UpstreamWeights(*b) : Weights{};
  }

  cutover::testing::TempDir dir_;
  std::string upstream_file_;
  TestBackend s1_{"s1"};
  TestBackend d1_{"d1"};
  std::unique_ptr<NginxDav> nginx_;
  std::unique_ptr<Prometheus> prometheus_;
  int64_t id_ = 0;
};

TEST_F(NginxCanaryItest, HealthyCanaryIsPromotedAndNginxSendsItAllTheTraffic) {
  LoadGenerator load("http://127.0.0.1:" + std::to_string(nginx_->port()) + "/lb/", 2, 50);
  load.Start();
  auto out = Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted") << out->reason << "\n" << Events();
  EXPECT_EQ(FileWeights(), (Weights{{s1_.address(), 0}, {d1_.address(), 100}}));
  // nginx runs it: after the reload settles the baseline serves nothing more.
  std::this_thread::sleep_for(500ms);
  int64_t s1_before = s1_.served(), d1_before = d1_.served();
  std::this_thread::sleep_for(1000ms);
  load.Stop();
  EXPECT_LE(s1_.served() - s1_before, 2) << "the baseline still serves after the promotion";
  EXPECT_GT(d1_.served() - d1_before, 20) << "the canary does not serve after the promotion";
  const std::string kept = ReadFile(upstream_file_).value_or("");
  EXPECT_NE(kept.find("max_fails=0"), std::string::npos) << "other parameters are kept:\n" << kept;
  EXPECT_EQ(kept.rfind("# written by the test\n", 0), 0u) << kept;
}

TEST_F(NginxCanaryItest, SlowCanaryRollsBackConfirmedFromPrometheus) {
  d1_.SetLatency(60ms);
  LoadGenerator load("http://127.0.0.1:" + std::to_string(nginx_->port()) + "/lb/", 2, 50);
  load.Start();
  auto out = Run();
  load.Stop();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason << "\n" << Events();
  EXPECT_GT(d1_.served(), 0) << "the canary never got traffic";
  EXPECT_EQ(FileWeights(), (Weights{{s1_.address(), 100}, {d1_.address(), 0}}));
  EXPECT_NE(Events().find("confirmed from prometheus: canary served 0 of"), std::string::npos)
      << Events();
}

TEST_F(NginxCanaryItest, AServerMissingFromTheUpstreamStartsNoRollout) {
  ASSERT_TRUE(WriteFileAtomic(upstream_file_,
                              "upstream infer {\n    server " + s1_.address() + " weight=1;\n}\n")
                  .ok());
  auto out = Run();
  // The pre-flight finds it before any rollout is recorded or any weight is written.
  EXPECT_EQ(out.status().code(), Code::kFailedPrecondition) << out.status().ToString();
  EXPECT_NE(out.status().message().find("canary nginx-itest not started: pre-flight: "
                                        "load-balancer: nginx: upstream infer in"),
            std::string::npos)
      << out.status().message();
  auto store = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(store.ok());
  auto latest = store->LatestRollout("nginx-itest");
  ASSERT_TRUE(latest.ok());
  EXPECT_FALSE(latest->has_value()) << "a rollout was recorded";
}

TEST_F(NginxCanaryItest, AConfigNginxRefusesIsNotAppliedAndTheFileIsRestored) {
  // A parameter nginx rejects: nginx -t fails, the file goes back, nginx keeps running.
  const std::string bad = "upstream infer {\n    server " + s1_.address() +
                          " weight=100 bogus_param;\n    server " + d1_.address() + " down;\n}\n";
  ASSERT_TRUE(WriteFileAtomic(upstream_file_, bad).ok());
  auto spec = ParseSpec(SpecText(), "x.yaml");
  ASSERT_TRUE(spec.ok());
  NginxTraffic traffic({.upstream_file = upstream_file_,
                        .upstream = "infer",
                        .test_command = spec->traffic.test_command,
                        .reload_command = spec->traffic.reload_command});
  Status s = traffic.SetWeights({{d1_.address(), 1}});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("invalid parameter \"bogus_param\""), std::string::npos)
      << s.message();
  EXPECT_EQ(ReadFile(upstream_file_).value_or(""), bad);
  EXPECT_TRUE(nginx_->Running());
}

}  // namespace
}  // namespace cutover::canary
