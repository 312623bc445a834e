// Wall-clock timestamps as every cutover document writes them, and read back.
//
// Thread-safety: thread-safe.
#ifndef CUTOVER_CORE_TIME_UTIL_H_
#define CUTOVER_CORE_TIME_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cutover {

// The current time, RFC 3339 in UTC to the second: "2026-12-03T07:00:00Z".
std::string NowRfc3339Utc();

// `unix_seconds` (floored to the second) the same way.
std::string Rfc3339Utc(double unix_seconds);

// `ns_since_epoch` in the machine's time zone (TZ, else /etc/localtime) to the nanosecond, with
// its offset: "2026-12-07T09:15:02.123456789+01:00" ("Z" where the zone is UTC). What commands
// print for people; ParseRfc3339 reads it back.
std::string LocalRfc3339(int64_t ns_since_epoch);

// Unix seconds of an RFC 3339 date-time: "2026-12-04T10:00:00Z", "2026-12-04t11:00:00.5+01:00"
// (T or t, Z or z or a +hh:mm / -hh:mm offset, optional fraction; years from 1970). nullopt for
// anything else, impossible dates included (February 30, hour 24).
std::optional<double> ParseRfc3339(std::string_view text);

}  // namespace cutover

#endif  // CUTOVER_CORE_TIME_UTIL_H_
