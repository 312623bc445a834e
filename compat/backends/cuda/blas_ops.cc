// gemm and gemm_batched through cuBLASLt. Row-major C[M,N] = A[M,K] B[K,N] is computed as the
// column-major product C^T = B^T A^T, which needs no copy: a row-major matrix read column-major
// is its transpose. fp8 and int8 kernels need the "TN" form (the first operand transposed), so
// for them B is transposed on the host while it is converted, and the first operand is read
// with CUBLAS_OP_T.
#include <cstdio>
#include <string>

#include "compat/backends/cuda/ops.h"

namespace cutover::cuda_backend {
namespace {

struct GemmTypes {
  cudaDataType_t ab, cd, scale;
  cublasComputeType_t compute;
  DType host_ab, host_cd;
  bool tn;  // needs the TN form
  const char* math;
};

// The types of a gemm dtype, or false when unknown.
bool TypesFor(const std::string& dtype, GemmTypes* t) {
  if (dtype == "fp32") {
    *t = {CUDA_R_32F,  CUDA_R_32F,  CUDA_R_32F, CUBLAS_COMPUTE_32F,
          DType::kF32, DType::kF32, false,      "compute 32F, TF32 off"};
  } else if (dtype == "tf32") {
    *t = {CUDA_R_32F,  CUDA_R_32F,  CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
          DType::kF32, DType::kF32, false,      "compute 32F_FAST_TF32"};
  } else if (dtype == "fp16") {
    *t = {CUDA_R_16F,  CUDA_R_16F,  CUDA_R_32F, CUBLAS_COMPUTE_32F,
          DType::kF16, DType::kF16, false,      "fp16 in/out, compute 32F"};
  } else if (dtype == "bf16") {
    *t = {CUDA_R_16BF,  CUDA_R_16BF,  CUDA_R_32F, CUBLAS_COMPUTE_32F,
          DType::kBF16, DType::kBF16, false,      "bf16 in/out, compute 32F"};
  } else if (dtype == "fp8_e4m3") {
    *t = {CUDA_R_8F_E4M3,  CUDA_R_16BF,  CUDA_R_32F, CUBLAS_COMPUTE_32F,
          DType::kFP8E4M3, DType::kBF16, true,       "fp8 e4m3 in, bf16 out, compute 32F, TN"};
  } else if (dtype == "int8") {
    *t = {CUDA_R_8I,  CUDA_R_32I,  CUDA_R_32I, CUBLAS_COMPUTE_32I,
          DType::kI8, DType::kI32, true,       "int8 in, int32 out, compute 32I, TN"};
  } else {
    return false;
  }
  return true;
}

// One planned cuBLASLt matmul: descriptors and the heuristic's first algorithm.
class LtGemm {
 public:
  ~LtGemm() {
    if (pref_ != nullptr) cublasLtMatmulPreferenceDestroy(pref_);
    for (cublasLtMatrixLayout_t l : {a_, b_, c_}) {
      if (l != nullptr) cublasLtMatrixLayoutDestroy(l);
    }
    if (op_ != nullptr) cublasLtMatmulDescDestroy(op_);
  }

  // Plans C[M,N] = A[M,K] B[K,N] (row-major; with `types.tn`, B arrives as B^T [N,K]),
  // `batch` matrices at strides M*K, K*N, M*N.
  Outcome Plan(DeviceState& dev, const GemmTypes& types, int64_t batch, int64_t m, int64_t n,
               int64_t k) {
    dev_ = &dev;
    types_ = types;
    const std::string what = "cuBLASLt";
    CUTOVER_TRY(CublasCheck(cublasLtMatmulDescCreate(&op_, types.compute, types.scale),
                            what + " matmul descriptor"));
    cublasOperation_t ta = types.tn ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CUTOVER_TRY(CublasCheck(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)),
        what + " TRANSA"));
    CUTOVER_TRY(CublasCheck(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)),
        what + " TRANSB"));
    // The first operand is B (N x K as stored column-major, or K x N transposed for TN).
    if (types.tn) {
      CUTOVER_TRY(CublasCheck(cublasLtMatrixLayoutCreate(&a_, types.ab, k, n, k), what + " A"));
    } else {
      CUTOVER_TRY(CublasCheck(cublasLtMatrixLayoutCreate(&a_, types.ab, n, k, n), what + " A"));
    }
    CUTOVER_TRY(CublasCheck(cublasLtMatrixLayoutCreate(&b_, types.ab, k, m, k), what + " B"));
    CUTOVER_TRY(CublasCheck(cublasLtMatrixLayoutCreate(&c_, types.cd, n, m, n), what + " C"));
    if (batch > 1) {
      int32_t count = static_cast<int32_t>(batch);
      const int64_t strides[3] = {n * k, k * m, n * m};
      cublasLtMatrixLayout_t layouts[3] = {a_, b_, c_};
      for (int i = 0; i < 3; ++i) {
        CUTOVER_TRY(
            CublasCheck(cublasLtMatrixLayoutSetAttribute(
                            layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                        what + " batch count"));
        CUTOVER_TRY(CublasCheck(cublasLtMatrixLayoutSetAttribute(
                                    layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                    &strides[i], sizeof(strides[i])),
                                what + " batch stride"));
      }
    }
    CUTOVER_TRY(CublasCheck(cublasLtMatmulPreferenceCreate(&pref_), what + " preference"));
    uint64_t ws = kLtWorkspaceBytes;
    CUTOVER_TRY(CublasCheck(cublasLtMatmulPreferenceSetAttribute(
                                pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
                            what + " workspace preference"));
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(dev.lt, op_, a_, b_, c_, c_, pref_, 1, &heuristic_, &found);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
      return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED,
                  "cuBLASLt has no algorithm for this gemm (" + std::string(types.math) + ")");
    }
    CUTOVER_TRY(CublasCheck(st, what + " heuristic"));
    return Ok();
  }

  // Enqueues D = A B on `stream`; a and b as described in Plan.
  Outcome Launch(const void* a, const void* b, void* d, cudaStream_t stream) const {
    const float alpha_f = 1.0f, beta_f = 0.0f;
    const int32_t alpha_i = 1, beta_i = 0;
    const bool integer = types_.scale == CUDA_R_32I;
    const void* alpha = integer ? static_cast<const void*>(&alpha_i) : &alpha_f;
    const void* beta = integer ? static_cast<const void*>(&beta_i) : &beta_f;
    return CublasCheck(
        cublasLtMatmul(dev_->lt, op_, alpha, b, a_, a, b_, beta, d, c_, d, c_, &heuristic_.algo,
                       dev_->lt_workspace, heuristic_.workspaceSize, stream),
        "cublasLtMatmul");
  }

  size_t workspace() const { return heuristic_.workspaceSize; }

 private:
  DeviceState* dev_ = nullptr;
  GemmTypes types_{};
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

}  // namespace

Outcome RunGemm(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result) {
  const bool batched = v.op == "gemm_batched";
  const size_t dims = batched ? 4 : 3;
  if (v.shape.size() != dims) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " needs a shape of " + std::to_string(dims) +
                                                " dimensions, got " +
                                                std::to_string(v.shape.size()));
  }
  const int64_t batch = batched ? v.shape[0] : 1;
  const int64_t m = v.shape[dims - 3], n = v.shape[dims - 2], k = v.shape[dims - 1];
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, v.op + " needs positive dimensions");
  }
  GemmTypes types;
  if (!TypesFor(v.dtype, &types)) {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, v.op + " has no dtype " + v.dtype + " here");
  }
  if (v.dtype == "fp8_e4m3" && (dev.cc_major * 10 + dev.cc_minor) < 89) {
    return Fail(CUTOVER_COMPAT_ERR_NOT_APPLICABLE,
                "fp8 gemm needs compute capability 8.9 or later, this device has " +
                    std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor));
  }
  CUTOVER_TRY(v.Expect({static_cast<uint64_t>(batch * m * k), static_cast<uint64_t>(batch * k * n)},
                       static_cast<uint64_t>(batch * m * n)));
  std::vector<PackedInput> inputs;
  inputs.push_back(Pack(v.c->inputs[0], types.host_ab));
  if (types.tn) {
    // B [K,N] -> B^T [N,K] per batch, then convert.
    const float* b = v.c->inputs[1].data;
    std::vector<float> bt(static_cast<size_t>(batch * k * n));
    for (int64_t q = 0; q < batch; ++q) {
      const float* src = b + q * k * n;
      float* dst = bt.data() + q * k * n;
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < n; ++c) dst[c * k + r] = src[r * n + c];
      }
    }
    CutoverCompatTensor t{bt.data(), bt.size()};
    inputs.push_back(Pack(t, types.host_ab));
  } else {
    inputs.push_back(Pack(v.c->inputs[1], types.host_ab));
  }
  LtGemm gemm;
  CUTOVER_TRY(gemm.Plan(dev, types, batch, m, n, k));
  char detail[200];
  std::snprintf(detail, sizeof(detail), "cuBLASLt %s, heuristic algorithm 0, workspace %zu KiB",
                types.math, gemm.workspace() >> 10);
  SetDetail(result, detail);
  return RunTimed(
      dev, v, inputs, static_cast<uint64_t>(batch * m * n), types.host_cd,
      [&gemm](const std::vector<void*>& in, void* out, cudaStream_t s) {
        return gemm.Launch(in[0], in[1], out, s);
      },
      result);
}

Outcome CalibrateGemm(DeviceState& dev, const std::string& dtype, int64_t size, int reps,
                      double* tflops) {
  GemmTypes types;
  if (!TypesFor(dtype, &types) || types.tn) {
    return Fail(CUTOVER_COMPAT_ERR_INTERNAL, "calibration gemm of dtype " + dtype);
  }
  const size_t elems = static_cast<size_t>(size * size);
  DeviceBuffer a, b, d;
  CUTOVER_TRY(a.Allocate(elems * DTypeSize(types.host_ab), "calibration A"));
  CUTOVER_TRY(b.Allocate(elems * DTypeSize(types.host_ab), "calibration B"));
  CUTOVER_TRY(d.Allocate(elems * DTypeSize(types.host_cd), "calibration C"));
  CUTOVER_TRY(CudaCheck(LaunchFillUniform(types.host_ab, a.get(), elems, 1, dev.stream), "fill A"));
  CUTOVER_TRY(CudaCheck(LaunchFillUniform(types.host_ab, b.get(), elems, 2, dev.stream), "fill B"));
  LtGemm gemm;
  CUTOVER_TRY(gemm.Plan(dev, types, 1, size, size, size));
  for (int i = 0; i < 3; ++i) CUTOVER_TRY(gemm.Launch(a.get(), b.get(), d.get(), dev.stream));
  std::vector<cudaEvent_t> ev(2 * reps, nullptr);
  for (cudaEvent_t& e : ev) CUTOVER_TRY(CudaCheck(cudaEventCreate(&e), "cudaEventCreate"));
  Outcome o = Ok();
  for (int i = 0; i < reps && o.ok(); ++i) {
    cudaEventRecord(ev[2 * i], dev.stream);
    o = gemm.Launch(a.get(), b.get(), d.get(), dev.stream);
    cudaEventRecord(ev[2 * i + 1], dev.stream);
  }
  if (o.ok()) o = CudaCheck(cudaStreamSynchronize(dev.stream), "calibration gemm");
  std::vector<double> ms;
  for (int i = 0; i < reps && o.ok(); ++i) {
    float t = 0;
    o = CudaCheck(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  for (cudaEvent_t e : ev) cudaEventDestroy(e);
  CUTOVER_TRY(o);
  const double med = Median(ms);
  *tflops = med > 0 ? 2.0 * static_cast<double>(size) * size * size / (med * 1e-3) / 1e12 : 0;
  return Ok();
}

}  // namespace cutover::cuda_backend
