// Test helper: validates result documents against their JSON Schema in docs/schemas/ with
// tests/harness/validate_schema.py (Debian python3-jsonschema).
//
//   CUTOVER_EXPECT_VALID(doc, "report-2.json");
#ifndef CUTOVER_TESTS_HARNESS_SCHEMA_CHECK_H_
#define CUTOVER_TESTS_HARNESS_SCHEMA_CHECK_H_

#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/harness/test_env.h"

namespace cutover::testing {

// Writes `doc` to a temporary file and validates it against docs/schemas/`schema_file`. Sets
// *skipped when jsonschema is absent.
inline ::testing::AssertionResult ValidatesAgainstSchema(const nlohmann::json& doc,
                                                         const std::string& schema_file,
                                                         bool* skipped) {
  TempDir dir;
  std::string path = dir.Join("doc.json");
  std::ofstream(path) << doc.dump(2);
  std::string cmd = "/usr/bin/python3 " + SourceDir() + "/tests/harness/validate_schema.py " +
                    SourceDir() + "/docs/schemas/" + schema_file + " " + path;
  std::string out;
  int rc = RunShell(cmd, &out);
  *skipped = rc == 77 || rc == 127;
  if (*skipped || rc == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << schema_file << " validation failed (rc " << rc
                                       << "):\n"
                                       << out;
}

}  // namespace cutover::testing

#define CUTOVER_EXPECT_VALID(doc, schema_file)                                                  \
  do {                                                                                          \
    bool cutover_skipped_ = false;                                                              \
    EXPECT_TRUE(                                                                                \
        ::cutover::testing::ValidatesAgainstSchema(doc, schema_file, &cutover_skipped_));       \
    if (cutover_skipped_) CUTOVER_SKIP_OR_FAIL("python3-jsonschema is not installed");          \
  } while (0)

#define CUTOVER_EXPECT_VALID_FINGERPRINT(doc) CUTOVER_EXPECT_VALID(doc, "fingerprint-1.json")

#endif  // CUTOVER_TESTS_HARNESS_SCHEMA_CHECK_H_
