// The ops that run our own kernels (compat/backends/cuda/kernels.h): attention, row ops,
// activations, device copy and triad, and the host-to-device copy.
#include <cmath>
#include <cstring>
#include <string>

#include "compat/backends/cuda/ops.h"

namespace cutover::cuda_backend {
namespace {

// The triad scalar: a = b + kTriadScalar * c (compat/op.cc defines the same constant).
constexpr float kTriadScalar = 3.0f;
constexpr float kLayerNormEps = 1e-5f;
constexpr float kRmsNormEps = 1e-6f;

int64_t Product(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// fp32, fp16 or bf16; UNSUPPORTED otherwise.
Outcome FloatType(const CaseView& v, DType* t) {
  if (v.dtype == "fp32") {
    *t = DType::kF32;
  } else if (v.dtype == "fp16") {
    *t = DType::kF16;
  } else if (v.dtype == "bf16") {
    *t = DType::kBF16;
  } else {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, v.op + " has no dtype " + v.dtype + " here");
  }
  return Ok();
}

Outcome NeedDims(const CaseView& v, size_t dims, const char* meaning) {
  if (v.shape.size() != dims) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " needs a shape " + meaning + ", got " +
                                                std::to_string(v.shape.size()) + " dimensions");
  }
  for (int64_t d : v.shape) {
    if (d <= 0) return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " needs positive dimensions");
  }
  return Ok();
}

std::vector<PackedInput> PackAll(const CaseView& v, DType t) {
  std::vector<PackedInput> out;
  for (uint32_t i = 0; i < v.c->input_count; ++i) out.push_back(Pack(v.c->inputs[i], t));
  return out;
}

Outcome RunSdpa(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  CUTOVER_TRY(NeedDims(v, 4, "B x H x S x D"));
  DType t;
  CUTOVER_TRY(FloatType(v, &t));
  if (v.layout != "causal" && v.layout != "full") {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, "sdpa has no layout '" + v.layout + "'");
  }
  const int64_t bh = v.shape[0] * v.shape[1], s = v.shape[2], d = v.shape[3];
  if (!SdpaSupportsHeadDim(d)) {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED,
                "sdpa here has head dims 32, 64 and 128, not " + std::to_string(d));
  }
  const uint64_t n = static_cast<uint64_t>(bh * s * d);
  CUTOVER_TRY(v.Expect({n, n, n}, n));
  const bool causal = v.layout == "causal";
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  SetDetail(result, "own kernel: online softmax in fp32, one warp per query row");
  return RunTimed(
      dev, v, PackAll(v, t), n, t,
      [=](const std::vector<void*>& in, void* out, cudaStream_t st) {
        return CudaCheck(LaunchSdpa(t, in[0], in[1], in[2], out, bh, s, d, causal, scale, st),
                         "sdpa kernel");
      },
      result);
}

Outcome RunRow(DeviceState& dev, const CaseView& v, RowOp op, CutoverCompatCaseResult* result) {
  CUTOVER_TRY(NeedDims(v, 2, "rows x cols"));
  DType t;
  CUTOVER_TRY(FloatType(v, &t));
  const int64_t rows = v.shape[0], cols = v.shape[1];
  const uint64_t n = static_cast<uint64_t>(rows * cols), c = static_cast<uint64_t>(cols);
  std::vector<uint64_t> counts = {n};
  if (op == RowOp::kLayerNorm) counts = {n, c, c};
  if (op == RowOp::kRmsNorm) counts = {n, c};
  const bool reduce = op == RowOp::kSum || op == RowOp::kMax;
  const uint64_t out = reduce ? static_cast<uint64_t>(rows) : n;
  CUTOVER_TRY(v.Expect(counts, out));
  const float eps = op == RowOp::kLayerNorm ? kLayerNormEps : kRmsNormEps;
  SetDetail(result, "own kernel: one block per row, fp32 accumulation");
  return RunTimed(
      dev, v, PackAll(v, t), out, t,
      [=](const std::vector<void*>& in, void* y, cudaStream_t st) {
        const void* gamma = in.size() > 1 ? in[1] : nullptr;
        const void* beta = in.size() > 2 ? in[2] : nullptr;
        return CudaCheck(LaunchRowOp(op, t, in[0], gamma, beta, y, rows, cols, eps, st),
                         v.op + " kernel");
      },
      result);
}

Outcome RunElementwise(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  CUTOVER_TRY(NeedDims(v, 1, "n"));
  DType t;
  CUTOVER_TRY(FloatType(v, &t));
  const uint64_t n = static_cast<uint64_t>(v.shape[0]);
  const std::string op = v.op;
  if (op == "triad") {
    CUTOVER_TRY(v.Expect({n, n}, n));
  } else {
    CUTOVER_TRY(v.Expect({n}, n));
  }
  SetDetail(result, op == "copy" ? "own kernel: 16-byte vector loads, 4 per thread"
                                 : "own kernel: one element per thread, fp32 math");
  return RunTimed(
      dev, v, PackAll(v, t), n, t,
      [=](const std::vector<void*>& in, void* y, cudaStream_t st) {
        cudaError_t e;
        if (op == "copy") {
          e = LaunchCopyBytes(in[0], y, n * DTypeSize(t), st);
        } else if (op == "gelu") {
          e = LaunchGelu(t, in[0], y, n, st);
        } else if (op == "silu") {
          e = LaunchSilu(t, in[0], y, n, st);
        } else {
          e = LaunchTriad(t, in[0], in[1], kTriadScalar, y, n, st);
        }
        return CudaCheck(e, op + " kernel");
      },
      result);
}

// A host buffer freed on destruction: pinned (cudaMallocHost) or pageable (new[]).
class HostBuffer {
 public:
  ~HostBuffer() {
    if (pinned_ && p_ != nullptr) cudaFreeHost(p_);
    if (!pinned_) delete[] static_cast<uint8_t*>(p_);
  }
  Outcome Allocate(size_t bytes, bool pinned) {
    pinned_ = pinned;
    if (pinned) {
      return CudaCheck(cudaMallocHost(&p_, bytes),
                       "cudaMallocHost of " + std::to_string(bytes) + " bytes");
    }
    p_ = new uint8_t[bytes];
    return Ok();
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  bool pinned_ = true;
};

// h2d_copy {bytes}, dtype u8 (compat/op.h): `bytes` bytes travel from host memory to the device
// each repetition. Input 0 holds `bytes` float32 values; the bytes sent are the first `bytes`
// bytes of that float32 array (as the device runner's truth reads them), and the output is
// each byte that arrived, widened to float32 (0..255).
Outcome RunH2d(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  if (v.dtype != "u8") {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, "h2d_copy has no dtype " + v.dtype + " here");
  }
  CUTOVER_TRY(NeedDims(v, 1, "bytes"));
  const uint64_t bytes = static_cast<uint64_t>(v.shape[0]);
  CUTOVER_TRY(v.Expect({bytes}, bytes));
  const bool pageable = v.layout == "pageable";
  HostBuffer host;
  CUTOVER_TRY(host.Allocate(bytes, !pageable));
  std::memcpy(host.get(), v.c->inputs[0].data, bytes);
  SetDetail(result, pageable ? "cudaMemcpyAsync from pageable host memory"
                             : "cudaMemcpyAsync from pinned host memory (cudaMallocHost)");
  void* src = host.get();
  return RunTimed(
      dev, v, {}, bytes, DType::kU8,
      [=](const std::vector<void*>&, void* y, cudaStream_t st) {
        return CudaCheck(cudaMemcpyAsync(y, src, bytes, cudaMemcpyHostToDevice, st),
                         "cudaMemcpyAsync host to device");
      },
      result);
}

}  // namespace

bool IsOwnOp(const std::string& op) {
  for (const char* o : {"sdpa", "softmax", "layernorm", "rmsnorm", "reduce_sum", "reduce_max",
                        "gelu", "silu", "copy", "triad", "h2d_copy"}) {
    if (op == o) return true;
  }
  return false;
}

Outcome RunOwn(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  if (v.op == "sdpa") return RunSdpa(dev, v, result);
  if (v.op == "softmax") return RunRow(dev, v, RowOp::kSoftmax, result);
  if (v.op == "layernorm") return RunRow(dev, v, RowOp::kLayerNorm, result);
  if (v.op == "rmsnorm") return RunRow(dev, v, RowOp::kRmsNorm, result);
  if (v.op == "reduce_sum") return RunRow(dev, v, RowOp::kSum, result);
  if (v.op == "reduce_max") return RunRow(dev, v, RowOp::kMax, result);
  if (v.op == "h2d_copy") return RunH2d(dev, v, result);
  if (v.op == "gelu" || v.op == "silu" || v.op == "copy" || v.op == "triad") {
    return RunElementwise(dev, v, result);
  }
  return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, "run_case: unknown op '" + v.op + "'");
}

}  // namespace cutover::cuda_backend
