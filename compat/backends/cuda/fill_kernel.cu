#include "compat/backends/cuda/fill_kernel.h"

namespace cutover::cuda_backend {
namespace {

__global__ void FillU32(uint32_t* out, uint64_t count, uint64_t seed) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = static_cast<uint32_t>(seed + i);
  }
}

}  // namespace

cudaError_t LaunchFillU32(uint32_t* out, uint64_t count, uint64_t seed, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr unsigned kThreads = 256;
  // Enough blocks to fill every SM several times over; the grid-stride loop covers the rest.
  const uint64_t wanted = (count + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
  FillU32<<<blocks, kThreads, 0, stream>>>(out, count, seed);
  return cudaGetLastError();
}

}  // namespace cutover::cuda_backend
