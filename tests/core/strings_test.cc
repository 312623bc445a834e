#include "core/strings.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace cutover {
namespace {

TEST(StringsTest, TrimTakesAsciiWhiteSpaceFromBothEndsOnly) {
  EXPECT_EQ(Trim(" \t\r\n\v\fa b\t \r\n"), "a b");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(Trim("x"), "x");
  // Not white space in the "C" locale: NUL and a UTF-8 no-break space stay.
  EXPECT_EQ(Trim(std::string_view("\0a\0", 3)), std::string_view("\0a\0", 3));
  EXPECT_EQ(Trim("\xc2\xa0x"), "\xc2\xa0x");
  static_assert(Trim("  k ") == "k");
}

TEST(StringsTest, AsciiLowerChangesOnlyAToZ) {
  EXPECT_EQ(AsciiLower("Content-Length: ABC xyz 123"), "content-length: abc xyz 123");
  EXPECT_EQ(AsciiLower("\xc3\x84"), "\xc3\x84");  // bytes of a UTF-8 letter are left alone
  EXPECT_EQ(AsciiLower(""), "");
}

TEST(StringsTest, EqualsIgnoreCaseFoldsOnlyAsciiLetters) {
  EXPECT_TRUE(EqualsIgnoreCase("Content-Length", "content-LENGTH"));
  EXPECT_FALSE(EqualsIgnoreCase("Content-Length", "Content-Lengths"));
  EXPECT_FALSE(EqualsIgnoreCase("\xc3\x84", "\xc3\xa4"));
  EXPECT_TRUE(EqualsIgnoreCase("", ""));
}

TEST(StringsTest, ParseDecimalTakesTheWholeTrimmedText) {
  EXPECT_EQ(ParseDecimal<long long>(" -16\n"), -16);
  EXPECT_EQ(ParseDecimal<uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseDecimal<uint64_t>("18446744073709551616"), std::nullopt);  // out of range
  EXPECT_EQ(ParseDecimal<uint64_t>("-1"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("12ab"), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>(""), std::nullopt);
  EXPECT_EQ(ParseDecimal<int>("  "), std::nullopt);
  EXPECT_EQ(TrimAny("xxaxx", "x"), "a");
}

}  // namespace
}  // namespace cutover
