// Device kernels of the CUDA compat backend that the host code (cuda_plugin.cc, built by g++)
// launches through plain functions, so only fill_kernel.cu needs nvcc.
//
// Thread-safety: the launchers may be called from any thread; work is ordered by `stream`.
#ifndef CUTOVER_COMPAT_BACKENDS_CUDA_FILL_KERNEL_H_
#define CUTOVER_COMPAT_BACKENDS_CUDA_FILL_KERNEL_H_

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cutover::cuda_backend {

// Enqueues out[i] = static_cast<uint32_t>(seed + i) for i < count on `stream` (a grid-stride
// kernel). REQUIRES: `out` is device memory of at least count elements.
cudaError_t LaunchFillU32(uint32_t* out, uint64_t count, uint64_t seed, cudaStream_t stream);

}  // namespace cutover::cuda_backend

#endif  // CUTOVER_COMPAT_BACKENDS_CUDA_FILL_KERNEL_H_
