#include "core/random.h"

#include <set>

#include <gtest/gtest.h>

namespace cutover {
namespace {

TEST(RandomHex, GivesTwoLowercaseHexDigitsPerByte) {
  const std::string h = RandomHex(8);
  ASSERT_EQ(h.size(), 16u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
  EXPECT_EQ(RandomHex(0), "");
}

TEST(RandomHex, DoesNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(RandomHex(8));
  EXPECT_EQ(seen.size(), 1000u);
  std::set<uint64_t> seeds;
  for (int i = 0; i < 1000; ++i) seeds.insert(RandomSeed());
  EXPECT_EQ(seeds.size(), 1000u);
}

TEST(RandomBytes, FillsLargeBuffers) {
  std::string buf(1 << 20, '\0');
  RandomBytes(buf.data(), buf.size());
  // A megabyte of kernel randomness has every byte value.
  std::set<unsigned char> values(buf.begin(), buf.end());
  EXPECT_EQ(values.size(), 256u);
}

}  // namespace
}  // namespace cutover
