#include "compat/philox.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace cutover {
namespace {

// Known-answer vectors of Random123's kat_vectors for philox4x32 with 10 rounds.
TEST(PhiloxTest, KnownAnswerZero) {
  PhiloxCounter out = Philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out, (PhiloxCounter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(PhiloxTest, KnownAnswerAllOnes) {
  PhiloxCounter out = Philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                                    {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(out, (PhiloxCounter{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(PhiloxTest, KnownAnswerPi) {
  PhiloxCounter out = Philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                                    {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(out, (PhiloxCounter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(PhiloxTest, KeyIsSha256PrefixLittleEndian) {
  // SHA-256("abc") = ba7816bf 8f01cfea ...
  EXPECT_EQ(PhiloxKeyForId("abc"), 0xeacf018fbf1678baull);
}

TEST(PhiloxTest, UniformIsDeterministicAndInRange) {
  std::vector<float> a(1001), b(1001);
  FillUniform(42, 1, -1.0f, 1.0f, a.data(), a.size());
  FillUniform(42, 1, -1.0f, 1.0f, b.data(), b.size());
  EXPECT_EQ(a, b);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  // Element i matches the word it is built from, whatever n is.
  EXPECT_EQ(a[1000], static_cast<float>(-1.0 + 2.0 * ((PhiloxWord(42, 1, 1000) >> 8) * 0x1p-24)));
  std::vector<float> other(1001);
  FillUniform(42, 2, -1.0f, 1.0f, other.data(), other.size());
  EXPECT_NE(a, other);
}

TEST(PhiloxTest, NormalMomentsAndPrefixStability) {
  std::vector<float> v(100000);
  FillNormal(7, 0, 0.0f, 1.0f, v.data(), v.size());
  double sum = 0, sq = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += static_cast<double>(x) * x;
  }
  double mean = sum / v.size();
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(sq / v.size() - mean * mean, 1.0, 0.02);
  std::vector<float> prefix(7);
  FillNormal(7, 0, 0.0f, 1.0f, prefix.data(), prefix.size());
  for (size_t i = 0; i < prefix.size(); ++i) EXPECT_EQ(prefix[i], v[i]) << i;
}

}  // namespace
}  // namespace cutover
