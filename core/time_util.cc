#include "core/time_util.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string_view>

namespace cutover {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `n` digits at `*p` into `*out`.
bool Digits(std::string_view s, size_t* p, int n, int* out) {
  if (*p + static_cast<size_t>(n) > s.size()) return false;
  int v = 0;
  for (int i = 0; i < n; ++i) {
    char c = s[*p + static_cast<size_t>(i)];
    if (!IsDigit(c)) return false;
    v = v * 10 + (c - '0');
  }
  *p += static_cast<size_t>(n);
  *out = v;
  return true;
}

bool Expect(std::string_view s, size_t* p, char c) {
  if (*p >= s.size() || s[*p] != c) return false;
  ++*p;
  return true;
}

bool LeapYear(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

std::optional<double> ParseRfc3339(std::string_view s) {
  size_t p = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(s, &p, 4, &year) || !Expect(s, &p, '-') || !Digits(s, &p, 2, &month) ||
      !Expect(s, &p, '-') || !Digits(s, &p, 2, &day)) {
    return std::nullopt;
  }
  if (p >= s.size() || (s[p] != 'T' && s[p] != 't')) return std::nullopt;
  ++p;
  if (!Digits(s, &p, 2, &hour) || !Expect(s, &p, ':') || !Digits(s, &p, 2, &minute) ||
      !Expect(s, &p, ':') || !Digits(s, &p, 2, &second)) {
    return std::nullopt;
  }
  double fraction = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    double scale = 0.1;
    size_t first = p;
    while (p < s.size() && IsDigit(s[p])) {
      fraction += (s[p] - '0') * scale;
      scale /= 10;
      ++p;
    }
    if (p == first) return std::nullopt;
  }
  int offset = 0;  // seconds east of UTC
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int sign = s[p] == '-' ? -1 : 1;
    ++p;
    int oh, om;
    if (!Digits(s, &p, 2, &oh) || !Expect(s, &p, ':') || !Digits(s, &p, 2, &om) || oh > 23 ||
        om > 59) {
      return std::nullopt;
    }
    offset = sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (p != s.size()) return std::nullopt;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 ||
      second > 60) {
    return std::nullopt;
  }
  int days_in_month = kDays[month - 1] + (month == 2 && LeapYear(year) ? 1 : 0);
  if (day > days_in_month) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  time_t t = ::timegm(&tm);
  return static_cast<double>(t) - offset + fraction;
}


std::string Rfc3339Utc(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string LocalRfc3339(int64_t ns_since_epoch) {
  int64_t secs = ns_since_epoch / 1000000000;
  int64_t frac = ns_since_epoch % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  localtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  long off = tm.tm_gmtoff / 60;  // minutes east of UTC
  if (off == 0) {
    std::snprintf(out, sizeof(out), "%s.%09lldZ", date, static_cast<long long>(frac));
  } else {
    long a = off < 0 ? -off : off;
    std::snprintf(out, sizeof(out), "%s.%09lld%c%02ld:%02ld", date, static_cast<long long>(frac),
                  off < 0 ? '-' : '+', a / 60, a % 60);
  }
  return out;
}

std::string NowRfc3339Utc() { return Rfc3339Utc(static_cast<double>(std::time(nullptr))); }

}  // namespace cutover
