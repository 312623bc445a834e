#include "core/units.h"

#include <limits>

#include <gtest/gtest.h>

namespace cutover {
namespace {

using std::chrono::milliseconds;

TEST(ParseDurationTest, AcceptsEachUnitAndSums) {
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("30s"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("2m"), milliseconds(120'000));
  EXPECT_EQ(*ParseDuration("1h30m"), milliseconds(5'400'000));
  EXPECT_EQ(*ParseDuration("1d"), milliseconds(86'400'000));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1'500));
  EXPECT_EQ(*ParseDuration("1m30s250ms"), milliseconds(90'250));
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("0.0004s"), milliseconds(0));
}

TEST(ParseDurationTest, ErrorsArePinned) {
  EXPECT_EQ(ParseDuration("5x").status().message(),
            "bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)");
  EXPECT_EQ(ParseDuration("30").status().message(),
            "bad duration '30': missing unit after 30 (use ms, s, m, h, d)");
  EXPECT_EQ(ParseDuration("1h30").status().message(),
            "bad duration '1h30': missing unit after 30 (use ms, s, m, h, d)");
  EXPECT_EQ(ParseDuration("").status().message(), "bad duration '': empty");
  EXPECT_EQ(ParseDuration("-5s").status().message(), "bad duration '-5s': expected a number");
  EXPECT_EQ(ParseDuration("5.s").status().message(),
            "bad duration '5.s': expected digits after '.'");
  EXPECT_EQ(ParseDuration("999999999999999d").status().message(),
            "bad duration '999999999999999d': too large");
  EXPECT_EQ(ParseDuration("5x").status().code(), Code::kInvalidArgument);
}

TEST(ParseBytesTest, SiAndIecDiffer) {
  EXPECT_EQ(*ParseBytes("123"), 123u);
  EXPECT_EQ(*ParseBytes("123B"), 123u);
  EXPECT_EQ(*ParseBytes("512KiB"), 512u * 1024);
  EXPECT_EQ(*ParseBytes("512KB"), 512'000u);
  EXPECT_EQ(*ParseBytes("512kB"), 512'000u);
  EXPECT_EQ(*ParseBytes("1MiB"), 1u << 20);
  EXPECT_EQ(*ParseBytes("1Mi"), 1u << 20);
  EXPECT_EQ(*ParseBytes("1M"), 1'000'000u);
  EXPECT_EQ(*ParseBytes("10GB"), 10'000'000'000u);
  EXPECT_EQ(*ParseBytes("2TiB"), 2ull << 40);
  EXPECT_EQ(*ParseBytes("1PB"), 1'000'000'000'000'000ull);
  EXPECT_EQ(*ParseBytes("1.5KiB"), 1536u);
  EXPECT_EQ(*ParseBytes("10 GB"), 10'000'000'000u);
  EXPECT_FALSE(ParseBytes("16EiB").ok());
}

TEST(ParseBytesTest, ErrorsArePinned) {
  EXPECT_EQ(ParseBytes("5X").status().message(),
            "bad size '5X': unknown unit 'X' (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)");
  EXPECT_EQ(ParseBytes("10Mb").status().message(),
            "bad size '10Mb': 'b' means bits, use B for bytes");
  EXPECT_EQ(ParseBytes("").status().message(), "bad size '': empty");
  EXPECT_EQ(ParseBytes("GB").status().message(), "bad size 'GB': expected a number");
  EXPECT_EQ(ParseBytes("20000PB").status().message(), "bad size '20000PB': too large");
  EXPECT_EQ(ParseBytes("99999999999999999999").status().message(),
            "bad size '99999999999999999999': too large");
}

TEST(ParseBandwidthTest, BytesByDefaultBitsWhenSaid) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("100M"), 100e6);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1GB/s"), 1e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("10Gbit"), 1.25e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("10Gbps"), 1.25e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("10Gb/s"), 1.25e9);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("512KiB/s"), 512.0 * 1024);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1MiB"), 1048576.0);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("800"), 800.0);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("800b"), 100.0);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("2.5MB/s"), 2.5e6);
}

TEST(ParseBandwidthTest, ErrorsArePinned) {
  EXPECT_EQ(ParseBandwidth("5X").status().message(),
            "bad bandwidth '5X': unknown unit 'X' (use e.g. 100M, 1GB/s, 512KiB/s, 10Gbit)");
  EXPECT_EQ(ParseBandwidth("5Gbps/s").status().message(),
            "bad bandwidth '5Gbps/s': unknown unit 'Gbps/s' (use e.g. 100M, 1GB/s, 512KiB/s, "
            "10Gbit)");
  EXPECT_EQ(ParseBandwidth("fast").status().message(), "bad bandwidth 'fast': expected a number");
}

TEST(FormatTest, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(10ull << 30), "10.0 GiB");
  EXPECT_EQ(FormatBytes((1ull << 20) - 1), "1.0 MiB");
  EXPECT_EQ(FormatBytes(~0ull), "16.0 EiB");
}

TEST(FormatTest, DurationRoundTrips) {
  EXPECT_EQ(FormatDuration(milliseconds(500)), "500ms");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(milliseconds(30'000)), "30s");
  EXPECT_EQ(FormatDuration(milliseconds(125'000)), "2m5s");
  EXPECT_EQ(FormatDuration(milliseconds(5'400'000)), "1h30m");
  EXPECT_EQ(FormatDuration(milliseconds(93'600'000)), "1d2h");
  EXPECT_EQ(FormatDuration(milliseconds(3'605'000)), "1h0m5s");
  EXPECT_EQ(FormatDuration(milliseconds(-1500)), "-1.5s");
  for (int64_t ms : {0, 7, 999, 1000, 1500, 61'000, 3'605'000, 90'061'000}) {
    auto back = ParseDuration(FormatDuration(milliseconds(ms)));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->count(), ms);
  }
}

TEST(FormatTest, Rate) {
  EXPECT_EQ(FormatRate(120.0 * 1024 * 1024), "120.0 MiB/s");
  EXPECT_EQ(FormatRate(100), "100 B/s");
  EXPECT_EQ(FormatRate(-1), "? B/s");
  EXPECT_EQ(FormatRate(std::numeric_limits<double>::infinity()), "? B/s");
}

}  // namespace
}  // namespace cutover
