// The pre-flight: every check passes against healthy fakes; each way Prometheus, a query or the
// load balancer can be wrong is named, with the exit code `canary lint --live` gives it.
#include "canary/preflight.h"

#include <gtest/gtest.h>

#include "tests/canary/fakes.h"

namespace cutover::canary {
namespace {

using testing::FakeClock;
using testing::FakeMetrics;
using testing::FakeTraffic;

RolloutSpec Spec(const std::string& extra = "") {
  std::string text =
      "apiVersion: cutover/v1\n"
      "name: pre\n"
      "traffic: {provider: haproxy, socket: /x.sock, backend: infer, baseline: [s1], "
      "canary: [d1]}\n"
      "metrics: {provider: prometheus, url: 'http://127.0.0.1:1', step: 1s}\n"
      "steps: [{weight: 10}, {weight: 100}]\n"
      "analysis:\n"
      "  interval: 10s\n"
      "  min_requests: 10\n"
      "  requests: 'sum(requests{s=~\"{{servers}}\"})'\n"
      "  checks:\n"
      "    - {name: error-rate, query: 'err{s=~\"{{servers}}\"}', max: 0.01}\n" +
      extra;
  auto spec = ParseSpec(text, "pre.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.value_or(RolloutSpec{});
}

// Answers like FakeMetrics, except: queries containing `empty` return no series, and those
// containing `rejected` fail as Prometheus fails a wrong query.
class PickyMetrics : public FakeMetrics {
 public:
  Result<PromResult> Query(const std::string& expr, double time) override {
    seen.push_back(expr);
    if (!empty.empty() && expr.find(empty) != std::string::npos) return PromResult{};
    if (!rejected.empty() && expr.find(rejected) != std::string::npos) {
      return Status::InvalidArgument("prometheus: bad_data: parse error at char 5");
    }
    return FakeMetrics::Query(expr, time);
  }
  std::string empty, rejected;
  std::vector<std::string> seen;
};

class PreflightTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  FakeTraffic traffic_{&clock_, {{"s1", 1}, {"d1", 0}}};
  PickyMetrics metrics_;
};

TEST_F(PreflightTest, EveryCheckPassesAndQueriesAskForTheBaseline) {
  PreflightReport r = RunPreflight(Spec(), traffic_, metrics_, 100);
  EXPECT_TRUE(r.ok()) << r.Problems();
  EXPECT_EQ(r.ExitCode(), 0);
  ASSERT_EQ(r.checks.size(), 4u);
  EXPECT_EQ(r.checks[0].name, "load-balancer");
  EXPECT_EQ(r.checks[0].detail, "haproxy reports {\"d1\":0,\"s1\":1}");
  EXPECT_EQ(r.checks[1].name, "metrics");
  EXPECT_EQ(r.checks[2].name, "requests");
  EXPECT_EQ(r.checks[3].name, "check error-rate");
  EXPECT_EQ(metrics_.seen,
            (std::vector<std::string>{"vector(1)", "sum(requests{s=~\"s1\"})", "err{s=~\"s1\"}"}));
  EXPECT_EQ(traffic_.set_calls, 0) << "the pre-flight moves nothing";
}

TEST_F(PreflightTest, PrometheusDownIsNoAnswerAndSkipsTheQueries) {
  metrics_.error = Status::Unavailable("prometheus: connection refused");
  PreflightReport r = RunPreflight(Spec(), traffic_, metrics_, 100);
  EXPECT_EQ(r.ExitCode(), 3);
  EXPECT_EQ(r.Problems(), "metrics: prometheus: connection refused");
  EXPECT_EQ(r.checks[2].outcome, PreflightOutcome::kSkipped);
  EXPECT_EQ(r.checks[3].outcome, PreflightOutcome::kSkipped);
}

TEST_F(PreflightTest, QueryWithoutSeriesOrRejectedFails) {
  metrics_.empty = "err{";
  metrics_.rejected = "requests";
  PreflightReport r = RunPreflight(Spec(), traffic_, metrics_, 100);
  EXPECT_EQ(r.ExitCode(), 1);
  EXPECT_EQ(r.Problems(),
            "requests: prometheus: bad_data: parse error at char 5; check error-rate: returns no "
            "series for the baseline: err{s=~\"s1\"}");
}

TEST_F(PreflightTest, CapacityQueryIsAskedAtTheFirstWeight) {
  metrics_.capacity_value = 5;
  PreflightReport r = RunPreflight(
      Spec("capacity: {query: 'capacity{w=\"{{weight}}\"}', min: 1}\n"), traffic_, metrics_, 100);
  EXPECT_TRUE(r.ok()) << r.Problems();
  EXPECT_EQ(r.checks.back().name, "capacity");
  EXPECT_EQ(metrics_.seen.back(), "capacity{w=\"10\"}");
  metrics_.capacity_value.reset();
  r = RunPreflight(Spec("capacity: {query: 'capacity{w=\"{{weight}}\"}', min: 1}\n"), traffic_,
                   metrics_, 100);
  EXPECT_TRUE(r.ok()) << r.Problems();
  EXPECT_EQ(r.checks.back().detail, "no series now: the gate holds until it has one");
  metrics_.capacity_error = Status::InvalidArgument("prometheus: bad_data: parse error");
  r = RunPreflight(Spec("capacity: {query: 'capacity{w=\"{{weight}}\"}', min: 1}\n"), traffic_,
                   metrics_, 100);
  EXPECT_EQ(r.Problems(), "capacity: prometheus: bad_data: parse error");
}

// A load balancer that does not know a server of the spec, or does not answer.
class BrokenTraffic : public FakeTraffic {
 public:
  using FakeTraffic::FakeTraffic;
  Result<Weights> ReadWeights(const std::vector<std::string>&) override { return answer; }
  Result<Weights> answer = Weights{};
};

TEST_F(PreflightTest, LoadBalancerWithoutTheServerFailsAndOneNotAnsweringIsNoAnswer) {
  BrokenTraffic lb{&clock_, {{"s1", 1}}};
  lb.answer = Status::NotFound("haproxy: no server infer/d1");
  PreflightReport r = RunPreflight(Spec(), lb, metrics_, 100);
  EXPECT_EQ(r.ExitCode(), 1);
  EXPECT_EQ(r.Problems(), "load-balancer: haproxy: no server infer/d1");
  lb.answer = Status::Unavailable("haproxy: /x.sock: connection refused");
  r = RunPreflight(Spec(), lb, metrics_, 100);
  EXPECT_EQ(r.ExitCode(), 3);
  EXPECT_EQ(r.checks[0].outcome, PreflightOutcome::kUnreachable);
}

}  // namespace
}  // namespace cutover::canary
