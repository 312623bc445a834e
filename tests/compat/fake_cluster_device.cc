// A fake device side for the cluster suite (compat/cluster_device_api.h), to test the host's
// cuda path under a real mpirun on a machine without a GPU: the unique id carried by MPI, local
// rank to device, one communicator over every rank, results gathered to rank 0, the watchdog.
// Never in place of the real plugin on a GPU (bench/device/run.sh runs that one).
//
// Its "devices" are host memory laid out as the real plugin lays out device memory
// (compat/backends/cluster_layout.h, NCCL's in-place rule), and its "communicator" is a
// duplicate of MPI_COMM_WORLD made in init_rank, so every result is really computed across the
// ranks. Checks the host must pass, or init_rank fails: the id is not all zeros and every rank
// holds the same one; nranks and rank are MPI's.
// Environment:
//   CUTOVER_FAKE_GPUS=<n>         devices per process (default 8)
//   CUTOVER_FAKE_CLUSTER_LOG=DIR  each rank appends a line to DIR/rank<r> per communicator it
//                                 joins: "rank R of N device D algo A id HEX" (A "-": none)
//   CUTOVER_FAKE_HANG_RANK=<r>    on rank r, collective call number CUTOVER_FAKE_HANG_AFTER
//                                 (default 5; collective and time_collective count) never
//                                 completes, so the watchdog's timeout fires
// Thread-safety: none needed (one thread, as the ABI says).
#include <mpi.h>
#include <sys/random.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compat/backends/cluster_layout.h"
#include "compat/backends/poll_deadline.h"
#include "compat/cluster_device_api.h"

namespace {

struct State {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = -1, nranks = 0, device = -1;
  double timeout_s = 0;
  std::vector<float> send, recv;
  int op = -1;
  bool in_place = false;
  uint64_t count = 0;
  int root = 0;
  int calls = 0;
};
State g;

int Fail(int code, char* err, size_t err_size, const char* fmt, ...) {
  if (err != nullptr && err_size > 0) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
  }
  return code;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

void LibraryVersion(char* out, size_t out_size) {
  std::snprintf(out, out_size, "fake NCCL over MPI");
}

int DeviceCount(int* out, char*, size_t) {
  *out = EnvInt("CUTOVER_FAKE_GPUS", 8);
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int DeviceName(int device, char* out, size_t out_size, char* err, size_t err_size) {
  if (device < 0 || device >= EnvInt("CUTOVER_FAKE_GPUS", 8)) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "no device %d", device);
  }
  std::snprintf(out, out_size, "Fake GPU 0000:%02x:00.0", device);
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int UniqueId(uint8_t* out, size_t out_size, char* err, size_t err_size) {
  if (out_size != CUTOVER_CLUSTER_DEVICE_ID_BYTES) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "id size");
  }
  if (getrandom(out, out_size, 0) != static_cast<ssize_t>(out_size)) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE, err, err_size, "getrandom failed");
  }
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int InitRank(const uint8_t* id, size_t id_size, int nranks, int rank, int device, double timeout_s,
             const char* algo, char* err, size_t err_size) {
  if (g.comm != MPI_COMM_NULL) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "init_rank called twice");
  }
  int mpi_rank = -1, mpi_size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
  if (id == nullptr || id_size != CUTOVER_CLUSTER_DEVICE_ID_BYTES || nranks != mpi_size ||
      rank != mpi_rank || device < 0 || device >= EnvInt("CUTOVER_FAKE_GPUS", 8)) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size,
                "init_rank: rank %d of %d on device %d, MPI says rank %d of %d", rank, nranks,
                device, mpi_rank, mpi_size);
  }
  bool zero = true;
  for (size_t i = 0; i < id_size; ++i) zero = zero && id[i] == 0;
  std::vector<uint8_t> all(id_size * static_cast<size_t>(nranks));
  MPI_Allgather(id, static_cast<int>(id_size), MPI_BYTE, all.data(), static_cast<int>(id_size),
                MPI_BYTE, MPI_COMM_WORLD);
  for (int r = 0; r < nranks; ++r) {
    if (std::memcmp(all.data() + r * id_size, id, id_size) != 0) {
      return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size,
                  "rank %d holds another unique id than rank %d", r, rank);
    }
  }
  if (zero) return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "an all-zero id");
  MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
  g.rank = rank;
  g.nranks = nranks;
  g.device = device;
  g.timeout_s = timeout_s;
  if (const char* dir = std::getenv("CUTOVER_FAKE_CLUSTER_LOG")) {
    const std::string path = std::string(dir) + "/rank" + std::to_string(rank);
    if (FILE* f = std::fopen(path.c_str(), "a")) {
      std::fprintf(f, "rank %d of %d device %d algo %s id ", rank, nranks, device,
                   algo != nullptr ? algo : "-");
      for (size_t i = 0; i < 8; ++i) std::fprintf(f, "%02x", id[i]);
      std::fprintf(f, "\n");
      std::fclose(f);
    }
  }
  return CUTOVER_CLUSTER_DEVICE_OK;
}

void Destroy() {
  if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
  g.comm = MPI_COMM_NULL;
  g.op = -1;
}

// The watchdog's wait on this rank's hung call, as the real plugin waits on its stream.
int MaybeHang(char* err, size_t err_size) {
  ++g.calls;
  if (EnvInt("CUTOVER_FAKE_HANG_RANK", -1) != g.rank ||
      g.calls != EnvInt("CUTOVER_FAKE_HANG_AFTER", 5)) {
    return CUTOVER_CLUSTER_DEVICE_OK;
  }
  const cutover::PollOutcome p =
      cutover::PollWithDeadline([] { return cutover::PollStep::kPending; }, g.timeout_s);
  if (p != cutover::PollOutcome::kTimedOut) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE, err, err_size, "the wait did not time out");
  }
  MPI_Comm_free(&g.comm);  // the fake's ncclCommAbort
  g.comm = MPI_COMM_NULL;
  return Fail(CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT, err, err_size,
              "collective did not complete in %g s (--timeout): the fake communicator was "
              "aborted",
              g.timeout_s);
}

// One call of the prepared op on the "device" buffers, NCCL's layout.
int Run(const cutover::CollectiveLayout& l, char* err, size_t err_size) {
  const int c = static_cast<int>(g.count);
  float* recv = g.recv.data();
  float* in = l.in_place ? recv + l.op_send_offset : g.send.data();
  int rc = MPI_SUCCESS;
  switch (g.op) {
    case CUTOVER_CLUSTER_ALL_REDUCE:
      rc = MPI_Allreduce(l.in_place ? MPI_IN_PLACE : in, recv, c, MPI_FLOAT, MPI_SUM, g.comm);
      break;
    case CUTOVER_CLUSTER_ALL_GATHER:
      rc = l.in_place
               ? MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, c, MPI_FLOAT, g.comm)
               : MPI_Allgather(in, c, MPI_FLOAT, recv, c, MPI_FLOAT, g.comm);
      break;
    case CUTOVER_CLUSTER_REDUCE_SCATTER:
      if (l.in_place) {
        // MPI leaves the result at the start; NCCL at block `rank` (op_recv_offset).
        rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, c, MPI_FLOAT, MPI_SUM, g.comm);
        std::memmove(recv + l.op_recv_offset, recv, g.count * sizeof(float));
      } else {
        rc = MPI_Reduce_scatter_block(in, recv, c, MPI_FLOAT, MPI_SUM, g.comm);
      }
      break;
    case CUTOVER_CLUSTER_ALLTOALL:
      rc = MPI_Alltoall(in, c, MPI_FLOAT, recv, c, MPI_FLOAT, g.comm);
      break;
    case CUTOVER_CLUSTER_BROADCAST:
      rc = MPI_Bcast(recv, c, MPI_FLOAT, g.root, g.comm);
      break;
    case CUTOVER_CLUSTER_SENDRECV:
      rc = MPI_Sendrecv(in, c, MPI_FLOAT, (g.rank + 1) % g.nranks, 1, recv, c, MPI_FLOAT,
                        (g.rank + g.nranks - 1) % g.nranks, 1, g.comm, MPI_STATUS_IGNORE);
      break;
    default:
      return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "op %d", g.op);
  }
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_DEVICE_OK
                           : Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE, err, err_size, "MPI %d", rc);
}

int Collective(int op, const float* send, float* recv, uint64_t count, int root, char* err,
               size_t err_size) {
  if (g.comm == MPI_COMM_NULL) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "no communicator");
  }
  if (op == CUTOVER_CLUSTER_ALLTOALL && send == nullptr) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_UNSUPPORTED, err, err_size, "alltoall in place");
  }
  const cutover::CollectiveLayout l =
      cutover::LayoutOf(op, count, g.nranks, g.rank, send == nullptr);
  if (!l.valid || recv == nullptr || count == 0) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "bad collective");
  }
  if (int rc = MaybeHang(err, err_size); rc != CUTOVER_CLUSTER_DEVICE_OK) return rc;
  g.op = op;
  g.in_place = l.in_place;
  g.count = count;
  g.root = root;
  g.recv.assign(l.recv_elems, -7.0f);  // poison, as the real plugin's 0xff bytes
  if (l.in_place) {
    std::memcpy(g.recv.data(), recv, l.recv_elems * sizeof(float));
  } else {
    g.send.assign(send, send + l.send_elems);
  }
  if (int rc = Run(l, err, err_size); rc != CUTOVER_CLUSTER_DEVICE_OK) return rc;
  std::memcpy(recv, g.recv.data() + l.result_offset, l.result_elems * sizeof(float));
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int TimeCollective(int op, int in_place, uint64_t count, int root, int warmup, int reps,
                   double* rep_s, char* err, size_t err_size) {
  const cutover::CollectiveLayout l = cutover::LayoutOf(op, count, g.nranks, g.rank, in_place != 0);
  if (g.comm == MPI_COMM_NULL || op != g.op || l.in_place != g.in_place || count != g.count ||
      root != g.root || reps < 1) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size,
                "time_collective: not the last collective");
  }
  if (int rc = MaybeHang(err, err_size); rc != CUTOVER_CLUSTER_DEVICE_OK) return rc;
  for (int i = 0; i < warmup; ++i) {
    if (int rc = Run(l, err, err_size); rc != CUTOVER_CLUSTER_DEVICE_OK) return rc;
  }
  auto last = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) {
    if (int rc = Run(l, err, err_size); rc != CUTOVER_CLUSTER_DEVICE_OK) return rc;
    const auto now = std::chrono::steady_clock::now();
    rep_s[i] = std::chrono::duration<double>(now - last).count();
    last = now;
  }
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int PointToPoint(bool sending, uint64_t bytes, int peer, char* err, size_t err_size) {
  if (g.comm == MPI_COMM_NULL || peer < 0 || peer >= g.nranks || peer == g.rank) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, err, err_size, "bad peer %d", peer);
  }
  std::vector<char> buf(bytes == 0 ? 1 : bytes);
  const int n = static_cast<int>(buf.size());
  const int rc = sending ? MPI_Send(buf.data(), n, MPI_BYTE, peer, 2, g.comm)
                         : MPI_Recv(buf.data(), n, MPI_BYTE, peer, 2, g.comm, MPI_STATUS_IGNORE);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_DEVICE_OK
                           : Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE, err, err_size, "MPI %d", rc);
}

int Send(uint64_t bytes, int peer, char* err, size_t err_size) {
  return PointToPoint(true, bytes, peer, err, err_size);
}
int Recv(uint64_t bytes, int peer, char* err, size_t err_size) {
  return PointToPoint(false, bytes, peer, err, err_size);
}

const CutoverClusterDevice kTable = {CUTOVER_CLUSTER_DEVICE_ABI,
                                     sizeof(CutoverClusterDevice),
                                     "nccl",
                                     "fake device over MPI",
                                     LibraryVersion,
                                     DeviceCount,
                                     DeviceName,
                                     UniqueId,
                                     InitRank,
                                     Destroy,
                                     Collective,
                                     TimeCollective,
                                     Send,
                                     Recv};

}  // namespace

extern "C" __attribute__((visibility("default"))) const CutoverClusterDevice*
cutover_cluster_device_entry(uint32_t /*host_abi*/) {
  return &kTable;
}
