// The command traffic provider: the operator's own scripts move the traffic, for load balancers
// that neither HAProxy's runtime API nor an nginx upstream file reach (a cloud load balancer's
// CLI, a service mesh's weighted route, an in-house API).
//
// The scripts speak canary percents, not per-server weights: `set_weight` runs with {{weight}}
// set to the canary percent (0..100) and must exit 0 once the load balancer has taken it;
// `get_weight` prints the canary percent the load balancer uses now (its last non-empty line,
// an integer 0..100). {{canary}} and {{baseline}} expand to each side's names joined by commas.
// Commands run with sh -c, stdin from /dev/null, each within the timeout.
//
// Per-server weights map to and from percents with PlanWeights, so the controller sees the same
// weights as with the other providers: SetWeights takes the canary percent of the weights it is
// given, ReadWeights plans the weights of the percent get_weight prints. The scripts report no
// per-server counters: ReadCounters is Unimplemented and a rollback is confirmed from
// Prometheus, as with nginx.
//
// Thread-safety: CanaryPercentOf is pure; a CommandTraffic is used by one thread at a time.
#ifndef CUTOVER_CANARY_COMMAND_TRAFFIC_H_
#define CUTOVER_CANARY_COMMAND_TRAFFIC_H_

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "canary/traffic.h"
#include "core/status.h"

namespace cutover::canary {

// The canary percent p (0..100) whose PlanWeights(p) gives `weights` (every server named in
// `weights` has its planned weight), so PlanWeights(p) maps back to p for every p.
// InvalidArgument for a server on neither side, a negative weight, all weights 0, or weights
// that no percent plans.
Result<int> CanaryPercentOf(const Weights& weights, const std::vector<std::string>& baseline,
                            const std::vector<std::string>& canary);

// The canary percent in a get_weight command's output: its last non-empty line, trimmed, an
// integer 0..100 with an optional trailing '%'. InvalidArgument quoting the line otherwise.
Result<int> ParsePercentOutput(const std::string& output);

struct CommandTrafficOptions {
  std::string set_weight;  // template with {{weight}}, {{canary}}, {{baseline}}
  std::string get_weight;  // template with {{canary}}, {{baseline}}
  std::vector<std::string> baseline;
  std::vector<std::string> canary;
  std::chrono::milliseconds timeout{10000};  // per command
};

class CommandTraffic : public Traffic {
 public:
  explicit CommandTraffic(CommandTrafficOptions options);

  // Runs set_weight with the canary percent of `weights` (every server of both sides must be
  // named, with the weights of one PlanWeights result). FailedPrecondition quoting the command's
  // last output line when it fails or times out.
  Status SetWeights(const Weights& weights) override;
  // Runs get_weight and plans the weights of the percent it prints; NotFound naming a server on
  // neither side.
  Result<Weights> ReadWeights(const std::vector<std::string>& servers) override;
  // Unimplemented: the scripts report no per-server counters.
  Result<std::map<std::string, ServerCounters>> ReadCounters() override;
  // Empty: the scripts report no load balancer generation.
  Result<std::string> Generation() override;

 private:
  // Renders `tmpl` and runs it; its output, or FailedPrecondition naming `what`.
  Result<std::string> Run(const std::string& what, const std::string& tmpl,
                          const std::string& weight);

  CommandTrafficOptions options_;
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_COMMAND_TRAFFIC_H_
