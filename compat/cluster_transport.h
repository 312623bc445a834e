// Where a cluster run's measured traffic goes. --backend cpu: MPI's own collectives through the
// MPI plugin (compat/cluster_api.h). --backend cuda: one NCCL communicator over every rank,
// through the CUDA plugin's device side (compat/cluster_device_api.h), its unique id carried
// from rank 0 by MPI and one device per rank (the rank's local rank on its node). MPI stays the
// control channel in both: options, timings and results are agreed and gathered through it.
//
//   CUTOVER_ASSIGN_OR_RETURN(auto t, OpenDeviceTransport(comm, launcher, 600, LoaderOptions{}));
//   CUTOVER_RETURN_IF_ERROR(t->Call(CUTOVER_CLUSTER_ALL_REDUCE, send, recv, count, 0));
//
// Thread-safety: one thread uses a transport (MPI_THREAD_SINGLE).
#ifndef CUTOVER_COMPAT_CLUSTER_TRANSPORT_H_
#define CUTOVER_COMPAT_CLUSTER_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/backend_loader.h"
#include "compat/cluster_launcher.h"
#include "compat/cluster_loader.h"
#include "core/status.h"

namespace cutover {

class ClusterTransport {
 public:
  virtual ~ClusterTransport() = default;
  // False for a row this transport does not run (NCCL has no in-place alltoall).
  virtual bool Offers(int op, bool in_place) const = 0;
  // One call of `op` (CUTOVER_CLUSTER_ALL_REDUCE ... CUTOVER_CLUSTER_SENDRECV) over host
  // buffers laid out as compat/cluster_api.h says (send null: in place), the result in recv.
  virtual Status Call(int op, const float* send, float* recv, uint64_t count, int root) = 0;
  // `warmup` untimed, then `reps` timed calls of the op of the last Call, with its buffers;
  // each call's seconds on this rank. Every rank calls it together.
  virtual Result<std::vector<double>> Time(int op, const float* send, float* recv, uint64_t count,
                                           int root, int warmup, int reps) = 0;
  // Point to point for the pairwise matrix (buf: host data; the device side ignores it).
  virtual Status Send(const void* buf, uint64_t bytes, int peer) = 0;
  virtual Status Recv(void* buf, uint64_t bytes, int peer) = 0;
  // The record's "transport" object: {"kind": "mpi"} or NCCL's version, variables and devices.
  virtual nlohmann::json Describe() const = 0;
  // An algorithm to measure all_reduce again with, on a second communicator (NCCL on two nodes
  // without NCCL_ALGO: "Ring", since the tree can over-report there); "" none.
  virtual std::string SecondPassAlgo() const { return ""; }
  // Replaces the communicator by one set up with `algo` (every rank together).
  virtual Status Reopen(const std::string& algo) {
    return Status::Unimplemented("this transport has one communicator (" + algo + ")");
  }
};

// MPI's own collectives on `comm`, which must outlive the transport.
std::unique_ptr<ClusterTransport> MakeMpiTransport(const ClusterComm& comm);

// The device of `rank`: its local rank from the launcher when known (>= 0), else its index
// among the ranks of its node in `node_of` (each rank's node name).
int LocalRankOf(int rank, const std::vector<std::string>& node_of, int launcher_local_rank);

// The NCCL side: loads the CUDA plugin's device table (found as `options` says), picks this
// rank's device (LocalRankOf; InvalidArgument on every rank when any node runs more ranks than
// it has devices), carries rank 0's unique id to every rank over `comm` and joins the
// communicator under the watchdog of `timeout_s`. Every rank gets the same error: a plugin or
// device missing on one rank fails them all (Environment, naming the rank). `comm` must outlive
// the transport.
Result<std::unique_ptr<ClusterTransport>> OpenDeviceTransport(const ClusterComm& comm,
                                                              const Launcher& launcher,
                                                              double timeout_s,
                                                              const LoaderOptions& options);

// Each rank's Status made one: Ok when every rank's is, else on every rank the first failing
// rank's code and message ("rank 2: ..."). A failure to agree is returned as it is.
Status AgreeOnStatus(const ClusterComm& comm, const Status& mine);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_TRANSPORT_H_
