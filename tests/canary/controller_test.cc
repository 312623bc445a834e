#include "canary/controller.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "canary/state.h"
#include "tests/canary/fakes.h"
#include "tests/harness/test_env.h"

namespace cutover::canary {
namespace {

using testing::FakeClock;
using testing::FakeMetrics;
using testing::FakeTraffic;

std::string SpecText(const std::string& extra_analysis = "",
                     const std::string& steps = "[{weight: 10}, {weight: 50}, {weight: 100}]") {
  return "apiVersion: cutover/v1\n"
         "name: t\n"
         "traffic: {provider: haproxy, socket: /x.sock, backend: infer, baseline: [s1], "
         "canary: [d1]}\n"
         "metrics: {provider: prometheus, url: 'http://127.0.0.1:1', step: 1s}\n"
         "steps: " +
         steps +
         "\n"
         "analysis:\n"
         "  interval: 2s\n"
         "  min_requests: 10\n"
         "  requests: 'sum(requests{s=~\"{{servers}}\"})'\n"
         "  failure_limit: 1\n"
         "  inconclusive_limit: 3\n"
         "  consecutive_error_limit: 2\n"
         "  on_inconclusive: rollback\n" +
         extra_analysis +
         "  checks:\n"
         "    - {name: error-rate, query: 'err{s=~\"{{servers}}\"}', max: 0.01}\n";
}

class ControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = RolloutStore::Open(dir_.Join("state.db"));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_.emplace(std::move(*s));
  }
  Result<RolloutOutcome> RunSpec(const std::string& text, ControllerOptions o = {}) {
    auto spec = ParseSpec(text, "t.yaml");
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return spec.status();
    Controller c(*spec, "t.yaml", text, &*store_, &traffic_, &metrics_, &clock_, o);
    return c.Run();
  }
  std::vector<MeasurementRow> Intervals(int64_t id) {
    std::vector<MeasurementRow> out;
    std::vector<MeasurementRow> all = store_->Measurements(id).value();
    for (auto& m : all) {
      if (m.check == "interval") out.push_back(m);
    }
    return out;
  }

  cutover::testing::TempDir dir_;
  std::optional<RolloutStore> store_;
  FakeClock clock_;
  FakeTraffic traffic_{&clock_, {{"s1", 1}, {"d1", 0}}};
  FakeMetrics metrics_;
};

TEST_F(ControllerTest, HealthyCanaryIsPromotedThroughEveryStep) {
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  EXPECT_EQ(out->exit_code, 0);
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 0}, {"d1", 100}}));
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(steps[i].step_index, i);
    EXPECT_TRUE(steps[i].applied_at.has_value());
    EXPECT_EQ(steps[i].readback, steps[i].weights);
    EXPECT_EQ(steps[i].outcome, i < 2 ? "advanced" : "promoted");
  }
  EXPECT_EQ(steps[0].weights, (Weights{{"s1", 9}, {"d1", 1}}));
  // Two analysed steps, one passing interval each; the 100% step is not analysed.
  auto iv = Intervals(out->rollout_id);
  ASSERT_EQ(iv.size(), 2u);
  for (const auto& m : iv) {
    EXPECT_EQ(m.verdict, "pass");
    EXPECT_LE(*m.canary_value, 1.0 + 0.2 + 1e-6) << "decided within a tick of the first scrape";
  }
  EXPECT_EQ(store_->GetRollout(out->rollout_id)->status, "promoted");
}

TEST_F(ControllerTest, ErroringCanaryRollsBackAtFirstInterval) {
  metrics_.canary_value = 0.05;
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 100}, {"d1", 0}}));
  EXPECT_EQ(Intervals(out->rollout_id).size(), 1u);
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].outcome, "rolled-back");
}

TEST_F(ControllerTest, NoTrafficIsInconclusiveAndRollsBackAfterTheLimit) {
  // Traffic stops once the rollout runs (before, the pre-flight would refuse to start).
  clock_.on_sleep = [&](double) {
    metrics_.canary_requests = 0;
    metrics_.baseline_requests = -1;  // no series at all
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "rolled-back");
  auto iv = Intervals(out->rollout_id);
  ASSERT_EQ(iv.size(), 3u);
  for (const auto& m : iv) EXPECT_EQ(m.verdict, "inconclusive");
  EXPECT_EQ(store_->Steps(out->rollout_id)->size(), 1u) << "never advanced";
}

// Prometheus down before the first weight change: the pre-flight stops the start, nothing moves
// and nothing is recorded.
TEST_F(ControllerTest, MetricsDownAtStartMovesNothing) {
  metrics_.error = Status::Unavailable("prometheus: connection refused");
  auto out = RunSpec(SpecText());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kUnavailable);
  EXPECT_EQ(out.status().message(),
            "canary t not started: pre-flight: metrics: prometheus: connection refused");
  EXPECT_EQ(traffic_.set_calls, 0);
  EXPECT_FALSE(store_->LatestRollout("t").value().has_value());
}

TEST_F(ControllerTest, BadQueryAtStartMovesNothing) {
  metrics_.error = Status::InvalidArgument("prometheus: bad_data: parse error");
  auto out = RunSpec(SpecText());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(out.status().message(),
            "canary t not started: pre-flight: metrics: prometheus: bad_data: parse error");
  EXPECT_EQ(traffic_.set_calls, 0);
}

TEST_F(ControllerTest, MetricsDownRollsBackAfterTheErrorLimit) {
  clock_.on_sleep = [&](double) {
    metrics_.error = Status::Unavailable("prometheus: connection refused");
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "rolled-back");
  auto iv = Intervals(out->rollout_id);
  ASSERT_EQ(iv.size(), 2u);
  EXPECT_EQ(iv[1].verdict, "error");
}

TEST_F(ControllerTest, BadQueryIsASpecErrorAndRollsBack) {
  clock_.on_sleep = [&](double) {
    metrics_.error = Status::InvalidArgument("prometheus: bad_data: parse error");
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->reason, "spec error in analysis.requests: prometheus: bad_data: parse error");
}

TEST_F(ControllerTest, CanaryStillServingEndsUnconfirmed) {
  metrics_.canary_value = 0.05;
  traffic_.leak_canary.insert("d1");
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "rolled-back-unconfirmed");
  EXPECT_EQ(out->exit_code, 1);
  EXPECT_NE(out->reason.find("rollback unconfirmed: canary still served"), std::string::npos)
      << out->reason;
  EXPECT_EQ(store_->GetRollout(out->rollout_id)->status, "rolled-back-unconfirmed");
}

// A provider without per-server counters: the rollback is confirmed from Prometheus, where the
// canary's requests fell to zero once its weight went to 0, and not where they did not.
class RollbackFromMetricsTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    metrics_.canary_value = 0.05;  // fails the error-rate check: a rollback
    traffic_.counters_error = Status::Unimplemented("no per-server counters");
    clock_.on_sleep = [this](double) {
      int w = traffic_.weights().at("d1");
      if (w > 0) had_traffic_ = true;
      if (had_traffic_ && w == 0 && canary_stops_) metrics_.canary_requests = 0;
    };
  }
  bool had_traffic_ = false;
  bool canary_stops_ = true;
};

TEST_F(RollbackFromMetricsTest, CanaryRequestsAtZeroConfirm) {
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << out->reason;
  bool confirmed = false;
  for (const auto& e : store_->Events(out->rollout_id).value()) {
    confirmed |= e.message.find("confirmed from prometheus: canary served 0 of 1000 requests in "
                                "2 s") != std::string::npos;
  }
  EXPECT_TRUE(confirmed);
}

TEST_F(RollbackFromMetricsTest, CanaryStillCountedIsUnconfirmed) {
  canary_stops_ = false;
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back-unconfirmed");
  EXPECT_NE(out->reason.find("load balancer counters unreadable: no per-server counters; "
                             "prometheus: canary still served 1000 of 2000 requests"),
            std::string::npos)
      << out->reason;
}

TEST_F(RollbackFromMetricsTest, PrometheusDownIsUnconfirmed) {
  clock_.on_sleep = [this](double) {
    int w = traffic_.weights().at("d1");
    if (w > 0) had_traffic_ = true;
    if (had_traffic_ && w == 0) metrics_.error = Status::Unavailable("prometheus: refused");
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back-unconfirmed");
  EXPECT_NE(out->reason.find("prometheus could not confirm: prometheus: refused"),
            std::string::npos)
      << out->reason;
}

TEST_F(ControllerTest, ReloadedWeightsAreReasserted) {
  bool reloaded = false;
  double t0 = clock_.Now();
  clock_.on_sleep = [&](double now) {
    if (!reloaded && now > t0 + 1) {
      reloaded = true;
      traffic_.Reload();
    }
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "promoted");
  bool seen = false;
  std::vector<EventRow> events = store_->Events(out->rollout_id).value();
  for (const auto& e : events) {
    if (e.kind == "reassert") {
      seen = true;
      EXPECT_NE(e.message.find("weights changed under the controller (reload?): load balancer "
                               "had {\"d1\":0,\"s1\":1} (pid 2), re-asserted {\"d1\":1,\"s1\":9}"),
                std::string::npos)
          << e.message;
    }
  }
  EXPECT_TRUE(seen);
  // The interval under way when the weights were lost starts again after the re-assert: the
  // first judged interval of step 0 opens after t0 + 1, not at the step's start.
  int restarts = 0;
  for (const auto& e : events) restarts += e.kind == "interval-restart";
  EXPECT_EQ(restarts, 1);
  auto iv = Intervals(out->rollout_id);
  ASSERT_FALSE(iv.empty());
  EXPECT_EQ(iv[0].step_index, 0);
  EXPECT_GT(iv[0].window_start, t0 + 1);
}

TEST_F(ControllerTest, ALoadBalancerReloadedWithoutEndStillReachesADecision) {
  // Every sleep reloads: each interval would restart for ever; after inconclusive_limit (3)
  // restarts a step's intervals are judged as they are.
  clock_.on_sleep = [&](double) { traffic_.Reload(); };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<EventRow> events = store_->Events(out->rollout_id).value();
  std::map<int, int> restarts_per_step;
  for (const auto& e : events) {
    if (e.kind == "interval-restart") ++restarts_per_step[e.message[5] - '0'];
  }
  ASSERT_FALSE(restarts_per_step.empty()) << out->status << ": " << out->reason;
  for (const auto& [step, n] : restarts_per_step) EXPECT_EQ(n, 3) << "step " << step;
  EXPECT_FALSE(Intervals(out->rollout_id).empty());
}

TEST_F(ControllerTest, StopKeepsStateAndRestartResumesTheSameStep) {
  std::atomic<bool> stop{false};
  double t0 = clock_.Now();
  clock_.on_sleep = [&](double now) {
    if (now > t0 + 4.5) stop = true;  // during step 1
  };
  ControllerOptions o;
  o.stop = &stop;
  auto first = RunSpec(SpecText(), o);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), Code::kAborted);
  auto row = store_->LatestRollout("t").value();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "running");
  EXPECT_EQ(row->step_index, 1);
  int sets_before = traffic_.set_calls;
  clock_.on_sleep = nullptr;
  auto second = RunSpec(SpecText());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->rollout_id, row->id);
  EXPECT_EQ(second->status, "promoted");
  // Resuming step 1 did not touch the weights (they matched); only step 2 set them.
  EXPECT_EQ(traffic_.set_calls, sets_before + 1);
  auto steps = store_->Steps(row->id).value();
  ASSERT_EQ(steps.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(steps[i].step_index, i);
}

TEST_F(ControllerTest, IntentWithoutApplyIsAppliedOnRestart) {
  // A crash after the intent was written and before the load balancer was touched.
  auto spec = ParseSpec(SpecText(), "t.yaml").value();
  int64_t id = store_->CreateRollout("t", "t.yaml", SpecText(), clock_.Now()).value();
  StepRow row;
  row.step_index = 0;
  row.kind = "weight";
  row.canary_percent = 10;
  row.weights = {{"s1", 9}, {"d1", 1}};
  row.intended_at = clock_.Now();
  ASSERT_TRUE(store_->EnterStep(id, -1, "", row).ok());
  EXPECT_EQ(store_->EnterStep(id, -1, "", row).message(),
            "step 0 of rollout " + std::to_string(id) + " is already recorded");
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->rollout_id, id);
  EXPECT_EQ(out->status, "promoted");
  EXPECT_EQ(store_->Steps(id)->size(), 3u);
}

TEST_F(ControllerTest, PauseStepWaitsForPromoteFromAnotherConnection) {
  auto other = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(other.ok());
  double t0 = clock_.Now();
  bool sent = false;
  clock_.on_sleep = [&](double now) {
    if (!sent && now > t0 + 30) {
      sent = true;
      auto r = other->LatestRollout("t").value();
      ASSERT_TRUE(other->AddCommand(r->id, "promote", now).ok());
    }
  };
  auto out = RunSpec(SpecText("", "[{weight: 10}, {pause: {}}, {weight: 100}]"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "promoted");
  EXPECT_TRUE(sent);
  EXPECT_GT(clock_.Now(), t0 + 30) << "the pause held until the promote";
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].kind, "pause");
  EXPECT_EQ(steps[1].weights, steps[0].weights) << "a pause keeps the previous weights";
}

TEST_F(ControllerTest, AbortCommandRollsBack) {
  bool sent = false;
  clock_.on_sleep = [&](double) {
    if (!sent) {
      sent = true;
      auto r = store_->LatestRollout("t").value();
      ASSERT_TRUE(store_->AddCommand(r->id, "abort", clock_.Now()).ok());
    }
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->reason, "aborted by command");
}

TEST_F(ControllerTest, PromoteFullSkipsToTheLastStep) {
  bool sent = false;
  clock_.on_sleep = [&](double) {
    if (!sent) {
      sent = true;
      auto r = store_->LatestRollout("t").value();
      ASSERT_TRUE(store_->AddCommand(r->id, "promote-full", clock_.Now()).ok());
    }
  };
  auto out = RunSpec(SpecText());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status, "promoted");
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].outcome, "promoted-full");
  EXPECT_EQ(steps[1].step_index, 2);
}

// --- Gates: capacity, pre_step, confirm_promotion; and on_rollback ---

class GateTest : public ControllerTest {
 protected:
  Result<RolloutOutcome> RunGated(
      const std::string& extra,
      const std::string& steps = "[{weight: 10}, {weight: 50}, {weight: 100}]") {
    ControllerOptions o;
    o.hooks = &hooks_;
    return RunSpec(SpecText("", steps) + extra, o);
  }
  std::vector<std::string> GateEvents(int64_t id) {
    std::vector<std::string> out;
    for (const EventRow& e : store_->Events(id).value()) {
      if (e.kind == "gate" || e.kind == "hook") out.push_back(e.message);
    }
    return out;
  }
  testing::FakeHookRunner hooks_;
};

constexpr char kCapacity[] =
    "capacity: {query: 'capacity{w=\"{{weight}}\",c=~\"{{canary}}\"}', min: 1}\n";

TEST_F(GateTest, CapacityHoldsEveryWeightIncreaseUntilItHolds) {
  metrics_.capacity_value = 0;  // no room
  double t0 = clock_.Now();
  clock_.on_sleep = [&](double now) {
    if (now > t0 + 20) metrics_.capacity_value = 5;
  };
  auto out = RunGated(kCapacity);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  // Held before the first step (0 -> 10%) until t0 + 20: nothing was applied meanwhile.
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_GT(*steps[0].applied_at, t0 + 20);
  // Asked with each next step's weight, never for a decrease.
  std::set<std::string> weights;
  for (const std::string& q : metrics_.capacity_queries) {
    weights.insert(q.substr(q.find("w=\"") + 3, q.find("\",") - q.find("w=\"") - 3));
    EXPECT_NE(q.find("c=~\"d1\""), std::string::npos) << q;
  }
  EXPECT_EQ(weights, (std::set<std::string>{"10", "50", "100"}));
  EXPECT_EQ(
      GateEvents(out->rollout_id),
      (std::vector<std::string>{"held at the gate: capacity 0 below min 1", "the gate passed"}));
}

TEST_F(GateTest, StoppedAtTheFirstGateKeepsTheRolloutAndARestartGoesOn) {
  metrics_.capacity_value.reset();  // no series: held before the first step
  std::atomic<bool> stop{false};
  double t0 = clock_.Now();
  clock_.on_sleep = [&](double now) {
    if (now > t0 + 10) stop.store(true);
  };
  ControllerOptions o;
  o.hooks = &hooks_;
  o.stop = &stop;
  auto stopped = RunSpec(SpecText() + kCapacity, o);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.status().code(), Code::kAborted);
  EXPECT_EQ(stopped.status().message(), "stopped; rollout 1 stays active before its first step");
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 1}, {"d1", 0}})) << "nothing applied";
  auto row = store_->LatestRollout("t").value();
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->status, "running");
  EXPECT_EQ(row->reason, "held at the gate: capacity query returned no series");
  // Restarted with capacity there: the same rollout goes on, every step recorded once.
  metrics_.capacity_value = 5;
  clock_.on_sleep = nullptr;
  auto out = RunGated(kCapacity);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rollout_id, row->id);
  EXPECT_EQ(out->status, "promoted");
  EXPECT_EQ(store_->Steps(out->rollout_id)->size(), 3u);
}

TEST_F(GateTest, NoCapacitySeriesHoldsAnalysedStepButKeepsMeasuring) {
  metrics_.capacity_value = 5;
  double t0 = clock_.Now();
  int64_t id = 0;
  clock_.on_sleep = [&](double now) {
    // Once step 0 is applied, the capacity series disappears for 10 s.
    auto r = store_->LatestRollout("t").value();
    if (!r) return;
    id = r->id;
    auto steps = store_->Steps(id).value();
    bool in_step0 = steps.size() == 1 && steps[0].applied_at;
    if (in_step0 && now < t0 + 12) metrics_.capacity_value.reset();
    if (now >= t0 + 12) metrics_.capacity_value = 5;
  };
  auto out = RunGated(kCapacity);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  // Step 0 measured passing intervals while held, each one recorded with the gate's reason.
  int held = 0;
  for (const MeasurementRow& m : Intervals(out->rollout_id)) {
    if (m.step_index == 0 && m.reason.find("hold: held at the gate: capacity query returned no "
                                           "series") == 0) {
      ++held;
      EXPECT_EQ(m.verdict, "pass");
    }
  }
  EXPECT_GE(held, 2);
  EXPECT_GT(*store_->Steps(out->rollout_id).value()[1].applied_at, t0 + 12);
}

TEST_F(GateTest, CapacityQueryPrometheusRejectsAtStartMovesNothing) {
  metrics_.capacity_error = Status::InvalidArgument("prometheus: bad_data: parse error");
  auto out = RunGated(kCapacity);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "canary t not started: pre-flight: capacity: prometheus: bad_data: parse error");
  EXPECT_EQ(traffic_.set_calls, 0);
}

TEST_F(GateTest, CapacityQueryPrometheusRejectsLaterRollsBack) {
  metrics_.capacity_value = 5;
  clock_.on_sleep = [&](double) {
    metrics_.capacity_error = Status::InvalidArgument("prometheus: bad_data: parse error");
  };
  auto out = RunGated(kCapacity);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->reason, "spec error in capacity.query: prometheus: bad_data: parse error");
  EXPECT_EQ(store_->Steps(out->rollout_id).value().size(), 1u) << "step 1 was never entered";
}

TEST_F(GateTest, HooksRunBeforeEachWeightChangeAndTheLastStep) {
  auto out = RunGated(
      "hooks:\n"
      "  pre_step: {url: 'http://127.0.0.1:1/pre'}\n"
      "  confirm_promotion: {command: 'true'}\n",
      "[{weight: 10}, {pause: {duration: 1s}}, {weight: 50}, {weight: 100}]");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  // No pre_step for the pause (its weight does not change); confirm_promotion before the last.
  EXPECT_EQ(hooks_.Trace(),
            (std::vector<std::string>{"pre_step:0:10", "pre_step:2:50", "confirm_promotion:3:100",
                                      "pre_step:3:100"}));
  EXPECT_EQ(hooks_.calls[1].from_weight, 10);
  EXPECT_EQ(hooks_.calls[1].rollout, "t");
  EXPECT_EQ(hooks_.calls[1].rollout_id, out->rollout_id);
  EXPECT_EQ(hooks_.specs[2].command, "true");
}

TEST_F(GateTest, FailingConfirmPromotionHoldsUntilItPasses) {
  double t0 = clock_.Now();
  hooks_.answer = [&](const HookEvent& e) {
    if (e.hook == "confirm_promotion" && clock_.Now() < t0 + 60) {
      return Status::FailedPrecondition("hook confirm_promotion: sh exited with status 1: no");
    }
    return Status::Ok();
  };
  auto out = RunGated("hooks: {confirm_promotion: {command: 'test -f ok'}}\n");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  auto steps = store_->Steps(out->rollout_id).value();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_GE(*steps[2].applied_at, t0 + 60);
  EXPECT_EQ(GateEvents(out->rollout_id),
            (std::vector<std::string>{
                "held at the gate: hook confirm_promotion: sh exited with status 1: no",
                "the gate passed"}));
}

TEST_F(GateTest, AbortAtTheGateRollsBackAndOnRollbackIsTold) {
  hooks_.answer = [&](const HookEvent& e) {
    if (e.hook == "pre_step" && e.step == 1) {
      auto r = store_->LatestRollout("t").value();
      EXPECT_TRUE(store_->AddCommand(r->id, "abort", clock_.Now()).ok());
      return Status::FailedPrecondition("hook pre_step: http://127.0.0.1:1/pre answered 503");
    }
    if (e.hook == "on_rollback") return Status::FailedPrecondition("hook on_rollback: down");
    return Status::Ok();
  };
  auto out = RunGated(
      "hooks:\n  pre_step: {url: 'http://127.0.0.1:1/pre'}\n"
      "  on_rollback: {url: 'http://127.0.0.1:1/rb'}\n");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back") << "a failing on_rollback hook changes nothing";
  EXPECT_EQ(out->reason, "aborted by command");
  EXPECT_EQ(hooks_.Trace(),
            (std::vector<std::string>{"pre_step:0:10", "pre_step:1:50", "on_rollback:0:0"}));
  EXPECT_EQ(hooks_.calls[2].from_weight, 10);
  EXPECT_EQ(hooks_.calls[2].reason, "rolled-back: aborted by command");
  auto events = GateEvents(out->rollout_id);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "hook on_rollback: down");
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 100}, {"d1", 0}}));
}

// One controller per rollout: a second controller started while the first drives (here from
// inside the first's pause) is refused, names the holder and writes nothing.
TEST_F(ControllerTest, SecondControllerIsRefusedWhileTheFirstDrives) {
  const std::string text = SpecText("", "[{weight: 10}, {pause: {}}, {weight: 100}]");
  auto spec = ParseSpec(text, "t.yaml");
  ASSERT_TRUE(spec.ok());
  auto other = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(other.ok());
  FakeTraffic second_traffic{&clock_, {{"s1", 1}, {"d1", 0}}};
  std::optional<Result<RolloutOutcome>> second;
  size_t events_before = 0;
  clock_.on_sleep = [&](double now) {
    auto r = other->LatestRollout("t").value();
    if (second || !r || r->step_index != 1) return;
    events_before = other->Events(r->id)->size();
    Controller c(*spec, "t.yaml", text, &*other, &second_traffic, &metrics_, &clock_);
    second = c.Run();
    ASSERT_TRUE(other->AddCommand(r->id, "promote", now).ok());
  };
  auto out = RunSpec(text);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  ASSERT_TRUE(second.has_value());
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(second->status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(second->status().message().rfind("rollout t is driven by another controller: pid " +
                                                 std::to_string(SelfIdentity().pid) + " on host " +
                                                 SelfIdentity().host + ", last beat ",
                                             0),
            0u)
      << second->status().message();
  EXPECT_EQ(second_traffic.set_calls, 0) << "the refused controller moved traffic";
  auto events = store_->Events(out->rollout_id).value();
  for (size_t i = events_before; i < events.size(); ++i) {
    EXPECT_NE(events[i].kind, "resume") << "the refused controller wrote to the rollout";
  }
  EXPECT_EQ(events.front().kind, "lease");
  EXPECT_NE(events.front().message.find("holds the lease (generation 1)"), std::string::npos)
      << events.front().message;
}

// A controller whose lease was taken over (it was suspended past three beats: simulated by a
// take judged at a later time) writes nothing more: not the promote it then finds, not an event,
// not a weight.
TEST_F(ControllerTest, ControllerThatLostItsLeaseWritesNothingMore) {
  auto other = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(other.ok());
  int set_calls_at_takeover = -1;
  size_t events_at_takeover = 0;
  int64_t id = 0;
  clock_.on_sleep = [&](double now) {
    auto r = other->LatestRollout("t").value();
    if (set_calls_at_takeover >= 0 || !r || r->step_index != 1) return;
    id = r->id;
    ProcessIdentity elsewhere{.pid = 4242, .start_ticks = 1, .boot_id = "b", .host = "node-b"};
    auto take = other->TakeLease("t", elsewhere, 1, LeaseNow() + 10);
    ASSERT_TRUE(take.ok()) << take.status().ToString();
    EXPECT_EQ(take->generation, 2);
    set_calls_at_takeover = traffic_.set_calls;
    events_at_takeover = other->Events(id)->size();
    ASSERT_TRUE(other->AddCommand(id, "promote", now).ok());
  };
  auto out = RunSpec(SpecText("", "[{weight: 10}, {pause: {}}, {weight: 100}]"));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kAborted);
  EXPECT_EQ(out.status().message().rfind(
                "lost the lease of rollout t (generation 1) to pid 4242 on host node-b", 0),
            0u)
      << out.status().message();
  EXPECT_EQ(traffic_.set_calls, set_calls_at_takeover);
  EXPECT_EQ(store_->Events(id)->size(), events_at_takeover);
  EXPECT_EQ(store_->PendingCommands(id)->size(), 1u) << "the promote stays for the new holder";
  EXPECT_EQ(store_->GetRollout(id)->step_index, 1);
  EXPECT_EQ(store_->GetLease("t").value()->holder.pid, 4242) << "the loser released nothing";
}

// The heartbeat has a thread of its own: a hook that runs for many beat periods does not let the
// lease go stale.
TEST_F(ControllerTest, LongHookDoesNotStarveTheHeartbeat) {
  testing::FakeHookRunner hooks;
  auto other = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(other.ok());
  std::optional<Status> take_during_hook;
  hooks.answer = [&](const HookEvent& e) {
    if (e.step == 1 && !take_during_hook) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));  // 12 beats
      ProcessIdentity elsewhere{.pid = 4242, .start_ticks = 1, .boot_id = "b", .host = "node-b"};
      take_during_hook = other->TakeLease("t", elsewhere, 1, LeaseNow()).status();
    }
    return Status::Ok();
  };
  ControllerOptions o;
  o.hooks = &hooks;
  o.beat_seconds = 0.05;
  auto out = RunSpec(SpecText() + "hooks: {pre_step: {command: 'true'}}\n", o);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "promoted");
  ASSERT_TRUE(take_during_hook.has_value());
  EXPECT_EQ(take_during_hook->code(), Code::kFailedPrecondition) << take_during_hook->ToString();
}

TEST_F(ControllerTest, StoppedControllerReleasesItsLeaseForTheNextStart) {
  std::atomic<bool> stop{false};
  clock_.on_sleep = [&](double) { stop.store(true); };
  ControllerOptions o;
  o.stop = &stop;
  auto out = RunSpec(SpecText(), o);
  ASSERT_EQ(out.status().code(), Code::kAborted);
  auto lease = store_->GetLease("t").value();
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->holder.pid, 0) << "released";
  clock_.on_sleep = nullptr;
  auto again = RunSpec(SpecText());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, "promoted");
  EXPECT_EQ(store_->GetLease("t").value()->generation, 2);
}

// `canary abort` with no controller running: the rollback done by AbortNow, as a controller
// would, with the queued commands of the gone controller marked handled.
TEST_F(ControllerTest, AbortNowRollsBackARolloutNoControllerDrives) {
  std::atomic<bool> stop{false};
  clock_.on_sleep = [&](double) {
    auto r = store_->LatestRollout("t").value();
    if (r && r->step_index == 1) stop.store(true);
  };
  ControllerOptions o;
  o.stop = &stop;
  ASSERT_EQ(RunSpec(SpecText(), o).status().code(), Code::kAborted);
  clock_.on_sleep = nullptr;
  auto r = store_->LatestRollout("t").value();
  ASSERT_EQ(r->status, "running");
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 1}, {"d1", 1}}));
  ASSERT_TRUE(store_->AddCommand(r->id, "pause", clock_.Now()).ok());

  auto spec = ParseSpec(SpecText(), "t.yaml");
  ASSERT_TRUE(spec.ok());
  Controller c(*spec, "t.yaml", SpecText(), &*store_, &traffic_, &metrics_, &clock_);
  auto out = c.AbortNow("aborted by command; no controller was running (released)");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->reason, "aborted by command; no controller was running (released)");
  EXPECT_EQ(traffic_.weights(), (Weights{{"s1", 100}, {"d1", 0}}));
  EXPECT_EQ(store_->GetRollout(r->id)->status, "rolled-back");
  EXPECT_EQ(store_->GetStep(r->id, 1).value()->outcome, "rolled-back");
  EXPECT_TRUE(store_->PendingCommands(r->id)->empty());
  std::vector<std::string> kinds;
  for (const auto& e : store_->Events(r->id).value()) kinds.push_back(e.kind);
  EXPECT_EQ(kinds.back(), "rollback");
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "lease"), 2);
  EXPECT_EQ(store_->Events(r->id).value().back().message,
            "confirmed from load balancer counters: canary served 0 of 200 responses in 2 s");
  // Nothing left to roll back.
  Controller again(*spec, "t.yaml", SpecText(), &*store_, &traffic_, &metrics_, &clock_);
  EXPECT_EQ(again.AbortNow("x").status().message(), "rollout t is rolled-back, not active");
}

TEST_F(ControllerTest, AbortNowIsRefusedWhileAControllerDrives) {
  auto spec = ParseSpec(SpecText("", "[{weight: 10}, {pause: {}}, {weight: 100}]"), "t.yaml");
  ASSERT_TRUE(spec.ok());
  auto other = RolloutStore::Open(dir_.Join("state.db"));
  ASSERT_TRUE(other.ok());
  std::optional<Status> refused;
  clock_.on_sleep = [&](double now) {
    auto r = other->LatestRollout("t").value();
    if (refused || !r || r->step_index != 1) return;
    Controller c(*spec, "t.yaml", "", &*other, &traffic_, &metrics_, &clock_);
    refused = c.AbortNow("x").status();
    ASSERT_TRUE(other->AddCommand(r->id, "abort", now).ok());
  };
  auto out = RunSpec(SpecText("", "[{weight: 10}, {pause: {}}, {weight: 100}]"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->status, "rolled-back");
  EXPECT_EQ(out->reason, "aborted by command");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code(), Code::kFailedPrecondition);
  EXPECT_NE(refused->message().find("rollout t is driven by another controller"),
            std::string::npos);
}

TEST_F(ControllerTest, EveryEventAndIntervalIsToldAsItHappens) {
  std::vector<EventRow> told;
  ControllerOptions o;
  o.on_event = [&](const EventRow& e) { told.push_back(e); };
  auto out = RunSpec(SpecText(), o);
  ASSERT_TRUE(out.ok());
  std::vector<std::string> lines;
  for (const EventRow& e : told) lines.push_back(e.kind + ": " + e.message);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[2], "step: step 0 applied: canary 10% weights {\"d1\":1,\"s1\":9}");
  EXPECT_EQ(lines[3],
            "interval: interval 1 (step 0, canary 10%): error-rate pass (canary mean 0.001 <= max "
            "0.01); realised-share pass (canary served 10% of 300 responses, intended 10% "
            "(tolerance 10 points)); verdict pass, advance: 1 of 1 intervals passed in this "
            "step");
  EXPECT_EQ(lines.back().rfind("promoted: every step done", 0), 0u) << lines.back();
  // Every stored event was told, in order.
  std::vector<std::string> stored;
  for (const EventRow& e : store_->Events(out->rollout_id).value()) {
    stored.push_back(e.kind + ": " + e.message);
  }
  std::vector<std::string> told_events;
  for (const std::string& l : lines) {
    if (l.rfind("interval: ", 0) != 0) told_events.push_back(l);
  }
  EXPECT_EQ(told_events, stored);
}

TEST(StateTest, UnknownCommandIsRejected) {
  cutover::testing::TempDir dir;
  auto s = RolloutStore::Open(dir.Join("s.db"));
  ASSERT_TRUE(s.ok());
  int64_t id = s->CreateRollout("x", "x.yaml", "", 1).value();
  EXPECT_EQ(s->AddCommand(id, "explode", 2).status().message(),
            "unknown rollout command 'explode'");
}

TEST(AnalysisStateJsonTest, RoundTripAndStepReset) {
  AnalysisState a;
  a = RecordInterval(a, Verdict::kFail);
  a = RecordInterval(a, Verdict::kInconclusive);
  AnalysisState same = AnalysisStateFromJson(AnalysisStateToJson(a, 3), 3);
  EXPECT_EQ(same.failures, 1);
  EXPECT_EQ(same.step_inconclusives, a.step_inconclusives);
  EXPECT_EQ(same.last, a.last);
  AnalysisState next = AnalysisStateFromJson(AnalysisStateToJson(a, 3), 4);
  EXPECT_EQ(next.failures, 1);
  EXPECT_EQ(next.step_intervals, 0);
}

}  // namespace
}  // namespace cutover::canary
