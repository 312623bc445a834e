// Fuzzes ParseDuration, ParseBytes and ParseBandwidth: no crash, no undefined behaviour, errors
// name the input, and what parses formats to something that parses again.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/units.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string quoted = "'" + std::string(text) + "': ";

  auto d = cutover::ParseDuration(text);
  if (d.ok()) {
    FUZZ_CHECK(d->count() >= 0, std::string(text));
    auto back = cutover::ParseDuration(cutover::FormatDuration(*d));
    FUZZ_CHECK(back.ok(), back.status().message());
  } else {
    FUZZ_CHECK(d.status().message().rfind("bad duration " + quoted, 0) == 0, d.status().message());
  }

  auto b = cutover::ParseBytes(text);
  if (b.ok()) {
    FUZZ_CHECK(!cutover::FormatBytes(*b).empty(), "");
  } else {
    FUZZ_CHECK(b.status().message().rfind("bad size " + quoted, 0) == 0, b.status().message());
  }

  auto r = cutover::ParseBandwidth(text);
  if (r.ok()) {
    FUZZ_CHECK(std::isfinite(*r) && *r >= 0, std::string(text));
    FUZZ_CHECK(!cutover::FormatRate(*r).empty(), "");
  } else {
    FUZZ_CHECK(r.status().message().rfind("bad bandwidth " + quoted, 0) == 0, r.status().message());
  }
  return 0;
}
