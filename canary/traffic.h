// The traffic seam of the canary controller: how a rollout moves requests between the baseline
// and the canary servers of one load balancer, and reads back what the load balancer really does.
//
// A canary percentage maps to absolute per-server weights (PlanWeights, rounding documented
// there); a provider applies them, reads them back, and reads the load balancer's own per-server
// counters (used to confirm a rollback and to measure the realised canary share).
//
// Thread-safety: PlanWeights and RealisedShare are pure. A Traffic object is used by one thread
// at a time.
#ifndef CUTOVER_CANARY_TRAFFIC_H_
#define CUTOVER_CANARY_TRAFFIC_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace cutover::canary {

// The largest absolute weight of the HAProxy runtime API (`set weight b/s N`, 0..256).
inline constexpr int kMaxServerWeight = 256;
// The per-server weight of the side that takes all traffic at 0% and 100%.
inline constexpr int kFullServerWeight = 100;

// Absolute weight per server name.
using Weights = std::map<std::string, int>;

// The weights for a canary percentage, and the canary share of requests they give.
struct WeightPlan {
  int canary_percent = 0;
  Weights weights;
  double share = 0;  // sum(canary weights) / sum(all weights), in percent
};

// Maps `canary_percent` (0..100) to weights, the same weight on every server of a side:
//   0   -> baseline kFullServerWeight each, canary 0 (exact)
//   100 -> canary kFullServerWeight each, baseline 0 (exact)
//   else: the pair (wb, wc) in 1..256 x 1..256 whose share nc*wc / (nc*wc + nb*wb) is nearest
//         the percentage; ties go to the smallest wc, then the smallest wb (lowest terms).
// InvalidArgument for a percentage outside 0..100 or an empty side.
Result<WeightPlan> PlanWeights(int canary_percent, const std::vector<std::string>& baseline,
                               const std::vector<std::string>& canary);

// The load balancer's own counters for one server, since it (or its worker) started.
struct ServerCounters {
  int64_t responses = 0;   // HTTP responses of every status (hrsp_1xx..hrsp_other)
  int64_t errors_5xx = 0;  // hrsp_5xx
  int64_t sessions = 0;    // stot
  std::string status;      // "UP", "DOWN", "MAINT", "no check", ...
};

// The share of responses served by `canary` between two counter snapshots, in percent; nullopt
// when no response was served in between. A counter that went backwards (a reload reset it) counts
// from zero.
std::optional<double> RealisedShare(const std::map<std::string, ServerCounters>& before,
                                    const std::map<std::string, ServerCounters>& after,
                                    const std::vector<std::string>& canary,
                                    int64_t* total_responses = nullptr);

// A traffic provider (HAProxy runtime API, a fake in tests).
class Traffic {
 public:
  virtual ~Traffic() = default;
  // Applies absolute weights to every server named in `weights`. Raises before it lowers, so
  // the backend never has all servers at weight 0 in between.
  virtual Status SetWeights(const Weights& weights) = 0;
  // The weights the load balancer uses now, for `servers`.
  virtual Result<Weights> ReadWeights(const std::vector<std::string>& servers) = 0;
  // The counters of every server of the backend.
  virtual Result<std::map<std::string, ServerCounters>> ReadCounters() = 0;
  // An identifier of the running load balancer process that changes when it restarts or
  // reloads (HAProxy: the worker's Pid), for the event log. Empty when unknown.
  virtual Result<std::string> Generation() = 0;
  // Whether the provider could apply weights now, checked without applying any (the pre-flight:
  // nginx runs its test command). Ok by default.
  virtual Status CheckReady() { return Status::Ok(); }
};

struct TrafficSpec;

// The provider a spec's `traffic:` names (HAProxy, nginx or command), configured from it.
std::unique_ptr<Traffic> MakeTraffic(const TrafficSpec& spec);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_TRAFFIC_H_
