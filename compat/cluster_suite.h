// The cluster suite (`compat run --suite cluster`): collectives over every rank of an MPI world,
// swept over message sizes, and the pairwise sendrecv matrix that names slow nodes and links.
// Rank 0 writes the record (cutover.compat-cluster/1, docs/schemas/compat-cluster-1.json) and
// rewrites it after every message size, `complete: false` until the run ends, so a job that
// loses a rank keeps what was measured.
//
// Thread-safety: one call per process; every rank calls RunClusterSuite with the same options.
#ifndef CUTOVER_COMPAT_CLUSTER_SUITE_H_
#define CUTOVER_COMPAT_CLUSTER_SUITE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/cluster_launcher.h"
#include "compat/cluster_loader.h"
#include "compat/cluster_transport.h"
#include "core/status.h"

namespace cutover {

inline constexpr char kClusterRecordFamily[] = "cutover.compat-cluster";
// Bump on any incompatible change to the record (and add docs/schemas/compat-cluster-N.json).
inline constexpr int kClusterRecordVersion = 1;

struct ClusterOptions {
  std::string backend = "cpu";
  std::vector<std::string> ops;  // empty: every collective
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64ull << 20;
  int step_factor = 2;
  int warmup = 2;
  int reps = 5;
  // The pairwise matrix: a large message for bandwidth, a small one for latency, `pair_reps`
  // samples per direction in each of `passes` passes over the whole schedule. 0 passes: none.
  uint64_t pair_bytes = 4ull << 20;
  uint64_t pair_small_bytes = 8;
  int pair_reps = 3;
  int passes = 3;
  std::string record_path;
  std::string fabric;  // --fabric, recorded; "" none
  // cuda: the watchdog's bound on any one wait of the NCCL communicator, in seconds.
  double timeout_s = 600;
};

// What the apps layer hands in for the nodes (compat does not include probe):
//   fingerprint  this node's fingerprint document, called on one rank per node (empty: none);
//   judge        on rank 0, the record's "nodes" array (name, ranks, fingerprint) in, the fleet
//                verdict of their fingerprints out: probe fleet's "cutover.fleet/1" document,
//                stored as the record's "fleet" (empty: not judged).
struct ClusterNodeHooks {
  std::function<Result<nlohmann::json>()> fingerprint;
  std::function<nlohmann::json(const nlohmann::json& nodes)> judge;
};

// What the run hands back on rank 0 (other ranks get an empty record).
struct ClusterRunResult {
  nlohmann::json record;
  std::string table;        // the human table rank 0 prints
  bool all_correct = true;  // every rank: every collective gave the exact answer
};

// Checks the options on this rank (InvalidArgument), then that every rank holds the same
// (InvalidArgument on every rank, naming the first rank that differs).
Status CheckClusterOptions(const ClusterOptions& o);

// Runs the suite on an initialized world, its measured traffic over `transport` (MPI's or the
// device's, compat/cluster_transport.h). `progress` is called on rank 0 after each row.
Result<ClusterRunResult> RunClusterSuite(const ClusterComm& comm, ClusterTransport& transport,
                                         const ClusterOptions& o, const Launcher& launcher,
                                         const ClusterNodeHooks& hooks,
                                         const std::function<void(const std::string&)>& progress);

// One line on the record's "fleet" verdict (ClusterNodeHooks::judge), for the run's table and
// compare's: "nodes: 4 with one stack", or each outlier group with the fields it differs in
// ("nodes differ: node4 (driver 550.54.15, majority 535.129.03)"), and nodes that gave no
// readable fingerprint. "nodes: not judged" without a verdict.
std::string ClusterFleetLine(const nlohmann::json& record);

// The options as one canonical line (what ranks compare to agree).
std::string ClusterOptionsLine(const ClusterOptions& o);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_SUITE_H_
