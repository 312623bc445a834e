#include "core/strings.h"

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

}  // namespace
}  // namespace cutover
