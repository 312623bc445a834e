// A JUnit XML writer, for CI systems that show test results (GitLab, Jenkins, GitHub actions):
// compat verdicts and assessment findings are written as suites of test cases.
//
//   JunitReport r{.name = "cutover compat"};
//   JunitSuite& s = r.suites.emplace_back(JunitSuite{.name = "gemm"});
//   s.cases.push_back({.classname = "gemm.fp16", .name = "4096x4096", .time_s = 0.12});
//   Status st = r.WriteFile("compat.xml");
//
// All text is made safe for XML 1.0: & < > " ' are escaped; bytes that are not valid UTF-8 and
// characters XML 1.0 forbids (control characters other than tab, newline and carriage return,
// U+FFFE, U+FFFF) become U+FFFD. Counts (tests, failures, errors, skipped) and times in the
// attributes are computed from the cases.
//
// Thread-safety: plain values; no shared state.
#ifndef CUTOVER_CORE_JUNIT_H_
#define CUTOVER_CORE_JUNIT_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover {

enum class JunitOutcome {
  kPassed,
  kFailed,   // <failure>: the check ran and did not hold
  kError,    // <error>: the check could not run
  kSkipped,  // <skipped>
};

struct JunitCase {
  std::string classname;
  std::string name;
  double time_s = 0;
  JunitOutcome outcome = JunitOutcome::kPassed;
  std::string message;  // failure/error/skipped message attribute (one line)
  std::string text;     // failure/error body (details, may span lines)
  std::string system_out;
};

struct JunitSuite {
  std::string name;
  std::string timestamp;  // ISO 8601, optional
  std::vector<JunitCase> cases;
};

struct JunitReport {
  std::string name;
  std::vector<JunitSuite> suites;

  // The document: <?xml ...?><testsuites ...><testsuite ...><testcase .../>...
  std::string ToXml() const;

  // Writes ToXml() to `path` atomically (core/file_util.h WriteFileAtomic).
  Status WriteFile(const std::string& path) const;
};

// `text` made safe as XML character data or attribute value (see the header comment); tab,
// newline and carriage return are written as character references in attributes.
std::string XmlEscape(std::string_view text, bool attribute = false);

}  // namespace cutover

#endif  // CUTOVER_CORE_JUNIT_H_
