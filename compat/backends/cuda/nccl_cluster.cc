// The device side of a cluster run (compat/cluster_device_api.h): one NCCL communicator over
// every rank of the job, made non-blocking (ncclConfig_t.blocking = 0) so that every wait is a
// poll the watchdog can end: after `timeout_s` without completion the communicator is aborted
// with ncclCommAbort and the call returns CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT. Collectives run
// on one stream; their repetitions are timed with CUDA events between back-to-back calls, as
// nccl-tests times its loop.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compat/backends/cluster_layout.h"
#include "compat/backends/cuda/op_common.h"
#include "compat/backends/poll_deadline.h"
#include "compat/cluster_device_api.h"

namespace cutover::cuda_backend {
namespace {

struct ClusterState {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = -1, nranks = 0, device = -1;
  double timeout_s = 600;
  DeviceBuffer send, recv, p2p;
  std::vector<cudaEvent_t> events;
  // What the buffers hold: the last `collective` call.
  int op = -1;
  bool in_place = false;
  uint64_t count = 0;
  int root = 0;
};

ClusterState& State() {
  static ClusterState s;
  return s;
}

int Report(const Outcome& o, char* err, size_t err_size) {
  if (!o.ok() && err != nullptr && err_size > 0) {
    std::snprintf(err, err_size, "%s", o.message.c_str());
  }
  return o.code;
}

Outcome Nccl(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess || r == ncclInProgress) return Ok();
  const char* last = State().comm != nullptr ? ncclGetLastError(State().comm) : nullptr;
  return Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE,
              what + ": " + ncclGetErrorString(r) +
                  (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : ""));
}

Outcome Cuda(cudaError_t e, const std::string& what) {
  Outcome o = CudaCheck(e, what);
  if (!o.ok()) o.code = CUTOVER_CLUSTER_DEVICE_ERR_DEVICE;
  return o;
}

// The watchdog fired: abort the communicator so no later call waits on it.
Outcome Abort(const std::string& what) {
  ClusterState& s = State();
  if (s.comm != nullptr) {
    ncclCommAbort(s.comm);
    s.comm = nullptr;
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%g", s.timeout_s);
  return Fail(CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT,
              what + " did not complete in " + secs +
                  " s (--timeout): the NCCL communicator was aborted (ncclCommAbort); a peer "
                  "rank died or hangs");
}

// Waits until the communicator has no operation in progress (a non-blocking call returned).
Outcome WaitComm(const std::string& what) {
  ClusterState& s = State();
  ncclResult_t state = ncclInProgress;
  const PollOutcome p = PollWithDeadline(
      [&] {
        if (ncclCommGetAsyncError(s.comm, &state) != ncclSuccess) return PollStep::kFailed;
        if (state == ncclInProgress) return PollStep::kPending;
        return state == ncclSuccess ? PollStep::kDone : PollStep::kFailed;
      },
      s.timeout_s);
  if (p == PollOutcome::kTimedOut) return Abort(what);
  if (p == PollOutcome::kFailed)
    return Nccl(state == ncclInProgress ? ncclInternalError : state, what);
  return Ok();
}

// One enqueued NCCL call: its own result, then the communicator's state.
Outcome Enqueued(ncclResult_t r, const std::string& what) {
  CUTOVER_TRY(Nccl(r, what));
  return r == ncclInProgress ? WaitComm(what) : Ok();
}

// Waits for the stream, ending early on an error the communicator reports.
Outcome WaitStream(const std::string& what) {
  ClusterState& s = State();
  cudaError_t cuda = cudaSuccess;
  ncclResult_t async = ncclSuccess;
  const PollOutcome p = PollWithDeadline(
      [&] {
        cuda = cudaStreamQuery(s.stream);
        if (cuda == cudaSuccess) return PollStep::kDone;
        if (cuda != cudaErrorNotReady) return PollStep::kFailed;
        cuda = cudaSuccess;
        if (ncclCommGetAsyncError(s.comm, &async) != ncclSuccess) return PollStep::kFailed;
        return async == ncclSuccess || async == ncclInProgress ? PollStep::kPending
                                                               : PollStep::kFailed;
      },
      s.timeout_s);
  if (p == PollOutcome::kTimedOut) return Abort(what);
  if (p == PollOutcome::kFailed) {
    if (cuda != cudaSuccess) return Cuda(cuda, what);
    return Nccl(async == ncclSuccess ? ncclInternalError : async, what);
  }
  return Ok();
}

Outcome Ready(const char* what) {
  if (State().comm == nullptr) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID,
                std::string(what) + " before init_rank, or after the communicator was aborted");
  }
  return Ok();
}

float* At(const DeviceBuffer& b, uint64_t offset) { return static_cast<float*>(b.get()) + offset; }

// Enqueues one call of the op on the buffers the last `collective` call prepared.
Outcome Enqueue(const CollectiveLayout& l) {
  ClusterState& s = State();
  const uint64_t count = s.count;
  const float* in = l.in_place ? At(s.recv, l.op_send_offset) : At(s.send, 0);
  float* out = At(s.recv, l.op_recv_offset);
  switch (s.op) {
    case CUTOVER_CLUSTER_ALL_REDUCE:
      return Enqueued(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, s.comm, s.stream),
                      "ncclAllReduce");
    case CUTOVER_CLUSTER_ALL_GATHER:
      return Enqueued(ncclAllGather(in, At(s.recv, 0), count, ncclFloat32, s.comm, s.stream),
                      "ncclAllGather");
    case CUTOVER_CLUSTER_REDUCE_SCATTER:
      return Enqueued(ncclReduceScatter(in, out, count, ncclFloat32, ncclSum, s.comm, s.stream),
                      "ncclReduceScatter");
    case CUTOVER_CLUSTER_BROADCAST:
      return Enqueued(ncclBroadcast(out, out, count, ncclFloat32, s.root, s.comm, s.stream),
                      "ncclBroadcast");
    case CUTOVER_CLUSTER_ALLTOALL:
    case CUTOVER_CLUSTER_SENDRECV: {
      // Grouped point to point, as nccl-tests builds both.
      CUTOVER_TRY(Enqueued(ncclGroupStart(), "ncclGroupStart"));
      if (s.op == CUTOVER_CLUSTER_ALLTOALL) {
        for (int p = 0; p < s.nranks; ++p) {
          CUTOVER_TRY(
              Nccl(ncclSend(in + count * p, count, ncclFloat32, p, s.comm, s.stream), "ncclSend"));
          CUTOVER_TRY(
              Nccl(ncclRecv(out + count * p, count, ncclFloat32, p, s.comm, s.stream), "ncclRecv"));
        }
      } else {
        const int next = (s.rank + 1) % s.nranks, prev = (s.rank + s.nranks - 1) % s.nranks;
        CUTOVER_TRY(Nccl(ncclSend(in, count, ncclFloat32, next, s.comm, s.stream), "ncclSend"));
        CUTOVER_TRY(Nccl(ncclRecv(out, count, ncclFloat32, prev, s.comm, s.stream), "ncclRecv"));
      }
      return Enqueued(ncclGroupEnd(), "ncclGroupEnd");
    }
    default:
      return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "unknown op " + std::to_string(s.op));
  }
}

void LibraryVersion(char* out, size_t out_size) {
  if (out == nullptr || out_size == 0) return;
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) v = 0;
  std::snprintf(out, out_size, "NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

int DeviceCount(int* out, char* err, size_t err_size) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    return Report(Fail(CUTOVER_CLUSTER_DEVICE_ERR_NO_DEVICE,
                       std::string("no usable CUDA device: ") +
                           (e != cudaSuccess ? cudaGetErrorString(e) : "none visible")),
                  err, err_size);
  }
  *out = n;
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int DeviceName(int device, char* out, size_t out_size, char* err, size_t err_size) {
  cudaDeviceProp p{};
  Outcome o = Cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  if (!o.ok()) return Report(o, err, err_size);
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) bus[0] = '\0';
  std::snprintf(out, out_size, "%s %s", p.name, bus);
  return CUTOVER_CLUSTER_DEVICE_OK;
}

int UniqueId(uint8_t* out, size_t out_size, char* err, size_t err_size) {
  if (out == nullptr || out_size != sizeof(ncclUniqueId)) {
    return Report(Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "unique_id: the id is 128 bytes"), err,
                  err_size);
  }
  ncclUniqueId id;
  Outcome o = Nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  if (!o.ok()) return Report(o, err, err_size);
  std::memcpy(out, &id, sizeof id);
  return CUTOVER_CLUSTER_DEVICE_OK;
}

// NCCL_ALGO set for one communicator's setup, as it was after (NCCL reads it while tuning,
// during the setup; no other NCCL communicator is being set up meanwhile).
class ScopedAlgo {
 public:
  explicit ScopedAlgo(const char* algo) : set_(algo != nullptr && *algo != '\0') {
    if (!set_) return;
    const char* old = std::getenv("NCCL_ALGO");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("NCCL_ALGO", algo, 1);
  }
  ~ScopedAlgo() {
    if (!set_) return;
    if (had_) {
      setenv("NCCL_ALGO", old_.c_str(), 1);
    } else {
      unsetenv("NCCL_ALGO");
    }
  }
  ScopedAlgo(const ScopedAlgo&) = delete;
  ScopedAlgo& operator=(const ScopedAlgo&) = delete;

 private:
  bool set_, had_ = false;
  std::string old_;
};

Outcome InitRank(const uint8_t* id_bytes, size_t id_size, int nranks, int rank, int device,
                 double timeout_s, const char* algo) {
  ClusterState& s = State();
  if (s.comm != nullptr || s.stream != nullptr) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "init_rank called twice");
  }
  if (id_bytes == nullptr || id_size != sizeof(ncclUniqueId) || nranks < 1 || rank < 0 ||
      rank >= nranks || !(timeout_s > 0)) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "init_rank: bad id, rank or timeout");
  }
  s.timeout_s = timeout_s;
  CUTOVER_TRY(Cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")"));
  CUTOVER_TRY(
      Cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  ncclUniqueId id;
  std::memcpy(&id, id_bytes, sizeof id);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ScopedAlgo scoped(algo);
  const ncclResult_t r = ncclCommInitRankConfig(&s.comm, nranks, id, rank, &config);
  CUTOVER_TRY(Nccl(r, "ncclCommInitRankConfig"));
  if (s.comm == nullptr)
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_DEVICE, "ncclCommInitRankConfig: no communicator");
  CUTOVER_TRY(WaitComm("ncclCommInitRank (rank " + std::to_string(rank) + " of " +
                       std::to_string(nranks) + ")"));
  s.rank = rank;
  s.nranks = nranks;
  s.device = device;
  return Ok();
}

int InitRankC(const uint8_t* id, size_t id_size, int nranks, int rank, int device, double timeout_s,
              const char* algo, char* err, size_t err_size) {
  return Report(InitRank(id, id_size, nranks, rank, device, timeout_s, algo), err, err_size);
}

void Destroy() {
  ClusterState& s = State();
  if (s.comm != nullptr) {
    // Finalize flushes what is in flight; a communicator that cannot (a peer is gone) is
    // aborted instead, by the watchdog's wait or here.
    const ncclResult_t r = ncclCommFinalize(s.comm);
    if ((r == ncclSuccess || r == ncclInProgress) && WaitComm("ncclCommFinalize").ok()) {
      ncclCommDestroy(s.comm);
    } else if (s.comm != nullptr) {
      ncclCommAbort(s.comm);
    }
    s.comm = nullptr;
  }
  for (cudaEvent_t e : s.events) cudaEventDestroy(e);
  s.events.clear();
  s.send = DeviceBuffer();
  s.recv = DeviceBuffer();
  s.p2p = DeviceBuffer();
  if (s.stream != nullptr) cudaStreamDestroy(s.stream);
  s.stream = nullptr;
  s.op = -1;
}

Outcome Grow(DeviceBuffer& b, uint64_t elems, const char* what) {
  const size_t bytes = static_cast<size_t>(elems) * sizeof(float);
  if (b.bytes() >= bytes && b.get() != nullptr) return Ok();
  b = DeviceBuffer();
  Outcome o = b.Allocate(bytes == 0 ? sizeof(float) : bytes, what);
  if (!o.ok()) o.code = CUTOVER_CLUSTER_DEVICE_ERR_DEVICE;
  return o;
}

Outcome Collective(int op, const float* send, float* recv, uint64_t count, int root) {
  CUTOVER_TRY(Ready("collective"));
  ClusterState& s = State();
  if (op == CUTOVER_CLUSTER_ALLTOALL && send == nullptr) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_UNSUPPORTED,
                "alltoall in place: NCCL's grouped send/receive needs two buffers");
  }
  const CollectiveLayout l = LayoutOf(op, count, s.nranks, s.rank, send == nullptr);
  if (!l.valid || recv == nullptr || count == 0 || root < 0 || root >= s.nranks) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "collective: bad op, count, buffer or root");
  }
  CUTOVER_TRY(Grow(s.recv, l.recv_elems, "collective receive buffer"));
  if (!l.in_place) CUTOVER_TRY(Grow(s.send, l.send_elems, "collective send buffer"));
  s.op = op;
  s.in_place = l.in_place;
  s.count = count;
  s.root = root;
  if (l.in_place) {
    CUTOVER_TRY(Cuda(cudaMemcpyAsync(s.recv.get(), recv, l.recv_elems * sizeof(float),
                                     cudaMemcpyHostToDevice, s.stream),
                     "upload"));
  } else {
    CUTOVER_TRY(Cuda(cudaMemcpyAsync(s.send.get(), send, l.send_elems * sizeof(float),
                                     cudaMemcpyHostToDevice, s.stream),
                     "upload"));
    CUTOVER_TRY(Cuda(cudaMemsetAsync(s.recv.get(), 0xff, l.recv_elems * sizeof(float), s.stream),
                     "poison"));
  }
  CUTOVER_TRY(Enqueue(l));
  CUTOVER_TRY(
      Cuda(cudaMemcpyAsync(recv, At(s.recv, l.result_offset), l.result_elems * sizeof(float),
                           cudaMemcpyDeviceToHost, s.stream),
           "download"));
  return WaitStream("collective");
}

int CollectiveC(int op, const float* send, float* recv, uint64_t count, int root, char* err,
                size_t err_size) {
  return Report(Collective(op, send, recv, count, root), err, err_size);
}

Outcome TimeCollective(int op, int in_place, uint64_t count, int root, int warmup, int reps,
                       double* rep_s) {
  CUTOVER_TRY(Ready("time_collective"));
  ClusterState& s = State();
  const CollectiveLayout l = LayoutOf(op, count, s.nranks, s.rank, in_place != 0);
  if (op != s.op || l.in_place != s.in_place || count != s.count || root != s.root || warmup < 0 ||
      reps < 1 || rep_s == nullptr) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID,
                "time_collective: not the op, count, placement and root of the last collective "
                "call, or bad counts");
  }
  while (s.events.size() < static_cast<size_t>(reps) + 1) {
    cudaEvent_t e = nullptr;
    CUTOVER_TRY(Cuda(cudaEventCreate(&e), "cudaEventCreate"));
    s.events.push_back(e);
  }
  for (int i = 0; i < warmup; ++i) CUTOVER_TRY(Enqueue(l));
  CUTOVER_TRY(Cuda(cudaEventRecord(s.events[0], s.stream), "cudaEventRecord"));
  for (int i = 0; i < reps; ++i) {
    CUTOVER_TRY(Enqueue(l));
    CUTOVER_TRY(Cuda(cudaEventRecord(s.events[i + 1], s.stream), "cudaEventRecord"));
  }
  CUTOVER_TRY(WaitStream("timed collectives"));
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    CUTOVER_TRY(
        Cuda(cudaEventElapsedTime(&ms, s.events[i], s.events[i + 1]), "cudaEventElapsedTime"));
    rep_s[i] = ms / 1e3;
  }
  return Ok();
}

int TimeCollectiveC(int op, int in_place, uint64_t count, int root, int warmup, int reps,
                    double* rep_s, char* err, size_t err_size) {
  return Report(TimeCollective(op, in_place, count, root, warmup, reps, rep_s), err, err_size);
}

Outcome PointToPoint(bool sending, uint64_t bytes, int peer) {
  CUTOVER_TRY(Ready(sending ? "send" : "recv"));
  ClusterState& s = State();
  if (peer < 0 || peer >= s.nranks || peer == s.rank) {
    return Fail(CUTOVER_CLUSTER_DEVICE_ERR_INVALID, "send/recv: bad peer " + std::to_string(peer));
  }
  const uint64_t n = bytes == 0 ? 1 : bytes;
  CUTOVER_TRY(Grow(s.p2p, (n + sizeof(float) - 1) / sizeof(float), "point-to-point buffer"));
  CUTOVER_TRY(Enqueued(sending ? ncclSend(s.p2p.get(), n, ncclUint8, peer, s.comm, s.stream)
                               : ncclRecv(s.p2p.get(), n, ncclUint8, peer, s.comm, s.stream),
                       sending ? "ncclSend" : "ncclRecv"));
  return WaitStream(sending ? "send" : "recv");
}

int SendC(uint64_t bytes, int peer, char* err, size_t err_size) {
  return Report(PointToPoint(true, bytes, peer), err, err_size);
}

int RecvC(uint64_t bytes, int peer, char* err, size_t err_size) {
  return Report(PointToPoint(false, bytes, peer), err, err_size);
}

#define CUTOVER_STR2(x) #x
#define CUTOVER_STR(x) CUTOVER_STR2(x)

const CutoverClusterDevice kClusterDevice = {
    CUTOVER_CLUSTER_DEVICE_ABI,
    sizeof(CutoverClusterDevice),
    "nccl",
    "NCCL headers " CUTOVER_STR(NCCL_MAJOR) "." CUTOVER_STR(NCCL_MINOR) "." CUTOVER_STR(
        NCCL_PATCH) ", CUDA toolkit " CUTOVER_CUDA_TOOLKIT_VERSION,
    LibraryVersion,
    DeviceCount,
    DeviceName,
    UniqueId,
    InitRankC,
    Destroy,
    CollectiveC,
    TimeCollectiveC,
    SendC,
    RecvC,
};

}  // namespace
}  // namespace cutover::cuda_backend

extern "C" CUTOVER_COMPAT_PLUGIN_EXPORT const CutoverClusterDevice* cutover_cluster_device_entry(
    uint32_t /*host_abi*/) {
  return &cutover::cuda_backend::kClusterDevice;
}
