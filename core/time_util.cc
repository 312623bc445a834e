#include "core/time_util.h"

#include <cmath>
#include <ctime>

namespace cutover {

std::string Rfc3339Utc(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string NowRfc3339Utc() { return Rfc3339Utc(static_cast<double>(std::time(nullptr))); }

}  // namespace cutover
