#include "compat/record.h"

#include <gtest/gtest.h>

#include "compat/runner.h"
#include "core/file_util.h"
#include "core/json.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

CompatRecord SmallRecord() {
  CompatRecord rec{.backend = "cpu",
                   .suite = "quick",
                   .accumulate = "fp32",
                   .threads = 2,
                   .created_at = "2026-01-01T00:00:00Z"};
  RunConfig cfg;
  cfg.reps = 3;
  rec.cases.push_back(
      RunCpuCase(*FindOp("softmax"), {"softmax", "fp32", {8, 100}, "row-major", 1}, cfg));
  rec.cases.push_back(
      RunCpuCase(*FindOp("h2d_copy"), {"h2d_copy", "u8", {64}, "row-major", 1}, cfg));
  return rec;
}

TEST(RecordTest, RoundTripsThroughJson) {
  CompatRecord rec = SmallRecord();
  const CaseResult& c = rec.cases[0];
  EXPECT_EQ(c.status, "ok");
  EXPECT_EQ(c.output_count, 800u);
  EXPECT_EQ(c.sample_index.size(), 800u);
  EXPECT_EQ(c.tiles.size(), static_cast<size_t>(kRecordTiles));
  EXPECT_EQ(c.timing.reps_s.size(), 3u);
  EXPECT_TRUE(c.deterministic);
  nlohmann::json doc = RecordToJson(rec);
  EXPECT_EQ(doc["schema"], "cutover.compat-record/1");
  auto back = RecordFromJson(doc, "r.rec");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cases.size(), 2u);
  EXPECT_EQ(back->cases[0].digest, c.digest);
  EXPECT_EQ(back->cases[0].sample_value, c.sample_value);
  EXPECT_EQ(back->cases[0].sample_truth, c.sample_truth);
  EXPECT_EQ(back->cases[1].status, "n/a");
  EXPECT_EQ(RecordToJson(*back), doc);
}

TEST(RecordTest, RecordsValidateAgainstTheSchema) {
  CompatRecord rec = SmallRecord();
  CUTOVER_EXPECT_VALID(RecordToJson(rec), "compat-record-1.json");
  rec.accumulate = "fp64";
  rec.fingerprint = {{"schema", "cutover.fingerprint/1"}};
  CUTOVER_EXPECT_VALID(RecordToJson(rec), "compat-record-1.json");
}

TEST(RecordTest, SchemaRejectsAnOkCaseWithoutTimings) {
  // The schema check itself, so that the checks above are not vacuous.
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc["cases"][0]["timing"]["reps_s"] = nlohmann::json::array();
  bool skipped = false;
  ::testing::AssertionResult valid =
      testing::ValidatesAgainstSchema(doc, "compat-record-1.json", &skipped);
  if (skipped) CUTOVER_SKIP_OR_FAIL("python3-jsonschema is not installed");
  EXPECT_FALSE(valid);
}

TEST(RecordTest, EmptyOrBadTimingsAreInvalid) {
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc["cases"][0]["timing"]["reps_s"] = nlohmann::json::array();
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: case softmax/fp32/8x100/row-major/seed=1: /timing/reps_s is empty "
            "(an ok case has timed runs)");
  doc["cases"][0]["timing"]["reps_s"] = {0.5, nullptr};
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: /timing/reps_s/1: expected a time in seconds");
  doc["cases"][0]["timing"]["reps_s"] = {-1.0};
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().code(), Code::kInvalidArgument);
}

TEST(RecordTest, ACaseIdTwiceIsInvalid) {
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc["cases"].push_back(doc["cases"][0]);
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/2: case softmax/fp32/8x100/row-major/seed=1 appears twice");
}

TEST(RecordTest, TruncatedFileIsAPositionedError) {
  testing::TempDir dir;
  std::string text = DumpJson(RecordToJson(SmallRecord()));
  ASSERT_TRUE(WriteFileAtomic(dir.Join("t.rec"), text.substr(0, 40)).ok());
  auto r = LoadRecord(dir.Join("t.rec"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind(dir.Join("t.rec") + ": line 1, column 41: ", 0), 0u)
      << r.status().message();
}

TEST(RecordTest, SchemaAndFieldErrorsNameTheField) {
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc["schema"] = "cutover.compat-record/2";
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: schema cutover.compat-record/2 is newer than this cutover reads (1); "
            "upgrade cutover");
  doc = RecordToJson(SmallRecord());
  doc["cases"][0].erase("digest");
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(), "r.rec: /cases/0: /digest: missing");
  doc = RecordToJson(SmallRecord());
  doc["cases"][0]["shape"][0] = 9;
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: case softmax/fp32/8x100/row-major/seed=1 does not match its "
            "fields (softmax/fp32/9x100/row-major/seed=1)");
}

}  // namespace
}  // namespace cutover
