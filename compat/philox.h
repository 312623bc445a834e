// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so element i of any input tensor is a pure function of (key, stream, i)
// and every backend on every host rebuilds bit-identical inputs without shipping data.
//
// The key of a case is the first 8 bytes (little-endian) of SHA-256 of its canonical case ID.
// Element i of stream s uses counter {i / 4 (low, high 32 bits), s, 0} and output word i % 4.
// Uniform floats are built from the top 24 bits (exact in float); normals use Box-Muller in double
// on a pair of words, rounded once to float, so libm differences of an ulp in double almost never
// change a float input.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_PHILOX_H_
#define CUTOVER_COMPAT_PHILOX_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cutover {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32 block with 10 rounds.
PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// The 64-bit key of a case: SHA-256(case_id), first 8 bytes little-endian.
uint64_t PhiloxKeyForId(std::string_view case_id);

// The 32-bit word for element `index` of `stream` under `key`.
uint32_t PhiloxWord(uint64_t key, uint32_t stream, uint64_t index);

// Fills out[0..n) with uniform floats in [lo, hi): lo + (hi - lo) * (w >> 8) * 2^-24.
void FillUniform(uint64_t key, uint32_t stream, float lo, float hi, float* out, size_t n);

// Fills out[0..n) with normal(mean, stddev) floats. Elements 2j and 2j+1 come from one
// Box-Muller pair on words 2j, 2j+1 (so element i depends only on key, stream and i / 2).
void FillNormal(uint64_t key, uint32_t stream, float mean, float stddev, float* out, size_t n);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_PHILOX_H_
