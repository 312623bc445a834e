// Small ASCII string helpers every tool needs (locale-independent: headers, keys, file names).
//
// Thread-safety: pure functions.
#ifndef CUTOVER_CORE_STRINGS_H_
#define CUTOVER_CORE_STRINGS_H_

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cutover {

// True for the ASCII white space of C's isspace in the "C" locale: space, \t, \n, \v, \f, \r.
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// `s` without the leading and trailing bytes found in `chars` (a view into `s`).
constexpr std::string_view TrimAny(std::string_view s, std::string_view chars) {
  while (!s.empty() && chars.find(s.front()) != std::string_view::npos) s.remove_prefix(1);
  while (!s.empty() && chars.find(s.back()) != std::string_view::npos) s.remove_suffix(1);
  return s;
}

// `s` without leading and trailing ASCII white space (a view into `s`).
constexpr std::string_view Trim(std::string_view s) { return TrimAny(s, " \t\n\v\f\r"); }

// `s` with A-Z turned to a-z; every other byte as it was.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// True when `a` and `b` differ only in the case of ASCII letters (HTTP header names).
constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// A decimal integer filling `text` once surrounding ASCII white space is trimmed ("16\n"), or
// nullopt (empty, a sign on an unsigned type, any other byte, out of range).
template <typename Int>
std::optional<Int> ParseDecimal(std::string_view text) {
  text = Trim(text);
  Int v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace cutover

#endif  // CUTOVER_CORE_STRINGS_H_
