// conv2d_fwd, conv2d_bwd_data and conv2d_bwd_filter through cuDNN's convolution API (still in
// cuDNN 9). The algorithm is the first that cuDNN's heuristics (the *_v7 queries) rank, among
// those that run in the math mode we ask for: fp32 cases use CUDNN_FMA_MATH so that no TF32
// tensor-core path is taken silently; fp16 and bf16 use tensor cores with float accumulation.
#include <cstdio>
#include <string>

#include "compat/backends/cuda/ops.h"

namespace cutover::cuda_backend {
namespace {

// The descriptors of one convolution, destroyed with it.
struct ConvDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~ConvDescs() {
    if (x != nullptr) cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) cudnnDestroyTensorDescriptor(y);
    if (w != nullptr) cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) cudnnDestroyConvolutionDescriptor(conv);
  }
};

const char* MathName(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default math";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor-op math";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor-op math with conversion";
    case CUDNN_FMA_MATH:
      return "FMA math (no TF32)";
  }
  return "unknown math";
}

// True when an algorithm that cuDNN ranked with math type `m` may serve a case of `dtype`. The
// query ran with the descriptor at CUDNN_FMA_MATH for fp32, and the descriptor stays there while
// the case runs, so no fp32 case reaches a TF32 tensor-core path; a candidate ranked with
// tensor-op math is skipped all the same.
bool MathAllowed(const std::string& dtype, cudnnMathType_t m) {
  if (dtype == "fp32") return m == CUDNN_FMA_MATH || m == CUDNN_DEFAULT_MATH;
  return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The first ranked result that succeeded with an allowed math type and fits `limit` bytes.
template <typename Perf>
const Perf* Pick(const Perf* perf, int count, const std::string& dtype, size_t limit) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && MathAllowed(dtype, perf[i].mathType) &&
        perf[i].memory <= limit) {
      return &perf[i];
    }
  }
  return nullptr;
}

}  // namespace

Outcome RunConv(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  if (v.shape.size() != 9) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID,
                v.op + " needs a shape N x C x H x W x K x R x S x stride x pad, got " +
                    std::to_string(v.shape.size()) + " dimensions");
  }
  const int64_t n = v.shape[0], c = v.shape[1], h = v.shape[2], w = v.shape[3], k = v.shape[4],
                r = v.shape[5], s = v.shape[6], stride = v.shape[7], pad = v.shape[8];
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || k <= 0 || r <= 0 || s <= 0 || stride <= 0 ||
      pad < 0 || h + 2 * pad < r || w + 2 * pad < s) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " has an impossible shape");
  }
  const int64_t p = (h + 2 * pad - r) / stride + 1, q = (w + 2 * pad - s) / stride + 1;
  cudnnTensorFormat_t format;
  if (v.layout == "NCHW") {
    format = CUDNN_TENSOR_NCHW;
  } else if (v.layout == "NHWC") {
    format = CUDNN_TENSOR_NHWC;
  } else {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, v.op + " has no layout '" + v.layout + "'");
  }
  cudnnDataType_t dt;
  DType host;
  cudnnMathType_t math;
  if (v.dtype == "fp32") {
    dt = CUDNN_DATA_FLOAT, host = DType::kF32, math = CUDNN_FMA_MATH;
  } else if (v.dtype == "fp16") {
    dt = CUDNN_DATA_HALF, host = DType::kF16, math = CUDNN_TENSOR_OP_MATH;
  } else if (v.dtype == "bf16") {
    dt = CUDNN_DATA_BFLOAT16, host = DType::kBF16, math = CUDNN_TENSOR_OP_MATH;
  } else {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, v.op + " has no dtype " + v.dtype + " here");
  }
  const uint64_t xs = n * c * h * w, ws = k * c * r * s, ys = n * k * p * q;
  enum { kFwd, kBwdData, kBwdFilter } dir;
  std::vector<uint64_t> counts;
  uint64_t out_count;
  if (v.op == "conv2d_fwd") {
    dir = kFwd, counts = {xs, ws}, out_count = ys;
  } else if (v.op == "conv2d_bwd_data") {
    dir = kBwdData, counts = {ys, ws}, out_count = xs;
  } else {
    dir = kBwdFilter, counts = {xs, ys}, out_count = ws;
  }
  CUTOVER_TRY(v.Expect(counts, out_count));

  ConvDescs d;
  auto i32 = [](int64_t x) { return static_cast<int>(x); };
  CUTOVER_TRY(CudnnCheck(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor"));
  CUTOVER_TRY(CudnnCheck(cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor"));
  CUTOVER_TRY(CudnnCheck(cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor"));
  CUTOVER_TRY(
      CudnnCheck(cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor"));
  CUTOVER_TRY(CudnnCheck(
      cudnnSetTensor4dDescriptor(d.x, format, dt, i32(n), i32(c), i32(h), i32(w)), "x descriptor"));
  CUTOVER_TRY(CudnnCheck(
      cudnnSetTensor4dDescriptor(d.y, format, dt, i32(n), i32(k), i32(p), i32(q)), "y descriptor"));
  CUTOVER_TRY(CudnnCheck(
      cudnnSetFilter4dDescriptor(d.w, dt, format, i32(k), i32(c), i32(r), i32(s)), "w descriptor"));
  CUTOVER_TRY(CudnnCheck(
      cudnnSetConvolution2dDescriptor(d.conv, i32(pad), i32(pad), i32(stride), i32(stride), 1, 1,
                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      "convolution descriptor"));
  CUTOVER_TRY(CudnnCheck(cudnnSetConvolutionMathType(d.conv, math), "cudnnSetConvolutionMathType"));

  size_t free_bytes = 0, total_bytes = 0;
  CUTOVER_TRY(CudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  const size_t limit = free_bytes / 4;
  constexpr int kMax = 16;
  int returned = 0, algo = 0;
  size_t ws_bytes = 0;
  cudnnMathType_t chosen_math = math;
  if (dir == kFwd) {
    cudnnConvolutionFwdAlgoPerf_t perf[kMax];
    CUTOVER_TRY(CudnnCheck(cudnnGetConvolutionForwardAlgorithm_v7(dev.dnn, d.x, d.w, d.conv, d.y,
                                                                  kMax, &returned, perf),
                           "cudnnGetConvolutionForwardAlgorithm_v7"));
    const auto* best = Pick(perf, returned, v.dtype, limit);
    if (best == nullptr) {
      return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, "cuDNN has no forward algorithm for this case");
    }
    algo = best->algo, ws_bytes = best->memory, chosen_math = best->mathType;
  } else if (dir == kBwdData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
    CUTOVER_TRY(CudnnCheck(cudnnGetConvolutionBackwardDataAlgorithm_v7(dev.dnn, d.w, d.y, d.conv,
                                                                       d.x, kMax, &returned, perf),
                           "cudnnGetConvolutionBackwardDataAlgorithm_v7"));
    const auto* best = Pick(perf, returned, v.dtype, limit);
    if (best == nullptr) {
      return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED,
                  "cuDNN has no backward-data algorithm for this case");
    }
    algo = best->algo, ws_bytes = best->memory, chosen_math = best->mathType;
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
    CUTOVER_TRY(CudnnCheck(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                               dev.dnn, d.x, d.y, d.conv, d.w, kMax, &returned, perf),
                           "cudnnGetConvolutionBackwardFilterAlgorithm_v7"));
    const auto* best = Pick(perf, returned, v.dtype, limit);
    if (best == nullptr) {
      return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED,
                  "cuDNN has no backward-filter algorithm for this case");
    }
    algo = best->algo, ws_bytes = best->memory, chosen_math = best->mathType;
  }
  if (v.dtype == "fp32") {
    chosen_math = CUDNN_FMA_MATH;  // never re-opened to TF32 (see MathAllowed)
  } else {
    CUTOVER_TRY(CudnnCheck(cudnnSetConvolutionMathType(d.conv, chosen_math),
                           "cudnnSetConvolutionMathType"));
  }
  DeviceBuffer workspace;
  CUTOVER_TRY(workspace.Allocate(ws_bytes, "cuDNN workspace"));
  char detail[200];
  std::snprintf(detail, sizeof(detail), "cuDNN %s algorithm %d, %s, workspace %zu KiB",
                v.op.c_str(), algo, MathName(chosen_math), ws_bytes >> 10);
  SetDetail(result, detail);

  std::vector<PackedInput> inputs = {Pack(v.c->inputs[0], host), Pack(v.c->inputs[1], host)};
  const float alpha = 1.0f, beta = 0.0f;
  cudnnHandle_t handle = dev.dnn;
  void* wsp = workspace.get();
  return RunTimed(
      dev, v, inputs, out_count, host,
      [&, handle, wsp](const std::vector<void*>& in, void* out, cudaStream_t) -> Outcome {
        if (dir == kFwd) {
          return CudnnCheck(cudnnConvolutionForward(handle, &alpha, d.x, in[0], d.w, in[1], d.conv,
                                                    static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                    wsp, ws_bytes, &beta, d.y, out),
                            "cudnnConvolutionForward");
        }
        if (dir == kBwdData) {
          return CudnnCheck(
              cudnnConvolutionBackwardData(handle, &alpha, d.w, in[1], d.y, in[0], d.conv,
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), wsp,
                                           ws_bytes, &beta, d.x, out),
              "cudnnConvolutionBackwardData");
        }
        return CudnnCheck(
            cudnnConvolutionBackwardFilter(handle, &alpha, d.x, in[0], d.y, in[1], d.conv,
                                           static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), wsp,
                                           ws_bytes, &beta, d.w, out),
            "cudnnConvolutionBackwardFilter");
      },
      result);
}

}  // namespace cutover::cuda_backend
