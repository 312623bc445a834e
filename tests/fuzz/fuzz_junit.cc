// Fuzzes the JUnit writer's escaping: whatever the bytes, the output must be valid UTF-8 holding
// only characters XML 1.0 allows, with no raw markup characters.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/junit.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// Checks `s` is valid UTF-8 of XML 1.0 characters; with `attribute`, no raw tab/LF/CR either.
void CheckXmlText(std::string_view s, bool attribute) {
  size_t i = 0;
  while (i < s.size()) {
    auto b = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t len;
    if (b < 0x80) {
      cp = b, len = 1;
    } else if ((b & 0xe0) == 0xc0) {
      cp = b & 0x1f, len = 2;
    } else if ((b & 0xf0) == 0xe0) {
      cp = b & 0x0f, len = 3;
    } else {
      FUZZ_CHECK((b & 0xf8) == 0xf0, "bad lead byte");
      cp = b & 0x07, len = 4;
    }
    FUZZ_CHECK(i + len <= s.size(), "truncated sequence");
    for (size_t k = 1; k < len; ++k) {
      auto c = static_cast<uint8_t>(s[i + k]);
      FUZZ_CHECK((c & 0xc0) == 0x80, "bad continuation byte");
      cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    FUZZ_CHECK(cp >= kMin[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff), "bad cp");
    FUZZ_CHECK(cp >= 0x20 || cp == '\t' || cp == '\n', "control character");
    FUZZ_CHECK(cp != 0xfffe && cp != 0xffff, "non-character");
    FUZZ_CHECK(cp != '<' && cp != '>' && cp != '"' && cp != '\'', "raw markup");
    FUZZ_CHECK(!attribute || (cp != '\t' && cp != '\n'), "raw whitespace in attribute");
    if (cp == '&') {
      size_t semi = s.find(';', i);
      FUZZ_CHECK(semi != std::string_view::npos && semi - i <= 6, "bare '&'");
    }
    i += len;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckXmlText(cutover::XmlEscape(text), false);
  CheckXmlText(cutover::XmlEscape(text, true), true);
  cutover::JunitReport r{.name = std::string(text)};
  r.suites.push_back({.name = std::string(text)});
  r.suites[0].cases.push_back({.classname = std::string(text),
                               .name = std::string(text),
                               .outcome = cutover::JunitOutcome::kFailed,
                               .message = std::string(text),
                               .text = std::string(text),
                               .system_out = std::string(text)});
  std::string xml = r.ToXml();
  FUZZ_CHECK(xml.rfind("<?xml", 0) == 0, "");
  return 0;
}
