// FastDigestOf's AVX2 body (datasync/hash.h): the same XXH3-128 as the portable one (xxHash's
// vector variants are defined to give identical digests), about 2.5x faster on long chunks.
// This file alone is compiled with -mavx2 (datasync/CMakeLists.txt, x86-64 only), and hash.cc
// calls it only when the CPU has AVX2. It includes nothing but C headers whose functions are
// static or extern, so no AVX2 copy of an inline function can be picked by the linker for
// another file.
#if defined(CUTOVER_FAST_DIGEST_AVX2)

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

namespace cutover::internal {

void FastDigestAvx2(const void* data, size_t n, uint8_t out[16]) {
  const XXH128_hash_t h = XXH3_128bits(data, n);
  memcpy(out, &h.low64, 8);
  memcpy(out + 8, &h.high64, 8);
}

}  // namespace cutover::internal

#endif  // CUTOVER_FAST_DIGEST_AVX2
