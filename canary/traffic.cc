#include "canary/traffic.h"

#include <cmath>
#include <set>

#include "canary/command_traffic.h"
#include "canary/haproxy_traffic.h"
#include "canary/nginx_traffic.h"
#include "canary/spec.h"

namespace cutover::canary {

Result<WeightPlan> PlanWeights(int canary_percent, const std::vector<std::string>& baseline,
                               const std::vector<std::string>& canary) {
  if (canary_percent < 0 || canary_percent > 100) {
    return Status::InvalidArgument("canary percent must be 0..100, got " +
                                   std::to_string(canary_percent));
  }
  if (baseline.empty() || canary.empty()) {
    return Status::InvalidArgument("both baseline and canary need at least one server");
  }
  int wb = 0;
  int wc = 0;
  if (canary_percent == 0) {
    wb = kFullServerWeight;
  } else if (canary_percent == 100) {
    wc = kFullServerWeight;
  } else {
    const double nb = static_cast<double>(baseline.size());
    const double nc = static_cast<double>(canary.size());
    const double target = canary_percent / 100.0;
    double best = 2;
    for (int c = 1; c <= kMaxServerWeight; ++c) {
      for (int b = 1; b <= kMaxServerWeight; ++b) {
        double err = std::fabs(nc * c / (nc * c + nb * b) - target);
        if (err < best - 1e-12) {
          best = err;
          wc = c;
          wb = b;
        }
      }
    }
  }
  WeightPlan plan;
  plan.canary_percent = canary_percent;
  for (const std::string& s : baseline) plan.weights[s] = wb;
  for (const std::string& s : canary) plan.weights[s] = wc;
  double total =
      static_cast<double>(baseline.size()) * wb + static_cast<double>(canary.size()) * wc;
  plan.share = total > 0 ? 100.0 * canary.size() * wc / total : 0;
  return plan;
}

std::optional<double> RealisedShare(const std::map<std::string, ServerCounters>& before,
                                    const std::map<std::string, ServerCounters>& after,
                                    const std::vector<std::string>& canary,
                                    int64_t* total_responses) {
  std::set<std::string> canary_set(canary.begin(), canary.end());
  int64_t total = 0;
  int64_t on_canary = 0;
  for (const auto& [name, now] : after) {
    int64_t prev = 0;
    auto it = before.find(name);
    if (it != before.end()) prev = it->second.responses;
    int64_t delta = now.responses >= prev ? now.responses - prev : now.responses;
    total += delta;
    if (canary_set.count(name) != 0) on_canary += delta;
  }
  if (total_responses != nullptr) *total_responses = total;
  if (total <= 0) return std::nullopt;
  return 100.0 * static_cast<double>(on_canary) / static_cast<double>(total);
}

std::unique_ptr<Traffic> MakeTraffic(const TrafficSpec& t) {
  switch (t.provider) {
    case TrafficProvider::kHaproxy:
      return std::make_unique<HaproxyTraffic>(HaproxyTrafficOptions{
          .socket = t.socket, .address = t.address, .backend = t.backend, .timeout = t.timeout});
    case TrafficProvider::kNginx:
      return std::make_unique<NginxTraffic>(NginxTrafficOptions{.upstream_file = t.upstream_file,
                                                                .upstream = t.upstream,
                                                                .test_command = t.test_command,
                                                                .reload_command = t.reload_command,
                                                                .timeout = t.timeout});
    case TrafficProvider::kCommand:
      return std::make_unique<CommandTraffic>(CommandTrafficOptions{.set_weight = t.set_weight,
                                                                    .get_weight = t.get_weight,
                                                                    .baseline = t.baseline,
                                                                    .canary = t.canary,
                                                                    .timeout = t.timeout});
  }
  return nullptr;
}

}  // namespace cutover::canary
