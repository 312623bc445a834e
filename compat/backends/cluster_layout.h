// Where a collective's data lies in the device buffers of a cluster rank, for the device side
// of compat/cluster_device_api.h: what to upload from the host buffers, what the op reads and
// writes, and what goes back. nccl-tests' meaning of `count` (compat/cluster_api.h); in place,
// all_gather's input is block `rank` of the receive buffer and reduce_scatter's result block
// `rank` of it (NCCL's in-place rule), while the host keeps MPI's (the result at its start).
// Shared by the CUDA plugin and the tests' fake device plugin; no CUDA in here.
//
// Thread-safety: a pure function.
#ifndef CUTOVER_COMPAT_BACKENDS_CLUSTER_LAYOUT_H_
#define CUTOVER_COMPAT_BACKENDS_CLUSTER_LAYOUT_H_

#include <cstdint>

#include "compat/cluster_api.h"

namespace cutover {

struct CollectiveLayout {
  bool valid = false;           // a known op (CUTOVER_CLUSTER_ALL_REDUCE ... SENDRECV)
  bool in_place = false;        // broadcast always is
  uint64_t send_elems = 0;      // the device send buffer (0 in place)
  uint64_t recv_elems = 0;      // the device receive buffer
  uint64_t op_send_offset = 0;  // in place: where in recv the op's input starts
  uint64_t op_recv_offset = 0;  // in place: where in recv the op's output starts
  uint64_t result_offset = 0;   // the device elements copied back to the host's recv[0..)
  uint64_t result_elems = 0;
};

inline CollectiveLayout LayoutOf(int op, uint64_t count, int n, int rank, bool in_place) {
  CollectiveLayout l;
  const uint64_t all = count * static_cast<uint64_t>(n);
  const uint64_t mine = count * static_cast<uint64_t>(rank);
  l.valid = op >= CUTOVER_CLUSTER_ALL_REDUCE && op <= CUTOVER_CLUSTER_SENDRECV && n > 0 &&
            rank >= 0 && rank < n;
  if (!l.valid) return l;
  l.in_place = in_place || op == CUTOVER_CLUSTER_BROADCAST;
  const bool gathers = op == CUTOVER_CLUSTER_ALL_GATHER || op == CUTOVER_CLUSTER_ALLTOALL;
  const bool scatters = op == CUTOVER_CLUSTER_REDUCE_SCATTER || op == CUTOVER_CLUSTER_ALLTOALL;
  l.recv_elems = gathers || (l.in_place && scatters) ? all : count;
  l.send_elems = l.in_place ? 0 : (scatters ? all : count);
  l.result_elems = gathers ? all : count;
  if (l.in_place && op == CUTOVER_CLUSTER_ALL_GATHER) l.op_send_offset = mine;
  if (l.in_place && op == CUTOVER_CLUSTER_REDUCE_SCATTER) {
    l.op_recv_offset = mine;
    l.result_offset = mine;
  }
  return l;
}

}  // namespace cutover

#endif  // CUTOVER_COMPAT_BACKENDS_CLUSTER_LAYOUT_H_
