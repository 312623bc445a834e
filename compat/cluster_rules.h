// The pure arithmetic of the cluster suite, apart from MPI so that it is tested alone: the
// message sizes of a sweep, nccl-tests' bus bandwidth factors, the expected values of every
// collective's result, the round-robin schedule of the pairwise matrix, and the outlier rule
// that names slow nodes and links.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_CLUSTER_RULES_H_
#define CUTOVER_COMPAT_CLUSTER_RULES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace cutover {

// The collectives of the suite, in record order.
inline const std::vector<std::string>& ClusterCollectives() {
  static const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter",
                                                "alltoall",   "broadcast",  "sendrecv"};
  return kOps;
}

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather,
// reduce_scatter, alltoall (n-1)/n; broadcast and sendrecv 1. 0 for an unknown op.
double BusBandwidthFactor(const std::string& op, int ranks);

// min, min*factor, ... up to and including max when reached exactly, as nccl-tests -b -e -f.
// InvalidArgument when min is 0, max < min or factor < 2.
Result<std::vector<uint64_t>> SweepSizes(uint64_t min_bytes, uint64_t max_bytes, int factor);

// The float32 element count per rank nccl-tests uses for a message of `bytes` (the size is the
// all_reduce/broadcast/sendrecv buffer, all_gather's output, reduce_scatter's input and
// alltoall's buffer): 0 when the size is too small to give every rank one element.
uint64_t ElementCount(const std::string& op, uint64_t bytes, int ranks);

// The integer-valued input of rank r at index i: (r + 1) + (i mod 13). Sums over up to 2^20
// ranks stay exact in float32.
inline float InputValue(int rank, uint64_t i) {
  return static_cast<float>((rank + 1) + static_cast<int>(i % 13));
}

// The exact expected output element `i` of `op` on rank `rank` of `ranks` with `count` elements
// per rank (broadcast from root 0, sendrecv from rank - 1 in a ring).
float ExpectedValue(const std::string& op, int rank, int ranks, uint64_t count, uint64_t i);

// A round-robin (circle) schedule: ranks - 1 rounds (ranks when odd) of disjoint pairs that
// together hold every unordered pair exactly once; with an odd count one rank idles per round.
std::vector<std::vector<std::pair<int, int>>> RoundRobinSchedule(int ranks);

// The slow-node rule. A node is slow when the median bandwidth of its inter-node links is below
// the median of all nodes' medians divided by the divisor; a link between two nodes that are not
// slow is slow when below the median of such links divided by the divisor. The divisor is
// kSlowFactor, or more where the healthy values themselves spread widely: the factor that
// kSlowMads robust standard deviations (1.4826 x the median deviation) of the logarithms of the
// values at or above the median make (the slow values below it must not widen the divisor that
// is to find them). On 2 shared cores healthy links differ up to 20-fold between runs and
// directions; on a real fabric they agree within a few percent, and the divisor stays 3.
inline constexpr double kSlowFactor = 3.0;
inline constexpr double kSlowMads = 4.0;
// Links are judged only among this many or more links between non-slow nodes (4 healthy nodes):
// fewer cannot tell one slow link from the spread.
inline constexpr size_t kMinLinksJudged = 6;

// The divisor for `values` around their median `reference` (see kSlowMads).
double SlowDivisor(const std::vector<double>& values, double reference);

struct SlowVerdict {
  bool applied = false;
  std::string reason;                         // why not applied, or ""
  std::map<std::string, double> node_median;  // per node: median of its links
  double reference = 0;                       // median of node medians
  double node_divisor = 0, link_divisor = 0;  // 0 where not judged
  std::vector<std::string> slow_nodes;
  std::vector<std::pair<std::string, std::string>> slow_links;  // between non-slow nodes
};

// Applies the rule to one matrix: `bw[a][b]` is the bandwidth measured from rank a to rank b
// (0 on the diagonal), `node_of[r]` the node name of rank r. A node-pair link's bandwidth is the
// median over every directed rank pair between the two nodes. Needs 3 or more nodes (with two,
// a slow link cannot be pinned on either end).
SlowVerdict JudgeMatrix(const std::vector<std::vector<double>>& bw,
                        const std::vector<std::string>& node_of);

// Several passes over the same pairs: each matrix judged alone, and the matrix of per-pair
// medians over the passes judged too. A node is named when the median matrix names it and so do
// more than half the passes; a link (one value per pass, where a node has many) when the median
// matrix and every pass name it. One noisy pass cannot name either.
struct PassesVerdict {
  std::vector<std::vector<double>> median_bw;
  SlowVerdict median;  // of median_bw
  std::vector<SlowVerdict> passes;
  std::vector<std::string> slow_nodes;
  std::vector<std::pair<std::string, std::string>> slow_links;
};
// REQUIRES: at least one pass, every matrix node_of.size() square.
PassesVerdict JudgePasses(const std::vector<std::vector<std::vector<double>>>& passes,
                          const std::vector<std::string>& node_of);

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_RULES_H_
