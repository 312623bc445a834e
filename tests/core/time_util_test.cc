// core/time_util: RFC 3339 written in UTC and in the local zone, and read back.
#include "core/time_util.h"

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace cutover {
namespace {

// Sets TZ for the test's duration.
class ZoneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* tz = std::getenv("TZ")) saved_ = tz;
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("TZ", saved_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }
  static void Zone(const char* tz) {
    ::setenv("TZ", tz, 1);
    ::tzset();
  }
  std::optional<std::string> saved_;
};

TEST_F(ZoneTest, LocalTimesCarryTheirOffsetAndNanosecondsAndReadBack) {
  const int64_t ns = 1765098902123456789;  // 2025-12-07T09:15:02.123456789Z
  Zone("UTC0");
  EXPECT_EQ(LocalRfc3339(ns), "2025-12-07T09:15:02.123456789Z");
  Zone("CET-1");
  EXPECT_EQ(LocalRfc3339(ns), "2025-12-07T10:15:02.123456789+01:00");
  Zone("EST5");
  EXPECT_EQ(LocalRfc3339(ns), "2025-12-07T04:15:02.123456789-05:00");
  Zone("IST-5:30");
  EXPECT_EQ(LocalRfc3339(ns), "2025-12-07T14:45:02.123456789+05:30");
  for (const char* tz : {"UTC0", "CET-1", "EST5", "IST-5:30"}) {
    Zone(tz);
    std::optional<double> back = ParseRfc3339(LocalRfc3339(ns));
    ASSERT_TRUE(back.has_value()) << tz;
    EXPECT_NEAR(*back, 1765098902.123456789, 1e-6) << tz;
  }
  // Before 1970 the fraction still counts forward from the second before.
  Zone("UTC0");
  EXPECT_EQ(LocalRfc3339(-1), "1969-12-31T23:59:59.999999999Z");
  EXPECT_EQ(LocalRfc3339(0), "1970-01-01T00:00:00.000000000Z");
}

TEST(TimeUtil, UtcSecondsRoundTrip) {
  EXPECT_EQ(Rfc3339Utc(1765098902.9), "2025-12-07T09:15:02Z");
  EXPECT_EQ(ParseRfc3339("2025-12-07T09:15:02Z").value_or(0), 1765098902.0);
  EXPECT_FALSE(ParseRfc3339("2025-02-30T00:00:00Z").has_value());
}

}  // namespace
}  // namespace cutover
