// Test environment helpers shared by every test binary.
//
// The skip-or-fail rule: a test that cannot get what it needs (a server binary, a GPU) skips with
// a clear message on a developer's machine, but when CI=true the same condition is a failure, so
// nothing is silently skipped in CI for want of a server. Conditions that cannot hold in CI by
// design (no GPU) use GTEST_SKIP directly, with the reason.
#ifndef CUTOVER_TESTS_HARNESS_TEST_ENV_H_
#define CUTOVER_TESTS_HARNESS_TEST_ENV_H_

#include <string>

#include <gtest/gtest.h>

namespace cutover::testing {

// True in a build with AddressSanitizer (-DCUTOVER_SANITIZE=address,...): its figures of time and
// memory are the instrumentation's, so tests of such budgets skip them.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// True when the environment variable CI is "true" (or "1").
bool InCi();

// The source tree (for fixtures) and the build tree (for the cutover binary).
std::string SourceDir();
std::string BinaryDir();

// A fresh directory under $TMPDIR, removed (recursively) when the object is destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs `cmd` with /bin/sh; returns its exit status (or -1), and its stdout+stderr in *output.
int RunShell(const std::string& cmd, std::string* output = nullptr);

}  // namespace cutover::testing

// Skips the test, or fails it when CI=true. Use for a missing server or tool.
#define CUTOVER_SKIP_OR_FAIL(msg)                                                  \
  do {                                                                             \
    if (::cutover::testing::InCi()) {                                              \
      FAIL() << "required in CI: " << (msg);                                       \
    } else {                                                                       \
      GTEST_SKIP() << (msg);                                                       \
    }                                                                              \
  } while (0)

#endif  // CUTOVER_TESTS_HARNESS_TEST_ENV_H_
