#include "core/junit.h"

#include <charconv>
#include <cstdint>

#include "core/file_util.h"

namespace cutover {
namespace {

constexpr char kReplacement[] = "\xef\xbf\xbd";  // U+FFFD

// Decodes one UTF-8 sequence at s[i]; returns its length and sets *cp, or returns 0 when the
// bytes there are not a valid (shortest-form, non-surrogate) sequence.
size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b0 = byte(i);
  size_t len;
  uint32_t min;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if ((b0 & 0xe0) == 0xc0) {
    len = 2, min = 0x80, *cp = b0 & 0x1f;
  } else if ((b0 & 0xf0) == 0xe0) {
    len = 3, min = 0x800, *cp = b0 & 0x0f;
  } else if ((b0 & 0xf8) == 0xf0) {
    len = 4, min = 0x10000, *cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    *cp = (*cp << 6) | (byte(i + k) & 0x3f);
  }
  if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return 0;
  return len;
}

bool XmlAllowed(uint32_t cp) {
  if (cp < 0x20) return cp == 0x9 || cp == 0xa || cp == 0xd;
  return cp != 0xfffe && cp != 0xffff;
}

std::string Time(double seconds) {
  if (!(seconds >= 0) || seconds > 1e12) seconds = 0;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, seconds, std::chars_format::fixed, 3);
  return std::string(buf, r.ptr);
}

void Attr(std::string& out, std::string_view name, std::string_view value) {
  out += ' ';
  out += name;
  out += "=\"";
  out += XmlEscape(value, true);
  out += '"';
}

void Attr(std::string& out, std::string_view name, size_t value) {
  Attr(out, name, std::to_string(value));
}

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  void Add(const Counts& o) {
    tests += o.tests, failures += o.failures, errors += o.errors, skipped += o.skipped;
    time += o.time;
  }
};

Counts CountSuite(const JunitSuite& suite) {
  Counts c;
  for (const JunitCase& t : suite.cases) {
    ++c.tests;
    if (t.outcome == JunitOutcome::kFailed) ++c.failures;
    if (t.outcome == JunitOutcome::kError) ++c.errors;
    if (t.outcome == JunitOutcome::kSkipped) ++c.skipped;
    if (t.time_s > 0) c.time += t.time_s;
  }
  return c;
}

void CountAttrs(std::string& out, const Counts& c) {
  Attr(out, "tests", c.tests);
  Attr(out, "failures", c.failures);
  Attr(out, "errors", c.errors);
  Attr(out, "skipped", c.skipped);
  Attr(out, "time", Time(c.time));
}

void WriteCase(std::string& out, const JunitCase& t) {
  out += "    <testcase";
  Attr(out, "classname", t.classname);
  Attr(out, "name", t.name);
  Attr(out, "time", Time(t.time_s));
  const bool has_body = t.outcome != JunitOutcome::kPassed || !t.system_out.empty();
  if (!has_body) {
    out += "/>\n";
    return;
  }
  out += ">\n";
  const char* element = nullptr;
  switch (t.outcome) {
    case JunitOutcome::kFailed:
      element = "failure";
      break;
    case JunitOutcome::kError:
      element = "error";
      break;
    case JunitOutcome::kSkipped:
      element = "skipped";
      break;
    case JunitOutcome::kPassed:
      break;
  }
  if (element != nullptr) {
    out += "      <";
    out += element;
    if (!t.message.empty()) Attr(out, "message", t.message);
    if (t.text.empty()) {
      out += "/>\n";
    } else {
      out += '>';
      out += XmlEscape(t.text);
      out += "</";
      out += element;
      out += ">\n";
    }
  }
  if (!t.system_out.empty()) {
    out += "      <system-out>";
    out += XmlEscape(t.system_out);
    out += "</system-out>\n";
  }
  out += "    </testcase>\n";
}

}  // namespace

std::string XmlEscape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t i = 0;
  while (i < text.size()) {
    uint32_t cp = 0;
    size_t len = DecodeUtf8(text, i, &cp);
    if (len == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (!XmlAllowed(cp)) {
      out += kReplacement;
    } else if (len > 1) {
      out.append(text.substr(i, len));
    } else {
      switch (cp) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        case '\t':
          out += attribute ? "&#9;" : "\t";
          break;
        case '\n':
          out += attribute ? "&#10;" : "\n";
          break;
        case '\r':
          out += "&#13;";
          break;  // a raw CR would be normalised away by parsers
        default:
          out += static_cast<char>(cp);
      }
    }
    i += len;
  }
  return out;
}

std::string JunitReport::ToXml() const {
  Counts total;
  std::vector<Counts> per_suite;
  for (const JunitSuite& s : suites) {
    per_suite.push_back(CountSuite(s));
    total.Add(per_suite.back());
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites";
  Attr(out, "name", name);
  CountAttrs(out, total);
  out += ">\n";
  for (size_t i = 0; i < suites.size(); ++i) {
    const JunitSuite& s = suites[i];
    out += "  <testsuite";
    Attr(out, "name", s.name);
    CountAttrs(out, per_suite[i]);
    if (!s.timestamp.empty()) Attr(out, "timestamp", s.timestamp);
    out += ">\n";
    for (const JunitCase& t : s.cases) WriteCase(out, t);
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

Status JunitReport::WriteFile(const std::string& path) const {
  return WriteFileAtomic(path, ToXml());
}

}  // namespace cutover
