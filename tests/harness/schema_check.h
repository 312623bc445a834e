// Test helper: validates fingerprint documents against docs/schemas/fingerprint-1.json with
// tests/probe/validate_schema.py (Debian python3-jsonschema).
#ifndef CUTOVER_TESTS_PROBE_SCHEMA_CHECK_H_
#define CUTOVER_TESTS_PROBE_SCHEMA_CHECK_H_

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/harness/test_env.h"

namespace cutover::testing {

// Writes `doc` to a temporary file and validates it. Sets *skipped when jsonschema is absent.
inline ::testing::AssertionResult ValidatesAgainstFingerprintSchema(const nlohmann::json& doc,
                                                                    bool* skipped) {
  TempDir dir;
  std::string path = dir.Join("doc.json");
  std::ofstream(path) << doc.dump(2);
  std::string cmd = "/usr/bin/python3 " + SourceDir() + "/tests/probe/validate_schema.py " +
                    SourceDir() + "/docs/schemas/fingerprint-1.json " + path;
  std::string out;
  int rc = RunShell(cmd, &out);
  *skipped = rc == 77 || (rc == 127);
  if (*skipped || rc == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "schema validation failed (rc " << rc << "):\n" << out;
}

}  // namespace cutover::testing

#define CUTOVER_EXPECT_VALID_FINGERPRINT(doc)                                                   \
  do {                                                                                          \
    bool cutover_skipped_ = false;                                                              \
    EXPECT_TRUE(::cutover::testing::ValidatesAgainstFingerprintSchema(doc, &cutover_skipped_)); \
    if (cutover_skipped_) CUTOVER_SKIP_OR_FAIL("python3-jsonschema is not installed");          \
  } while (0)

#endif  // CUTOVER_TESTS_PROBE_SCHEMA_CHECK_H_
