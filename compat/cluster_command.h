// `cutover compat run --suite cluster`: the launcher check, the MPI plugin, the suite, and rank
// 0's output. Kept apart from compat/command.cc, which only parses the flags and calls here.
#ifndef CUTOVER_COMPAT_CLUSTER_COMMAND_H_
#define CUTOVER_COMPAT_CLUSTER_COMMAND_H_

#include <optional>
#include <string>

#include "compat/cluster_suite.h"
#include "core/cli.h"

namespace cutover {

// Runs the cluster suite on this rank. Before MPI is loaded: InvalidArgument (exit 2) for bad
// options, no launcher, srun without PMIx or a world of one; Environment (exit 3) without the
// MPI plugin. With --backend cuda, the CUDA plugin's device side is opened on every rank after
// MPI_Init (compat/cluster_transport.h): a missing plugin or device fails every rank alike (exit
// 3), more ranks on a node than it has GPUs too (exit 2). After that, an error that only this
// rank sees (a wait the watchdog aborted) ends the whole job (MPI_Abort, exit 3) so that no rank
// waits forever in a collective. Rank 0 prints the table (or --json) and
// returns 1 when a collective gave a wrong result; the other ranks print nothing.
Result<int> RunClusterCommand(const ClusterOptions& o, const GlobalOptions& g,
                              const ClusterNodeHooks& hooks);

// `compat compare` when either record is a cluster record: nullopt when neither is (the
// single-node comparison applies); InvalidArgument when only one is; else the comparison printed
// (or --json), JUnit written when `junit` is set, and 1 when either side had a wrong result.
Result<std::optional<int>> MaybeCompareCluster(const std::string& source, const std::string& target,
                                               const std::string& junit, const GlobalOptions& g);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_COMMAND_H_
