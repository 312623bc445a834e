#include "canary/command_traffic.h"

#include <algorithm>
#include <cmath>

#include "canary/spec.h"
#include "canary/state.h"
#include "core/subprocess.h"

namespace cutover::canary {
namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Result<int> CanaryPercentOf(const Weights& weights, const std::vector<std::string>& baseline,
                            const std::vector<std::string>& canary) {
  int64_t on_canary = 0;
  int64_t total = 0;
  for (const auto& [server, weight] : weights) {
    const bool is_canary = Contains(canary, server);
    if (!is_canary && !Contains(baseline, server)) {
      return Status::InvalidArgument("command traffic: " + server +
                                     " is in neither traffic.baseline nor traffic.canary");
    }
    if (weight < 0) {
      return Status::InvalidArgument("command traffic: negative weight " + std::to_string(weight) +
                                     " for " + server);
    }
    total += weight;
    if (is_canary) on_canary += weight;
  }
  if (total == 0) return Status::InvalidArgument("command traffic: every weight is 0");
  // The share is near the percent but not always within rounding of it (1 canary against 4
  // baseline servers cannot go beyond 256:1, 98.5%): the percent is the one whose plan these
  // weights are, searched outwards from the rounded share.
  const int near = static_cast<int>(
      std::lround(100.0 * static_cast<double>(on_canary) / static_cast<double>(total)));
  for (int d = 0; d <= 3; ++d) {
    for (int p : {near - d, near + d}) {
      if (p < 0 || p > 100) continue;
      Result<WeightPlan> plan = PlanWeights(p, baseline, canary);
      if (!plan.ok()) return plan.status();
      bool same = true;
      for (const auto& [server, weight] : weights)
        same = same && plan->weights.at(server) == weight;
      if (same) return p;
    }
  }
  return Status::InvalidArgument("command traffic: weights " + WeightsToJson(weights) +
                                 " are not those of any canary percent");
}

Result<int> ParsePercentOutput(const std::string& output) {
  std::string last;
  size_t pos = 0;
  while (pos < output.size()) {
    size_t end = output.find('\n', pos);
    if (end == std::string::npos) end = output.size();
    std::string line = output.substr(pos, end - pos);
    pos = end + 1;
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    last = line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
  }
  std::string digits = last;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  const bool numeric =
      !digits.empty() && digits.size() <= 3 &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!numeric || std::stoi(digits) > 100) {
    if (last.size() > 80) last = last.substr(0, 80) + "...";
    return Status::InvalidArgument("get_weight printed '" + last +
                                   "', expected the canary percent (an integer 0..100)");
  }
  return std::stoi(digits);
}

CommandTraffic::CommandTraffic(CommandTrafficOptions options) : options_(std::move(options)) {}

Result<std::string> CommandTraffic::Run(const std::string& what, const std::string& tmpl,
                                        const std::string& weight) {
  std::map<std::string, std::string> values = {{"canary", Join(options_.canary)},
                                               {"baseline", Join(options_.baseline)}};
  if (!weight.empty()) values["weight"] = weight;
  Result<std::string> command = RenderTemplate(tmpl, values);
  if (!command.ok()) {
    return Status::InvalidArgument("command traffic: " + what + ": " + command.status().message());
  }
  Result<std::string> out =
      RunProgram({"sh", "-c", *command}, static_cast<int>(options_.timeout.count()));
  if (!out.ok()) {
    // The command itself is not quoted: it may carry a token for the load balancer's API.
    return Status::FailedPrecondition("command traffic: " + what +
                                      " failed: " + out.status().message());
  }
  return *out;
}

Status CommandTraffic::SetWeights(const Weights& weights) {
  CUTOVER_ASSIGN_OR_RETURN(int percent,
                           CanaryPercentOf(weights, options_.baseline, options_.canary));
  return Run("set_weight", options_.set_weight, std::to_string(percent)).status();
}

Result<Weights> CommandTraffic::ReadWeights(const std::vector<std::string>& servers) {
  for (const std::string& s : servers) {
    if (!Contains(options_.baseline, s) && !Contains(options_.canary, s)) {
      return Status::NotFound("command traffic: " + s +
                              " is in neither traffic.baseline nor traffic.canary");
    }
  }
  CUTOVER_ASSIGN_OR_RETURN(std::string out, Run("get_weight", options_.get_weight, ""));
  Result<int> percent = ParsePercentOutput(out);
  if (!percent.ok())
    return Status::FailedPrecondition("command traffic: " + percent.status().message());
  CUTOVER_ASSIGN_OR_RETURN(WeightPlan plan,
                           PlanWeights(*percent, options_.baseline, options_.canary));
  Weights w;
  for (const std::string& s : servers) w[s] = plan.weights.at(s);
  return w;
}

Result<std::map<std::string, ServerCounters>> CommandTraffic::ReadCounters() {
  return Status::Unimplemented("command traffic: the scripts report no per-server counters");
}

Result<std::string> CommandTraffic::Generation() { return std::string(); }

}  // namespace cutover::canary
