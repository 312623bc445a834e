// Small ASCII string helpers every tool needs (locale-independent: headers, keys, file names).
//
// Thread-safety: pure functions.
#ifndef CUTOVER_CORE_STRINGS_H_
#define CUTOVER_CORE_STRINGS_H_

#include <string>
#include <string_view>

namespace cutover {

// True for the ASCII white space of C's isspace in the "C" locale: space, \t, \n, \v, \f, \r.
constexpr bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// `s` without leading and trailing ASCII white space (a view into `s`).
constexpr std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

// `s` with A-Z turned to a-z; every other byte as it was.
inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace cutover

#endif  // CUTOVER_CORE_STRINGS_H_
