// How many copies of a case's inputs the CUDA backend rotates through while timing, so that no
// timed repetition reads inputs left in the L2 cache by the one before. Plain C++ (no CUDA
// headers) so that it is tested on any host.
//
// Thread-safety: a pure function.
#ifndef CUTOVER_COMPAT_BACKENDS_CUDA_ROTATION_H_
#define CUTOVER_COMPAT_BACKENDS_CUDA_ROTATION_H_

#include <algorithm>
#include <cstddef>

namespace cutover::cuda_backend {

// The fewest copies of an input set of `set_bytes` whose total exceeds `l2_bytes`, clamped to
// [1, max_copies] (1 for an empty set: nothing to rotate). REQUIRES: max_copies >= 1.
inline int RotationCopies(size_t set_bytes, size_t l2_bytes, int max_copies) {
  if (set_bytes == 0) return 1;
  const size_t need = l2_bytes / set_bytes + 1;  // need * set_bytes > l2_bytes
  return static_cast<int>(
      std::max<size_t>(1, std::min<size_t>(need, static_cast<size_t>(max_copies))));
}

}  // namespace cutover::cuda_backend

#endif  // CUTOVER_COMPAT_BACKENDS_CUDA_ROTATION_H_
