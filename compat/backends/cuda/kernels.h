// The CUDA compat backend's own kernels (everything that is not cuBLASLt, cuDNN or NCCL), behind
// plain launch functions so that only kernels.cu needs nvcc, and the host-side conversions
// between float32 and the device dtypes.
//
// Every kernel reads and writes its element type T (float, half, bfloat16) and computes in
// float32. Each launcher enqueues on `stream` and returns cudaGetLastError() of the launch.
//
// Thread-safety: launchers may be called from any thread; work is ordered by `stream`.
#ifndef CUTOVER_COMPAT_BACKENDS_CUDA_KERNELS_H_
#define CUTOVER_COMPAT_BACKENDS_CUDA_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

namespace cutover::cuda_backend {

// The element types a device buffer may hold.
enum class DType { kF32, kF16, kBF16, kFP8E4M3, kI8, kI32, kU8 };

// Bytes per element.
size_t DTypeSize(DType t);

// Converts `n` float32 values to `t` into `out` (n * DTypeSize(t) bytes), rounding first with
// compat/dtype.h, the very functions the host's inputs and truth use (round to nearest even;
// fp8 saturating to +-448; int8 rounded and clamped to [-127, 127]; u8 and int32 rounded, u8
// clamped to [0, 255]), so the device conversion that follows is exact.
void PackFromFloat(const float* in, size_t n, DType t, void* out);
// Widens `n` values of `t` to float32 (int32 above 2^24 rounds to nearest).
void UnpackToFloat(const void* in, size_t n, DType t, float* out);

// y = x for `bytes` bytes with 16-byte vector loads (the copy op and its calibration).
cudaError_t LaunchCopyBytes(const void* x, void* y, size_t bytes, cudaStream_t stream);

// Elementwise ops on n elements of `t` (kF32, kF16 or kBF16).
cudaError_t LaunchGelu(DType t, const void* x, void* y, size_t n, cudaStream_t stream);
cudaError_t LaunchSilu(DType t, const void* x, void* y, size_t n, cudaStream_t stream);
// a = b + s * c.
cudaError_t LaunchTriad(DType t, const void* b, const void* c, float s, void* a, size_t n,
                        cudaStream_t stream);

// Row ops over x[rows, cols] (one block per row, float32 accumulation).
enum class RowOp { kSoftmax, kLayerNorm, kRmsNorm, kSum, kMax };
// Softmax/LayerNorm/RmsNorm write y[rows, cols]; Sum/Max write y[rows]. gamma and beta (length
// cols) are read by LayerNorm (both) and RmsNorm (gamma); eps is theirs.
cudaError_t LaunchRowOp(RowOp op, DType t, const void* x, const void* gamma, const void* beta,
                        void* y, int64_t rows, int64_t cols, float eps, cudaStream_t stream);

// o = softmax(q k^T * scale [+ causal mask: key <= query]) v for q, k, v, o of [bh, s, d]
// (bh = batch * heads). REQUIRES: d is 32, 64 or 128 (SdpaSupportsHeadDim).
bool SdpaSupportsHeadDim(int64_t d);
cudaError_t LaunchSdpa(DType t, const void* q, const void* k, const void* v, void* o, int64_t bh,
                       int64_t s, int64_t d, bool causal, float scale, cudaStream_t stream);

// Fills n elements of `t` (kF32, kBF16, kF16) with uniform values in [-1, 1) from a hash of
// (seed, index): data for calibration, never zeros.
cudaError_t LaunchFillUniform(DType t, void* p, size_t n, uint64_t seed, cudaStream_t stream);

// Sets `count` bytes to 0xff (NaN in every float type), so an element no kernel wrote shows.
cudaError_t PoisonBytes(void* p, size_t count, cudaStream_t stream);

}  // namespace cutover::cuda_backend

#endif  // CUTOVER_COMPAT_BACKENDS_CUDA_KERNELS_H_
