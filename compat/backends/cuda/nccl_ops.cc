// Collectives over every local device in this one process (ncclCommInitAll, one stream per
// device), with nccl-tests' meaning of `count` (compat/op.h): the elements each rank sends
// (all_reduce, all_gather, broadcast) or receives (reduce_scatter):
//   all_reduce     count in, count out (the sum over ranks)
//   all_gather     count in, n * count out (rank blocks in rank order)
//   reduce_scatter n * count in, count out (rank r gets the sum of every rank's block r)
//   broadcast      count in, count out (root 0)
// Element i of rank r's send buffer is x0[i % count] * (r + 1) * (i / count + 1) rounded to the
// dtype (x0 = input 0), so that a block sent to the wrong rank or summed twice shows. The output
// returned is rank 0's receive buffer. A repetition's time is the longest of the ranks' spans.
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "compat/backends/cuda/ops.h"
#include "compat/dtype.h"

namespace cutover::cuda_backend {
namespace {

struct Comms {
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
};

std::unique_ptr<Comms>& GetComms() {
  static std::unique_ptr<Comms> comms;
  return comms;
}

Outcome NcclCheck(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return Ok();
  return Fail(CUTOVER_COMPAT_ERR_DEVICE, what + ": " + ncclGetErrorString(r));
}

Outcome EnsureComms(int n, Comms** out) {
  std::unique_ptr<Comms>& c = GetComms();
  if (!c) {
    auto made = std::make_unique<Comms>();
    made->comms.resize(n);
    CUTOVER_TRY(NcclCheck(ncclCommInitAll(made->comms.data(), n, nullptr), "ncclCommInitAll"));
    for (int r = 0; r < n; ++r) {
      cudaStream_t s = nullptr;
      CUTOVER_TRY(CudaCheck(cudaSetDevice(r), "cudaSetDevice"));
      CUTOVER_TRY(
          CudaCheck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
      made->streams.push_back(s);
    }
    c = std::move(made);
  }
  *out = c.get();
  return Ok();
}

// Per-rank buffers and events of one case.
struct Rank {
  DeviceBuffer send, recv;
  std::vector<cudaEvent_t> events;
  ~Rank() {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
};

}  // namespace

bool IsCollective(const std::string& op) {
  return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter" || op == "broadcast";
}

void ReleaseCollectives() {
  std::unique_ptr<Comms>& c = GetComms();
  if (!c) return;
  for (size_t r = 0; r < c->comms.size(); ++r) {
    if (c->comms[r] != nullptr) ncclCommDestroy(c->comms[r]);
    if (r < c->streams.size()) {
      cudaSetDevice(static_cast<int>(r));
      cudaStreamDestroy(c->streams[r]);
    }
  }
  c.reset();
}

Outcome RunCollective(int n, const CaseView& v, CutoverCompatCaseResult* result) {
  const CutoverCompatCase& c = *v.c;
  ncclDataType_t nt;
  DType t;
  if (v.dtype == "fp32") {
    nt = ncclFloat32, t = DType::kF32;
  } else if (v.dtype == "bf16") {
    nt = ncclBfloat16, t = DType::kBF16;
  } else {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, v.op + " has no dtype " + v.dtype + " here");
  }
  if (c.input_count != 1 || c.inputs[0].data == nullptr || c.inputs[0].count == 0) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " takes one non-empty input");
  }
  const uint64_t count = c.inputs[0].count;
  const uint64_t send = v.op == "reduce_scatter" ? count * n : count;
  const uint64_t recv = v.op == "all_gather" ? count * n : count;
  if (c.output == nullptr || c.output_count < recv) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID,
                v.op + " over " + std::to_string(n) + " ranks needs an output of " +
                    std::to_string(recv) + " elements, got " + std::to_string(c.output_count));
  }
  Comms* comms = nullptr;
  CUTOVER_TRY(EnsureComms(n, &comms));
  const size_t es = DTypeSize(t);
  std::vector<std::unique_ptr<Rank>> ranks;
  std::vector<float> scaled(send);
  PackedInput packed(send * es);
  for (int r = 0; r < n; ++r) {
    auto rk = std::make_unique<Rank>();
    CUTOVER_TRY(CudaCheck(cudaSetDevice(r), "cudaSetDevice"));
    for (uint64_t i = 0; i < send; ++i) {
      // compat/op.h CollectiveSendValue, with compat/dtype.h's rounding.
      const double x = static_cast<double>(c.inputs[0].data[i % count]) * (r + 1) * (i / count + 1);
      scaled[i] = RoundInput(static_cast<float>(x), v.dtype);
    }
    PackFromFloat(scaled.data(), send, t, packed.data());
    CUTOVER_TRY(rk->send.Allocate(send * es, v.op + " send buffer"));
    CUTOVER_TRY(rk->recv.Allocate(recv * es, v.op + " receive buffer"));
    CUTOVER_TRY(CudaCheck(
        cudaMemcpy(rk->send.get(), packed.data(), send * es, cudaMemcpyHostToDevice), "upload"));
    CUTOVER_TRY(CudaCheck(cudaMemset(rk->recv.get(), 0xff, recv * es), "cudaMemset"));
    rk->events.resize(2 * c.reps, nullptr);
    for (cudaEvent_t& e : rk->events) {
      CUTOVER_TRY(CudaCheck(cudaEventCreate(&e), "cudaEventCreate"));
    }
    ranks.push_back(std::move(rk));
  }
  auto launch = [&]() -> Outcome {
    CUTOVER_TRY(NcclCheck(ncclGroupStart(), "ncclGroupStart"));
    for (int r = 0; r < n; ++r) {
      void* s = ranks[r]->send.get();
      void* d = ranks[r]->recv.get();
      ncclComm_t cm = comms->comms[r];
      cudaStream_t st = comms->streams[r];
      ncclResult_t res;
      if (v.op == "all_reduce") {
        res = ncclAllReduce(s, d, count, nt, ncclSum, cm, st);
      } else if (v.op == "all_gather") {
        res = ncclAllGather(s, d, count, nt, cm, st);
      } else if (v.op == "reduce_scatter") {
        res = ncclReduceScatter(s, d, recv, nt, ncclSum, cm, st);
      } else {
        res = ncclBroadcast(s, d, count, nt, 0, cm, st);
      }
      if (res != ncclSuccess) {
        ncclGroupEnd();
        return NcclCheck(res, v.op);
      }
    }
    return NcclCheck(ncclGroupEnd(), "ncclGroupEnd");
  };
  auto sync_all = [&](const std::string& what) -> Outcome {
    for (int r = 0; r < n; ++r) {
      CUTOVER_TRY(CudaCheck(cudaSetDevice(r), "cudaSetDevice"));
      CUTOVER_TRY(CudaCheck(cudaStreamSynchronize(comms->streams[r]), what));
    }
    return Ok();
  };
  std::vector<uint8_t> first(recv * es), last(recv * es);
  CUTOVER_TRY(launch());
  CUTOVER_TRY(sync_all(v.op + " first run"));
  CUTOVER_TRY(CudaCheck(cudaSetDevice(0), "cudaSetDevice"));
  CUTOVER_TRY(CudaCheck(
      cudaMemcpy(first.data(), ranks[0]->recv.get(), first.size(), cudaMemcpyDeviceToHost),
      "download"));
  for (int i = 0; i < c.warmup; ++i) CUTOVER_TRY(launch());
  for (int i = 0; i < c.reps; ++i) {
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      CUTOVER_TRY(CudaCheck(cudaEventRecord(ranks[r]->events[2 * i], comms->streams[r]),
                            "cudaEventRecord"));
    }
    CUTOVER_TRY(launch());
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      CUTOVER_TRY(CudaCheck(cudaEventRecord(ranks[r]->events[2 * i + 1], comms->streams[r]),
                            "cudaEventRecord"));
    }
  }
  CUTOVER_TRY(sync_all(v.op + " timed runs"));
  for (int i = 0; i < c.reps; ++i) {
    double longest = 0;
    for (int r = 0; r < n; ++r) {
      float ms = 0;
      CUTOVER_TRY(
          CudaCheck(cudaEventElapsedTime(&ms, ranks[r]->events[2 * i], ranks[r]->events[2 * i + 1]),
                    "cudaEventElapsedTime"));
      if (ms > longest) longest = ms;
    }
    c.rep_ms[i] = longest;
  }
  CUTOVER_TRY(CudaCheck(cudaSetDevice(0), "cudaSetDevice"));
  CUTOVER_TRY(
      CudaCheck(cudaMemcpy(last.data(), ranks[0]->recv.get(), last.size(), cudaMemcpyDeviceToHost),
                "download"));
  result->deterministic = first == last ? 1 : 0;
  result->ranks = n;
  result->output_written = recv;
  result->rotation_copies = 1;
  SetDetail(result, "NCCL " + v.op + " over " + std::to_string(n) +
                        " local device(s), one process, no input rotation");
  UnpackToFloat(first.data(), recv, t, c.output);
  return Ok();
}

}  // namespace cutover::cuda_backend
