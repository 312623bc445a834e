// Parsing and formatting of the quantities users type on command lines and read in tables:
// durations ("1h30m"), sizes ("512KiB") and bandwidths ("10Gbit", "100M").
//
// Conventions, the same in every tool:
//   - Sizes: a bare number is bytes. SI prefixes are powers of 1000 (K, KB, kB = 1000; M, MB =
//     1000^2; G, T, P likewise); IEC prefixes are powers of 1024 (KiB or Ki = 1024, MiB, GiB, TiB,
//     PiB). Prefix letters are case-insensitive; a lower-case final 'b' means bits and is refused.
//   - Bandwidths are bytes per second. A bare prefix means bytes, as rclone's --bwlimit does:
//     "100M" is 100 MB/s (here SI: 100 * 1000^2 bytes/s; note rclone itself reads M as MiB). A
//     "bit", "b" or "bps" suffix means bits: "10Gbit" is 1.25e9 bytes/s. "B", "B/s" or "/s" may
//     follow for bytes. A bare number is bytes per second.
//   - Durations: one or more <number><unit> terms, unit ms, s, m, h or d ("1h30m", "1.5s"); a bare
//     "0" is zero. Fractions below a millisecond are dropped.
// Formatting uses IEC units for bytes ("1.5 GiB") and compact durations ("1h30m", "500ms").
//
// Thread-safety: all functions are pure and thread-safe.
#ifndef CUTOVER_CORE_UNITS_H_
#define CUTOVER_CORE_UNITS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace cutover {

// "500ms" | "30s" | "2m" | "1h30m" | "1d" -> milliseconds. InvalidArgument with a message such as
// "bad duration '5x': unknown unit 'x' (use ms, s, m, h, d)".
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// "123" | "512KiB" | "1MiB" | "10GB" -> bytes (fractions of a byte dropped). InvalidArgument such
// as "bad size '5X': unknown unit 'X' (use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)".
Result<uint64_t> ParseBytes(std::string_view text);

// "10Gbit" | "100M" | "1GB/s" -> bytes per second (see the conventions above).
Result<double> ParseBandwidth(std::string_view text);

// 512 -> "512 B", 1536 -> "1.5 KiB", 10 * 2^30 -> "10.0 GiB".
std::string FormatBytes(uint64_t bytes);

// 500ms -> "500ms", 1500ms -> "1.5s", 30s -> "30s", 125s -> "2m5s", 5400s -> "1h30m",
// 93600s -> "1d2h". Above a minute, rounded to whole seconds. Negative durations get a '-'.
std::string FormatDuration(std::chrono::milliseconds d);

// Bytes per second -> "120.0 MiB/s"; negative or non-finite rates -> "? B/s".
std::string FormatRate(double bytes_per_second);

}  // namespace cutover

#endif  // CUTOVER_CORE_UNITS_H_
