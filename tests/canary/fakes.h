// Fakes of the canary controller's seams (clock, traffic, metrics) for unit tests: a clock that
// jumps on Sleep, a load balancer whose counters grow with fake time in proportion to the
// weights, and a metrics source answering from settable per-side values.
//
// Thread-safety: none; each test uses its fakes from one thread.
#ifndef CUTOVER_TESTS_CANARY_FAKES_H_
#define CUTOVER_TESTS_CANARY_FAKES_H_

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "canary/controller.h"
#include "canary/prometheus_client.h"
#include "canary/traffic.h"

namespace cutover::canary::testing {

class FakeClock : public Clock {
 public:
  double Now() override { return now_; }
  void Sleep(double seconds) override {
    now_ += seconds;
    if (on_sleep) on_sleep(now_);
  }
  double now_ = 1'700'000'000.0;
  std::function<void(double)> on_sleep;
};

class FakeTraffic : public Traffic {
 public:
  FakeTraffic(Clock* clock, Weights config) : clock_(clock), weights_(config), config_(config) {
    last_ = clock->Now();
  }
  Status SetWeights(const Weights& w) override {
    Accrue();
    ++set_calls;
    if (!set_error.ok()) return set_error;
    for (const auto& [k, v] : w) weights_[k] = v;
    return Status::Ok();
  }
  Result<Weights> ReadWeights(const std::vector<std::string>& servers) override {
    Weights out;
    for (const auto& s : servers) out[s] = weights_[s];
    return out;
  }
  Result<std::map<std::string, ServerCounters>> ReadCounters() override {
    Accrue();
    if (!counters_error.ok()) return counters_error;
    std::map<std::string, ServerCounters> out;
    for (const auto& [k, v] : served_) out[k].responses = static_cast<int64_t>(v);
    return out;
  }
  Result<std::string> Generation() override { return "pid " + std::to_string(generation); }
  // A reload: weights back to the config.
  void Reload() {
    Accrue();
    weights_ = config_;
    ++generation;
  }
  void Accrue() {
    double now = clock_->Now();
    double dt = now - last_;
    last_ = now;
    double total = 0;
    for (const auto& [k, w] : weights_) total += w;
    for (const auto& [k, w] : weights_) {
      double share = total > 0 ? w / total : 0;
      if (leak_canary.count(k) != 0) share = std::max(share, 0.2);
      served_[k] += rps * dt * share;
    }
  }
  const Weights& weights() const { return weights_; }

  double rps = 100;
  std::set<std::string> leak_canary;  // servers that keep serving 20% whatever their weight
  Status set_error;
  Status counters_error;  // set: ReadCounters fails (a provider without per-server counters)
  int set_calls = 0;
  int generation = 1;

 private:
  Clock* clock_;
  Weights weights_;
  Weights config_;
  std::map<std::string, double> served_;
  double last_ = 0;
};

// Answers queries by what they contain: `canary_marker` in the rendered query means the canary
// side; "requests" marks the requests query.
class FakeMetrics : public Metrics {
 public:
  Result<PromResult> Query(const std::string& expr, double) override {
    ++queries;
    return Answer(expr, 1);
  }
  Result<PromResult> QueryRange(const std::string& expr, double start, double end,
                                double step) override {
    ++queries;
    return Answer(expr, static_cast<int>((end - start) / step) + 1);
  }
  Result<PromResult> Answer(const std::string& expr, int n) {
    if (expr.find("capacity") != std::string::npos) {
      capacity_queries.push_back(expr);
      if (!capacity_error.ok()) return capacity_error;
      PromResult r;
      if (capacity_value) r.series.push_back(PromSeries{{}, {{0.0, *capacity_value}}});
      return r;
    }
    if (!error.ok()) return error;
    bool canary = expr.find(canary_marker) != std::string::npos;
    bool requests = expr.find("requests") != std::string::npos;
    double v = requests ? (canary ? canary_requests : baseline_requests)
                        : (canary ? canary_value : baseline_value);
    PromResult r;
    if (requests && v < 0) return r;  // no series
    PromSeries s;
    for (int i = 0; i < n; ++i) s.samples.push_back({static_cast<double>(i), v});
    r.series.push_back(s);
    return r;
  }
  std::string canary_marker = "d1";
  double canary_requests = 1000;
  double baseline_requests = 1000;
  double canary_value = 0.001;
  double baseline_value = 0.001;
  Status error;
  int queries = 0;
  // Queries naming "capacity": answered with this value (no series when unset) or error.
  std::optional<double> capacity_value;
  Status capacity_error;
  std::vector<std::string> capacity_queries;
};

// Records every hook call; `answer` (when set) decides each one, else it passes.
class FakeHookRunner : public HookRunner {
 public:
  Status Run(const HookSpec& hook, const HookEvent& event) override {
    calls.push_back(event);
    specs.push_back(hook);
    return answer ? answer(event) : Status::Ok();
  }
  // "pre_step:1:50" per call: hook, step, weight.
  std::vector<std::string> Trace() const {
    std::vector<std::string> out;
    for (const HookEvent& e : calls) {
      out.push_back(e.hook + ":" + std::to_string(e.step) + ":" + std::to_string(e.weight));
    }
    return out;
  }
  std::function<Status(const HookEvent&)> answer;
  std::vector<HookEvent> calls;
  std::vector<HookSpec> specs;
};

}  // namespace cutover::canary::testing

#endif  // CUTOVER_TESTS_CANARY_FAKES_H_
