// The cpu backend's kernels: blocked, multi-threaded (std::thread, rows split statically so the
// result is bit-identical whatever the thread count), with optional float64 accumulation.
// All tensors are float32 (row-major; convolutions NCHW or NHWC). Each output element is summed
// by one thread in a fixed order, so results never depend on the thread count.
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

// C[m,n] = A[m,k] * B[k,n] for integer-valued A and B (|values| <= 127): exact int32 sums,
// converted to float at the end (exact while |C| < 2^24).
void GemmInt8(const CpuConfig& cfg, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
              float* c);

// A 2-D convolution (cross-correlation, dilation 1, groups 1): x[N,C,H,W], w[K,C,R,S],
// y[N,K,P,Q] with P = (H + 2 pad - R) / stride + 1 (likewise Q), in NCHW or NHWC order
// (NHWC: x[N,H,W,C], w[K,R,S,C], y[N,P,Q,K]).
struct ConvShape {
  int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1, stride = 1, pad = 0;
  int64_t P() const { return (h + 2 * pad - r) / stride + 1; }
  int64_t Q() const { return (w + 2 * pad - s) / stride + 1; }
};
enum class ConvLayout { kNchw, kNhwc };
// Flat offsets of x[n,c,h,w], w[k,c,r,s] and y[n,k,p,q] in `layout`.
int64_t ConvXIndex(const ConvShape& g, ConvLayout l, int64_t n, int64_t c, int64_t h, int64_t w);
int64_t ConvWIndex(const ConvShape& g, ConvLayout l, int64_t k, int64_t c, int64_t r, int64_t s);
int64_t ConvYIndex(const ConvShape& g, ConvLayout l, int64_t n, int64_t k, int64_t p, int64_t q);
// y = conv(x, w); each y sums over c, r, s in that order.
void Conv2dFwd(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* x,
               const float* w, float* y);
// dx = the gradient of conv with respect to x, from dy[N,K,P,Q] and w; each dx sums over k,
// r, s.
void Conv2dBwdData(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* dy,
                   const float* w, float* dx);
// dw = the gradient with respect to w, from x and dy; each dw sums over n, p, q.
void Conv2dBwdFilter(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* x,
                     const float* dy, float* dw);

// Scaled dot-product attention o = softmax(q k^T / sqrt(d) [+ causal mask]) v over tensors
// [b, h, s, d]; scores, softmax and the weighted sum in float (double with fp64_accumulate).
void Sdpa(const CpuConfig& cfg, int64_t b, int64_t h, int64_t s, int64_t d, bool causal,
          const float* q, const float* k, const float* v, float* o);

}  // namespace cutover::cpu

#endif  // CUTOVER_COMPAT_BACKENDS_CPU_CPU_OPS_H_
