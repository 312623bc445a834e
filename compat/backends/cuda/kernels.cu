#include "compat/backends/cuda/kernels.h"

#include <cmath>
#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "compat/dtype.h"

namespace cutover::cuda_backend {
namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToF(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T FromF(float x);
template <>
__device__ __forceinline__ float FromF<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half FromF<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromF<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

unsigned BlocksFor(size_t n, size_t per_block) {
  return static_cast<unsigned>((n + per_block - 1) / per_block);
}

// ---- copy: each thread moves kUnroll 16-byte words, a block kThreads * kUnroll of them.
constexpr int kCopyUnroll = 4;

__global__ void CopyVec16(const uint4* __restrict__ x, uint4* __restrict__ y, size_t n) {
  const size_t base = static_cast<size_t>(blockIdx.x) * kThreads * kCopyUnroll + threadIdx.x;
  uint4 v[kCopyUnroll];
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const size_t i = base + static_cast<size_t>(u) * kThreads;
    if (i < n) v[u] = x[i];
  }
#pragma unroll
  for (int u = 0; u < kCopyUnroll; ++u) {
    const size_t i = base + static_cast<size_t>(u) * kThreads;
    if (i < n) y[i] = v[u];
  }
}

__global__ void CopyTail(const unsigned char* x, unsigned char* y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

// ---- elementwise.
template <typename T>
__global__ void GeluKernel(const T* __restrict__ x, T* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = ToF(x[i]);
    y[i] = FromF<T>(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
  }
}

template <typename T>
__global__ void SiluKernel(const T* __restrict__ x, T* __restrict__ y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = ToF(x[i]);
    y[i] = FromF<T>(v / (1.0f + expf(-v)));
  }
}

template <typename T>
__global__ void TriadKernel(const T* __restrict__ b, const T* __restrict__ c, float s,
                            T* __restrict__ a, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) a[i] = FromF<T>(__fadd_rn(ToF(b[i]), __fmul_rn(s, ToF(c[i]))));  // no fma, as on a CPU
}

// ---- row ops: one block of kThreads per row.
__device__ float BlockReduce(float v, bool is_max, float* shared) {
  for (int o = 16; o > 0; o /= 2) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // `shared` may still be read from the previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : (is_max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o /= 2) {
      const float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  return shared[0];
}

template <typename T>
__global__ void RowKernel(RowOp op, const T* __restrict__ x, const T* __restrict__ gamma,
                          const T* __restrict__ beta, T* __restrict__ y, int64_t cols, float eps) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const T* xr = x + row * cols;
  switch (op) {
    case RowOp::kSum:
    case RowOp::kMax: {
      const bool is_max = op == RowOp::kMax;
      float acc = is_max ? -INFINITY : 0.0f;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const float v = ToF(xr[j]);
        acc = is_max ? fmaxf(acc, v) : acc + v;
      }
      acc = BlockReduce(acc, is_max, shared);
      if (threadIdx.x == 0) y[row] = FromF<T>(acc);
      return;
    }
    case RowOp::kSoftmax: {
      float mx = -INFINITY;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) mx = fmaxf(mx, ToF(xr[j]));
      mx = BlockReduce(mx, true, shared);
      float sum = 0;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(ToF(xr[j]) - mx);
      sum = BlockReduce(sum, false, shared);
      const float inv = 1.0f / sum;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        y[row * cols + j] = FromF<T>(expf(ToF(xr[j]) - mx) * inv);
      }
      return;
    }
    case RowOp::kLayerNorm: {
      float sum = 0;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += ToF(xr[j]);
      const float mean = BlockReduce(sum, false, shared) / static_cast<float>(cols);
      float var = 0;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const float d = ToF(xr[j]) - mean;
        var += d * d;
      }
      var = BlockReduce(var, false, shared) / static_cast<float>(cols);
      const float rstd = 1.0f / sqrtf(var + eps);
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        y[row * cols + j] = FromF<T>((ToF(xr[j]) - mean) * rstd * ToF(gamma[j]) + ToF(beta[j]));
      }
      return;
    }
    case RowOp::kRmsNorm: {
      float ss = 0;
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        const float v = ToF(xr[j]);
        ss += v * v;
      }
      ss = BlockReduce(ss, false, shared) / static_cast<float>(cols);
      const float rrms = 1.0f / sqrtf(ss + eps);
      for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
        y[row * cols + j] = FromF<T>(ToF(xr[j]) * rrms * ToF(gamma[j]));
      }
      return;
    }
  }
}

// ---- attention: a block of kSdpaRows warps, one query row per warp; keys and values stream
// through shared memory kSdpaKeys at a time with an online softmax (running max and sum).
constexpr int kSdpaRows = 8;
constexpr int kSdpaKeys = 32;

template <typename T, int D>
__global__ void __launch_bounds__(kSdpaRows * 32)
    SdpaKernel(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
               T* __restrict__ o, int64_t s, bool causal, float scale) {
  constexpr int kPer = D / 32;
  __shared__ float ks[kSdpaKeys][D + 1];
  __shared__ float vs[kSdpaKeys][D];
  __shared__ float qs[kSdpaRows][D];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t head = blockIdx.y;
  const T* qh = q + head * s * D;
  const T* kh = k + head * s * D;
  const T* vh = v + head * s * D;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kSdpaRows;
  const int64_t row = row0 + warp;
  for (int i = threadIdx.x; i < kSdpaRows * D; i += blockDim.x) {
    const int r = i / D, d = i % D;
    qs[r][d] = row0 + r < s ? ToF(qh[(row0 + r) * D + d]) : 0.0f;
  }
  float m = -INFINITY, l = 0.0f, acc[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) acc[e] = 0.0f;
  const int64_t last_row = (row0 + kSdpaRows < s ? row0 + kSdpaRows : s) - 1;
  const int64_t key_end = causal ? last_row + 1 : s;
  for (int64_t k0 = 0; k0 < key_end; k0 += kSdpaKeys) {
    __syncthreads();
    for (int i = threadIdx.x; i < kSdpaKeys * D; i += blockDim.x) {
      const int j = i / D, d = i % D;
      const int64_t key = k0 + j;
      ks[j][d] = key < s ? ToF(kh[key * D + d]) : 0.0f;
      vs[j][d] = key < s ? ToF(vh[key * D + d]) : 0.0f;
    }
    __syncthreads();
    if (row >= s) continue;
    const int64_t key = k0 + lane;
    float score = -INFINITY;
    if (key < s && (!causal || key <= row)) {
      float dot = 0.0f;
#pragma unroll 8
      for (int d = 0; d < D; ++d) dot = fmaf(qs[warp][d], ks[lane][d], dot);
      score = dot * scale;
    }
    float tile_max = score;
    for (int off = 16; off > 0; off /= 2) {
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, off));
    }
    const float m_new = fmaxf(m, tile_max);
    if (m_new == -INFINITY) continue;  // every key so far is masked (warp-uniform)
    const float p = score == -INFINITY ? 0.0f : expf(score - m_new);
    const float corr = m == -INFINITY ? 0.0f : expf(m - m_new);
    float psum = p;
    for (int off = 16; off > 0; off /= 2) psum += __shfl_xor_sync(0xffffffffu, psum, off);
    l = l * corr + psum;
#pragma unroll
    for (int e = 0; e < kPer; ++e) acc[e] *= corr;
    for (int j = 0; j < kSdpaKeys; ++j) {
      const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
      for (int e = 0; e < kPer; ++e) acc[e] = fmaf(pj, vs[j][lane + 32 * e], acc[e]);
    }
    m = m_new;
  }
  if (row < s) {
    const float inv = 1.0f / l;
#pragma unroll
    for (int e = 0; e < kPer; ++e) o[(head * s + row) * D + lane + 32 * e] = FromF<T>(acc[e] * inv);
  }
}

// ---- fill.
__device__ __forceinline__ uint32_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return static_cast<uint32_t>((z ^ (z >> 31)) >> 32);
}

template <typename T>
__global__ void FillUniformKernel(T* p, size_t n, uint64_t seed) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float u = static_cast<float>(Mix(seed * 0x100000001b3ull + i) >> 8) * 0x1p-24f;
    p[i] = FromF<T>(2.0f * u - 1.0f);
  }
}

template <typename F>
cudaError_t Dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kF32:
      return f(float{});
    case DType::kF16:
      return f(__half{});
    case DType::kBF16:
      return f(__nv_bfloat16{});
    default:
      return cudaErrorInvalidValue;
  }
}

template <typename T, int D>
cudaError_t SdpaFor(const void* q, const void* k, const void* v, void* o, int64_t bh, int64_t s,
                    bool causal, float scale, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>((s + kSdpaRows - 1) / kSdpaRows), static_cast<unsigned>(bh));
  SdpaKernel<T, D><<<grid, kSdpaRows * 32, 0, stream>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v),
      static_cast<T*>(o), s, causal, scale);
  return cudaGetLastError();
}

}  // namespace

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kFP8E4M3:
    case DType::kI8:
    case DType::kU8:
      return 1;
  }
  return 0;
}

void PackFromFloat(const float* in, size_t n, DType t, void* out) {
  switch (t) {
    case DType::kF32:
      std::memcpy(out, in, n * sizeof(float));
      return;
    case DType::kI32: {
      auto* o = static_cast<int32_t*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(std::nearbyint(in[i]));
      return;
    }
    case DType::kF16: {
      auto* o = static_cast<__half*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = __float2half_rn(RoundToFormat(in[i], kFp16Format));
      return;
    }
    case DType::kBF16: {
      auto* o = static_cast<__nv_bfloat16*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = __float2bfloat16_rn(RoundToFormat(in[i], kBf16Format));
      return;
    }
    case DType::kFP8E4M3: {
      auto* o = static_cast<__nv_fp8_storage_t*>(out);
      for (size_t i = 0; i < n; ++i) {
        o[i] =
            __nv_cvt_float_to_fp8(RoundToFormat(in[i], kFp8E4M3Format), __NV_SATFINITE, __NV_E4M3);
      }
      return;
    }
    case DType::kI8: {
      auto* o = static_cast<int8_t*>(out);
      for (size_t i = 0; i < n; ++i) o[i] = static_cast<int8_t>(RoundToInt8(in[i]));
      return;
    }
    case DType::kU8: {
      auto* o = static_cast<uint8_t*>(out);
      for (size_t i = 0; i < n; ++i) {
        const float v = std::isnan(in[i]) ? 0.0f : std::nearbyint(in[i]);
        o[i] = static_cast<uint8_t>(v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v));
      }
      return;
    }
  }
}

void UnpackToFloat(const void* in, size_t n, DType t, float* out) {
  switch (t) {
    case DType::kF32:
      std::memcpy(out, in, n * sizeof(float));
      return;
    case DType::kI32: {
      const auto* p = static_cast<const int32_t*>(in);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      return;
    }
    case DType::kF16: {
      const auto* p = static_cast<const __half*>(in);
      for (size_t i = 0; i < n; ++i) out[i] = __half2float(p[i]);
      return;
    }
    case DType::kBF16: {
      const auto* p = static_cast<const __nv_bfloat16*>(in);
      for (size_t i = 0; i < n; ++i) out[i] = __bfloat162float(p[i]);
      return;
    }
    case DType::kFP8E4M3: {
      const auto* p = static_cast<const __nv_fp8_storage_t*>(in);
      for (size_t i = 0; i < n; ++i) {
        __half_raw h = __nv_cvt_fp8_to_halfraw(p[i], __NV_E4M3);
        out[i] = __half2float(__half(h));
      }
      return;
    }
    case DType::kI8: {
      const auto* p = static_cast<const int8_t*>(in);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      return;
    }
    case DType::kU8: {
      const auto* p = static_cast<const uint8_t*>(in);
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      return;
    }
  }
}

cudaError_t LaunchCopyBytes(const void* x, void* y, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return cudaSuccess;
  const bool aligned =
      reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const size_t words = aligned ? bytes / 16 : 0;
  if (words > 0) {
    CopyVec16<<<BlocksFor(words, kThreads * kCopyUnroll), kThreads, 0, stream>>>(
        static_cast<const uint4*>(x), static_cast<uint4*>(y), words);
  }
  const size_t done = words * 16, rest = bytes - done;
  if (rest > 0) {
    CopyTail<<<BlocksFor(rest, kThreads), kThreads, 0, stream>>>(
        static_cast<const unsigned char*>(x) + done, static_cast<unsigned char*>(y) + done, rest);
  }
  return cudaGetLastError();
}

cudaError_t LaunchGelu(DType t, const void* x, void* y, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    GeluKernel<T><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                   static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchSilu(DType t, const void* x, void* y, size_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    SiluKernel<T><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                   static_cast<T*>(y), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchTriad(DType t, const void* b, const void* c, float s, void* a, size_t n,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    TriadKernel<T><<<BlocksFor(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(b), static_cast<const T*>(c), s, static_cast<T*>(a), n);
    return cudaGetLastError();
  });
}

cudaError_t LaunchRowOp(RowOp op, DType t, const void* x, const void* gamma, const void* beta,
                        void* y, int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    RowKernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
        op, static_cast<const T*>(x), static_cast<const T*>(gamma), static_cast<const T*>(beta),
        static_cast<T*>(y), cols, eps);
    return cudaGetLastError();
  });
}

bool SdpaSupportsHeadDim(int64_t d) { return d == 32 || d == 64 || d == 128; }

cudaError_t LaunchSdpa(DType t, const void* q, const void* k, const void* v, void* o, int64_t bh,
                       int64_t s, int64_t d, bool causal, float scale, cudaStream_t stream) {
  if (bh <= 0 || s <= 0) return cudaSuccess;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    switch (d) {
      case 32:
        return SdpaFor<T, 32>(q, k, v, o, bh, s, causal, scale, stream);
      case 64:
        return SdpaFor<T, 64>(q, k, v, o, bh, s, causal, scale, stream);
      case 128:
        return SdpaFor<T, 128>(q, k, v, o, bh, s, causal, scale, stream);
      default:
        return cudaErrorInvalidValue;
    }
  });
}

cudaError_t LaunchFillUniform(DType t, void* p, size_t n, uint64_t seed, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return Dispatch(t, [&](auto z) {
    using T = decltype(z);
    const unsigned blocks =
        static_cast<unsigned>(BlocksFor(n, kThreads) < 65536 ? BlocksFor(n, kThreads) : 65536);
    FillUniformKernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<T*>(p), n, seed);
    return cudaGetLastError();
  });
}

cudaError_t PoisonBytes(void* p, size_t count, cudaStream_t stream) {
  return cudaMemsetAsync(p, 0xff, count, stream);
}

}  // namespace cutover::cuda_backend
