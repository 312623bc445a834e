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
            "r.rec: /cases/0: /timing/reps_s/1: expected a time in seconds above 0 and at most "
            "86400, got null");
  doc["cases"][0]["timing"]["reps_s"] = {-1.0};
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: /timing/reps_s/0: expected a time in seconds above 0 and at most "
            "86400, got -1");
  // Finite but no measurement: it would overflow the spread statistics.
  doc["cases"][0]["timing"]["reps_s"] = {0.5, 1e308};
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: /timing/reps_s/1: expected a time in seconds above 0 and at most "
            "86400, got 1e+308");
  doc["cases"][0]["timing"]["reps_s"] = {0.0};
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().code(), Code::kInvalidArgument);
  doc["cases"][0]["timing"]["reps_s"] = {0.5};
  doc["cases"][0]["timing"]["median_s"] = -0.5;
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: /timing/median_s: expected a time in seconds above 0 and at most "
            "86400, got -0.5");
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

// A record with the new header fields (calibration, build type, the cuda-only TF32 and SM
// count) and a stress case round-trips and validates against the schema.
TEST(RecordTest, CalibrationCudaFieldsAndDistRoundTrip) {
  CompatRecord rec = SmallRecord();
  rec.build_type = "Release";
  rec.calibration = {.measured = true,
                     .copy_gbps = 12.5,
                     .gemm_gflops = 40.25,
                     .copy_bytes = 8.0 * (1 << 24),
                     .gemm_shape = {768, 768, 768},
                     .seconds = 0.5};
  RunConfig cfg;
  cfg.reps = 2;
  rec.cases.push_back(
      RunCpuCase(*FindOp("gemm"), {"gemm", "bf16", {16, 16, 64}, "row-major", 1, "stress"}, cfg));
  rec.cases.back().timing.fraction_of_ceiling = 0.125;
  nlohmann::json doc = RecordToJson(rec);
  EXPECT_EQ(doc["cases"][2]["id"], "gemm/bf16/16x16x64/row-major/dist=stress/seed=1");
  EXPECT_EQ(doc["cases"][2]["dist"], "stress");
  EXPECT_EQ(doc["fp64_accumulate"], false);
  EXPECT_FALSE(doc.contains("tf32_allowed"));  // a cpu record leaves the cuda fields out
  CUTOVER_EXPECT_VALID(doc, "compat-record-1.json");
  auto back = RecordFromJson(doc, "r.rec");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->build_type, "Release");
  EXPECT_TRUE(back->calibration.measured);
  EXPECT_EQ(back->calibration.gemm_gflops, 40.25);
  EXPECT_EQ(back->calibration.gemm_shape, (std::vector<int64_t>{768, 768, 768}));
  EXPECT_EQ(back->cases[2].spec.dist, "stress");
  EXPECT_EQ(back->cases[2].timing.fraction_of_ceiling, 0.125);
  EXPECT_EQ(back->tf32_allowed, -1);
  EXPECT_EQ(RecordToJson(*back), doc);

  rec.backend = "cuda";
  rec.tf32_allowed = 0;
  rec.sm_count = 132;
  doc = RecordToJson(rec);
  EXPECT_EQ(doc["tf32_allowed"], false);
  EXPECT_EQ(doc["sm_count"], 132);
  CUTOVER_EXPECT_VALID(doc, "compat-record-1.json");
  back = RecordFromJson(doc, "r.rec");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->tf32_allowed, 0);
  EXPECT_EQ(back->sm_count, 132);
}

TEST(RecordTest, BadDistAndInconsistentAccumulateAreInvalid) {
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc["cases"][0]["dist"] = "cauchy";
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: /dist: unknown input distribution 'cauchy' (use normal, uniform, "
            "stress)");
  doc = RecordToJson(SmallRecord());
  doc["cases"][0]["dist"] = "stress";  // the ID says normal
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /cases/0: case softmax/fp32/8x100/row-major/seed=1 does not match its "
            "fields (softmax/fp32/8x100/row-major/dist=stress/seed=1)");
  doc = RecordToJson(SmallRecord());
  doc["fp64_accumulate"] = true;
  EXPECT_EQ(RecordFromJson(doc, "r.rec").status().message(),
            "r.rec: /fp64_accumulate: does not match /accumulate 'fp32'");
}

// Records written before the dist field existed (no "dist", no calibration) still read.
TEST(RecordTest, ARecordWithoutTheNewFieldsReads) {
  nlohmann::json doc = RecordToJson(SmallRecord());
  doc.erase("fp64_accumulate");
  doc.erase("build_type");
  doc["cases"][0].erase("dist");
  doc["cases"][0]["timing"].erase("fraction_of_ceiling");
  auto back = RecordFromJson(doc, "r.rec");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->cases[0].spec.dist, "normal");
  EXPECT_FALSE(back->calibration.measured);
  CUTOVER_EXPECT_VALID(doc, "compat-record-1.json");
}

}  // namespace
}  // namespace cutover
