#include "compat/philox.h"

#include <cmath>

#include "core/sha256.h"

namespace cutover {
namespace {

constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kW1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

PhiloxCounter BlockFor(uint64_t key, uint32_t stream, uint64_t block) {
  return Philox4x32_10(
      {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), stream, 0},
      {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

// (0, 1]: never 0, so log() is finite.
inline double OpenUnit(uint32_t w) { return (static_cast<double>(w) + 1.0) * 0x1p-32; }

}  // namespace

PhiloxCounter Philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kM0, c[0], &hi0, &lo0);
    MulHiLo(kM1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

uint64_t PhiloxKeyForId(std::string_view case_id) {
  Sha256Hash h = Sha256Digest(case_id);
  uint64_t key = 0;
  for (int i = 7; i >= 0; --i) key = (key << 8) | h[i];
  return key;
}

uint32_t PhiloxWord(uint64_t key, uint32_t stream, uint64_t index) {
  return BlockFor(key, stream, index / 4)[index % 4];
}

void FillUniform(uint64_t key, uint32_t stream, float lo, float hi, float* out, size_t n) {
  const double span = static_cast<double>(hi) - lo;
  for (size_t b = 0; b * 4 < n; ++b) {
    PhiloxCounter w = BlockFor(key, stream, b);
    for (size_t j = 0; j < 4 && b * 4 + j < n; ++j) {
      out[b * 4 + j] = static_cast<float>(lo + span * ((w[j] >> 8) * 0x1p-24));
    }
  }
}

void FillNormal(uint64_t key, uint32_t stream, float mean, float stddev, float* out, size_t n) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (size_t b = 0; b * 4 < n; ++b) {
    PhiloxCounter w = BlockFor(key, stream, b);
    for (size_t p = 0; p < 2; ++p) {
      double r = std::sqrt(-2.0 * std::log(OpenUnit(w[2 * p])));
      double theta = kTwoPi * (w[2 * p + 1] * 0x1p-32);
      size_t i = b * 4 + 2 * p;
      if (i < n) out[i] = static_cast<float>(mean + stddev * r * std::cos(theta));
      if (i + 1 < n) out[i + 1] = static_cast<float>(mean + stddev * r * std::sin(theta));
    }
  }
}

}  // namespace cutover
