#include "core/units.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace cutover {
namespace {

using u128 = unsigned __int128;

// A non-negative decimal number as typed: an integer part and up to 18 fraction digits.
struct Decimal {
  uint64_t integer = 0;
  uint64_t frac = 0;        // the fraction digits read as an integer
  uint64_t frac_scale = 1;  // 10^(number of fraction digits kept)
  std::string text;         // the number as written, for messages
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Quote(std::string_view kind, std::string_view text) {
  std::string s = "bad ";
  s += kind;
  s += " '";
  s += text;
  s += "': ";
  return s;
}

// Reads a number at text[*pos]. Returns false with *error set when there is none or it overflows.
bool ReadDecimal(std::string_view text, size_t* pos, Decimal* out, std::string* error) {
  size_t i = *pos;
  if (i >= text.size() || !IsDigit(text[i])) {
    *error = "expected a number";
    return false;
  }
  Decimal d;
  for (; i < text.size() && IsDigit(text[i]); ++i) {
    u128 v = static_cast<u128>(d.integer) * 10 + static_cast<unsigned>(text[i] - '0');
    if (v > std::numeric_limits<uint64_t>::max()) {
      *error = "too large";
      return false;
    }
    d.integer = static_cast<uint64_t>(v);
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (i >= text.size() || !IsDigit(text[i])) {
      *error = "expected digits after '.'";
      return false;
    }
    int kept = 0;
    for (; i < text.size() && IsDigit(text[i]); ++i) {
      if (kept < 18) {
        d.frac = d.frac * 10 + static_cast<unsigned>(text[i] - '0');
        d.frac_scale *= 10;
        ++kept;
      }
    }
  }
  d.text = std::string(text.substr(*pos, i - *pos));
  *pos = i;
  *out = d;
  return true;
}

// value * multiplier, fractions dropped. Returns false on overflow of uint64_t.
bool Scale(const Decimal& d, uint64_t multiplier, uint64_t* out) {
  u128 whole = static_cast<u128>(d.integer) * multiplier;
  u128 part = static_cast<u128>(d.frac) * multiplier / d.frac_scale;
  u128 total = whole + part;
  if (total > std::numeric_limits<uint64_t>::max()) return false;
  *out = static_cast<uint64_t>(total);
  return true;
}

double AsDouble(const Decimal& d) {
  return static_cast<double>(d.integer) +
         static_cast<double>(d.frac) / static_cast<double>(d.frac_scale);
}

// The power index of a size prefix letter (k=1 ... p=5), or 0 when `c` is not one.
int PrefixPower(char c) {
  switch (c) {
    case 'k':
    case 'K':
      return 1;
    case 'm':
    case 'M':
      return 2;
    case 'g':
    case 'G':
      return 3;
    case 't':
    case 'T':
      return 4;
    case 'p':
    case 'P':
      return 5;
    default:
      return 0;
  }
}

uint64_t Power(uint64_t base, int n) {
  uint64_t v = 1;
  for (int i = 0; i < n; ++i) v *= base;
  return v;
}

std::string_view SkipSpaces(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

constexpr char kDurationUnits[] = "(use ms, s, m, h, d)";
constexpr char kSizeUnits[] = "(use B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)";
constexpr char kBandwidthUnits[] = "(use e.g. 100M, 1GB/s, 512KiB/s, 10Gbit)";

}  // namespace

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string prefix = Quote("duration", text);
  if (text.empty()) return Status::InvalidArgument(prefix + "empty");
  if (text == "0") return std::chrono::milliseconds(0);
  uint64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    Decimal d;
    std::string error;
    if (!ReadDecimal(text, &pos, &d, &error)) return Status::InvalidArgument(prefix + error);
    size_t unit_start = pos;
    while (pos < text.size() && !IsDigit(text[pos]) && text[pos] != '.') ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    uint64_t ms_per_unit = 0;
    if (unit == "ms") {
      ms_per_unit = 1;
    } else if (unit == "s") {
      ms_per_unit = 1000;
    } else if (unit == "m") {
      ms_per_unit = 60 * 1000;
    } else if (unit == "h") {
      ms_per_unit = 3600 * 1000;
    } else if (unit == "d") {
      ms_per_unit = 24 * 3600 * 1000;
    } else if (unit.empty()) {
      return Status::InvalidArgument(prefix + "missing unit after " + d.text + " " +
                                     kDurationUnits);
    } else {
      return Status::InvalidArgument(prefix + "unknown unit '" + std::string(unit) + "' " +
                                     kDurationUnits);
    }
    uint64_t ms = 0;
    if (!Scale(d, ms_per_unit, &ms) || ms > std::numeric_limits<int64_t>::max() - total) {
      return Status::InvalidArgument(prefix + "too large");
    }
    total += ms;
  }
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

Result<uint64_t> ParseBytes(std::string_view text) {
  const std::string prefix = Quote("size", text);
  if (text.empty()) return Status::InvalidArgument(prefix + "empty");
  size_t pos = 0;
  Decimal d;
  std::string error;
  if (!ReadDecimal(text, &pos, &d, &error)) return Status::InvalidArgument(prefix + error);
  std::string_view unit = SkipSpaces(text.substr(pos));
  uint64_t multiplier = 0;
  if (unit.empty() || unit == "B") {
    multiplier = 1;
  } else if (int power = PrefixPower(unit[0]); power > 0) {
    std::string_view rest = unit.substr(1);
    if (rest.empty() || rest == "B") {
      multiplier = Power(1000, power);
    } else if (rest == "i" || rest == "iB" || rest == "I" || rest == "IB") {
      multiplier = Power(1024, power);
    } else if (rest == "b" || rest == "ib" || rest == "Ib") {
      return Status::InvalidArgument(prefix + "'b' means bits, use B for bytes");
    }
  } else if (unit == "b") {
    return Status::InvalidArgument(prefix + "'b' means bits, use B for bytes");
  }
  if (multiplier == 0) {
    return Status::InvalidArgument(prefix + "unknown unit '" + std::string(unit) + "' " +
                                   kSizeUnits);
  }
  uint64_t bytes = 0;
  if (!Scale(d, multiplier, &bytes)) return Status::InvalidArgument(prefix + "too large");
  return bytes;
}

Result<double> ParseBandwidth(std::string_view text) {
  const std::string prefix = Quote("bandwidth", text);
  if (text.empty()) return Status::InvalidArgument(prefix + "empty");
  size_t pos = 0;
  Decimal d;
  std::string error;
  if (!ReadDecimal(text, &pos, &d, &error)) return Status::InvalidArgument(prefix + error);
  const std::string_view unit = SkipSpaces(text.substr(pos));
  std::string_view u = unit;
  bool per_second = false;
  if (u.size() >= 2 && u.substr(u.size() - 2) == "/s") {
    u.remove_suffix(2);
    per_second = true;
  }
  double multiplier = 1;
  if (!u.empty()) {
    if (int power = PrefixPower(u[0]); power > 0) {
      u.remove_prefix(1);
      bool iec = !u.empty() && (u[0] == 'i' || u[0] == 'I');
      if (iec) u.remove_prefix(1);
      multiplier = static_cast<double>(Power(iec ? 1024 : 1000, power));
    }
  }
  bool ok = true;
  if (u.empty() || u == "B" || (!per_second && u == "Bps")) {
    // bytes
  } else if (!per_second && (u == "bit" || u == "b" || u == "bps")) {
    multiplier /= 8;
  } else if (per_second && (u == "bit" || u == "b")) {
    multiplier /= 8;
  } else {
    ok = false;
  }
  if (!ok) {
    return Status::InvalidArgument(prefix + "unknown unit '" + std::string(unit) + "' " +
                                   kBandwidthUnits);
  }
  double value = AsDouble(d) * multiplier;
  if (!std::isfinite(value)) return Status::InvalidArgument(prefix + "too large");
  return value;
}

namespace {

constexpr const char* kIecUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

// Formats `v` (>= 0) with one decimal in the largest IEC unit that keeps it >= 1, or whole bytes.
std::string FormatIec(double v, const char* suffix) {
  char buf[64];
  if (v < 1024) {
    std::snprintf(buf, sizeof buf, "%.0f %s%s", std::floor(v), kIecUnits[0], suffix);
    return buf;
  }
  int unit = 0;
  while (unit + 1 < 7 && v >= 1024) {
    v /= 1024;
    ++unit;
  }
  // 1023.96 KiB would print as "1024.0 KiB": move up instead.
  if (v >= 1023.95 && unit + 1 < 7) {
    v /= 1024;
    ++unit;
  }
  std::snprintf(buf, sizeof buf, "%.1f %s%s", v, kIecUnits[unit], suffix);
  return buf;
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  return FormatIec(static_cast<double>(bytes), "");
}

std::string FormatDuration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms < 0) {
    if (ms == std::numeric_limits<int64_t>::min()) ++ms;
    std::string out = "-";
    out += FormatDuration(std::chrono::milliseconds(-ms));
    return out;
  }
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms < 60 * 1000) {
    int64_t tenths = (ms + 50) / 100;
    std::string s = std::to_string(tenths / 10);
    if (tenths % 10 != 0) {
      s += '.';
      s += static_cast<char>('0' + tenths % 10);
    }
    s += 's';
    return s;
  }
  int64_t secs = ms / 1000 + (ms % 1000 >= 500 ? 1 : 0);
  const int64_t parts[4] = {secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60};
  const char* names[4] = {"d", "h", "m", "s"};
  int first = 0;
  while (first < 3 && parts[first] == 0) ++first;
  int last = 3;
  while (last > first && parts[last] == 0) --last;
  std::string out;
  for (int i = first; i <= last; ++i) {
    out += std::to_string(parts[i]);
    out += names[i];
  }
  return out;
}

std::string FormatRate(double bytes_per_second) {
  if (!std::isfinite(bytes_per_second) || bytes_per_second < 0) return "? B/s";
  return FormatIec(bytes_per_second, "/s");
}

}  // namespace cutover
