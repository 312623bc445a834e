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

// The slow-node rule's factor: a node is slow when the median bandwidth of its inter-node links
// is below the median of all nodes' medians divided by this; a link between two nodes that are
// not slow is slow when below the median of such links divided by this.
inline constexpr double kSlowFactor = 3.0;

struct SlowVerdict {
  bool applied = false;
  std::string reason;                                  // why not applied, or ""
  std::map<std::string, double> node_median;           // per node: median of its links
  double reference = 0;                                // median of node medians
  std::vector<std::string> slow_nodes;
  std::vector<std::pair<std::string, std::string>> slow_links;  // between non-slow nodes
};

// Applies the rule to one matrix: `bw[a][b]` is the bandwidth measured from rank a to rank b
// (0 on the diagonal), `node_of[r]` the node name of rank r. A node-pair link's bandwidth is the
// median over every directed rank pair between the two nodes. Needs 3 or more nodes (with two,
// a slow link cannot be pinned on either end).
SlowVerdict JudgeMatrix(const std::vector<std::vector<double>>& bw,
                        const std::vector<std::string>& node_of);

// The median of `v` (0 when empty).
double Median(std::vector<double> v);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_RULES_H_
