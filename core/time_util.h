// Wall-clock timestamps as every cutover document writes them.
//
// Thread-safety: thread-safe.
#ifndef CUTOVER_CORE_TIME_UTIL_H_
#define CUTOVER_CORE_TIME_UTIL_H_

#include <string>

namespace cutover {

// The current time, RFC 3339 in UTC to the second: "2026-12-03T07:00:00Z".
std::string NowRfc3339Utc();

// `unix_seconds` (floored to the second) the same way.
std::string Rfc3339Utc(double unix_seconds);

}  // namespace cutover

#endif  // CUTOVER_CORE_TIME_UTIL_H_
