// The cpu backend's kernels: blocked, multi-threaded (std::thread, rows split statically so the
// result is bit-identical whatever the thread count), with optional float64 accumulation.
// All tensors are row-major float32.
//
// Thread-safety: each call is independent; a call uses `threads` worker threads of its own.
#ifndef CUTOVER_COMPAT_BACKENDS_CPU_CPU_OPS_H_
#define CUTOVER_COMPAT_BACKENDS_CPU_CPU_OPS_H_

#include <cstddef>
#include <cstdint>
#include <functional>

namespace cutover::cpu {

struct CpuConfig {
  int threads = 2;
  bool fp64_accumulate = false;  // accumulate sums in double, round once at the end
};

// Runs fn(begin, end) over [0, n) split into `threads` contiguous ranges.
void ParallelRows(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn);

// C[m,n] = A[m,k] * B[k,n]. Each C element sums k in increasing order (blocked over k by 256).
void Gemm(const CpuConfig& cfg, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c);
// Row-wise softmax of x[rows, cols] (max-subtracted).
void Softmax(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y);
// Row-wise layer norm (eps 1e-5, gamma/beta of length cols) and RMS norm (eps 1e-6, gamma).
void LayerNorm(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, const float* gamma,
               const float* beta, float* y);
void RmsNorm(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, const float* gamma,
             float* y);
// Row-wise sum and max of x[rows, cols] into y[rows].
void ReduceSum(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y);
void ReduceMax(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y);
// Elementwise GELU (erf form) and SiLU.
void Gelu(const CpuConfig& cfg, int64_t n, const float* x, float* y);
void Silu(const CpuConfig& cfg, int64_t n, const float* x, float* y);
// y = x; and the STREAM triad a = b + s * c.
void Copy(const CpuConfig& cfg, int64_t n, const float* x, float* y);
void Triad(const CpuConfig& cfg, int64_t n, const float* b, const float* c, float s, float* a);

}  // namespace cutover::cpu

#endif  // CUTOVER_COMPAT_BACKENDS_CPU_CPU_OPS_H_
