#include "canary/mirror_compare.h"

#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/harness/schema_check.h"

namespace cutover::canary {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

MirrorResponse Ok(std::string body) { return {.status = 200, .body = std::move(body)}; }

// The paths that differ between a and b.
std::vector<std::string> Diffs(const std::string& a, const std::string& b,
                               const MirrorCompareOptions& o = {}) {
  std::vector<std::string> out;
  for (const FieldComparison& c : CompareResponses(Ok(a), Ok(b), o)) {
    if (c.differs) out.push_back(c.path);
  }
  return out;
}

std::vector<std::string> Paths(const std::string& body) {
  std::vector<std::string> out;
  for (const auto& [path, value] : FlattenResponse(Ok(body)).fields) out.push_back(path);
  return out;
}

const MirrorFieldResult* Field(const MirrorSummary& s, const std::string& path) {
  for (const MirrorFieldResult& f : s.fields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

TEST(MirrorCompare, FlattensNestedObjectsAndArraysByIndex) {
  EXPECT_THAT(
      Paths(R"({"choices":[{"text":"a","logprobs":[[0.5,1],[2]]}],"usage":{"total_tokens":7}})"),
      ElementsAre("choices[0].logprobs[0][0]", "choices[0].logprobs[0][1]",
                  "choices[0].logprobs[1][0]", "choices[0].text", "usage.total_tokens"));
}

TEST(MirrorCompare, QuotesKeysThatAreNotBareWords) {
  EXPECT_THAT(Paths(R"({"a.b":1,"x":{"<status>":2,"":3}})"),
              ElementsAre(R"(["a.b"])", R"(x[""])", R"(x["<status>"])"));
}

TEST(MirrorCompare, RootScalarAndEmptyContainersAreFields) {
  EXPECT_THAT(Paths("42"), ElementsAre("<value>"));
  EXPECT_THAT(Paths(R"({"a":{},"b":[]})"), ElementsAre("a", "b"));
  EXPECT_THAT(Diffs("{}", "[]"), ElementsAre("<value>"));
  EXPECT_THAT(Diffs(R"({"a":{}})", R"({"a":[]})"), ElementsAre("a"));
}

TEST(MirrorCompare, IdenticalBodiesHaveNoDifference) {
  std::string body = R"({"id":"x","v":[1.5,{"w":null,"t":true}]})";
  EXPECT_THAT(Diffs(body, body), ElementsAre());
  std::vector<FieldComparison> all = CompareResponses(Ok(body), Ok(body), {});
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[0].path, "<status>");
}

TEST(MirrorCompare, NumbersWithinTheToleranceAreEqual) {
  MirrorCompareOptions o{.rel_tol = 1e-3, .abs_tol = 0};
  // |a-b| = 1e-3 * max(|a|,|b|) exactly (in binary: 1024 and 1025 vs 1024*1.0009765625).
  EXPECT_THAT(Diffs(R"({"x":1024.0})", R"({"x":1025.0})", {.rel_tol = 1.0 / 1025, .abs_tol = 0}),
              ElementsAre());
  EXPECT_THAT(Diffs(R"({"x":1024.0})", R"({"x":1025.0})", {.rel_tol = 0.9 / 1025, .abs_tol = 0}),
              ElementsAre("x"));
  // Drift in the last bits of a float32 output.
  EXPECT_THAT(Diffs(R"({"x":0.7853981633974483})", R"({"x":0.78539818525314331})", o),
              ElementsAre());
  EXPECT_THAT(Diffs(R"({"x":0.75})", R"({"x":0.7875})", o), ElementsAre("x"));
}

TEST(MirrorCompare, AbsoluteToleranceCoversValuesNearZero) {
  EXPECT_THAT(Diffs(R"({"x":0.0})", R"({"x":5e-7})", {.rel_tol = 1e-3, .abs_tol = 1e-6}),
              ElementsAre());
  EXPECT_THAT(Diffs(R"({"x":0.0})", R"({"x":5e-7})", {.rel_tol = 1e-3, .abs_tol = 1e-7}),
              ElementsAre("x"));
  EXPECT_THAT(Diffs(R"({"x":-0.0})", R"({"x":0.0})", {.rel_tol = 0, .abs_tol = 0}), ElementsAre());
}

TEST(MirrorCompare, IntegerTokensCompareExactly) {
  EXPECT_THAT(Diffs(R"({"tokens":100000})", R"({"tokens":100001})", {.rel_tol = 1e-3}),
              ElementsAre("tokens"));
  // An integer beside a float is a number like any other.
  EXPECT_THAT(Diffs(R"({"x":2})", R"({"x":2.0000001})", {.rel_tol = 1e-3}), ElementsAre());
  EXPECT_THAT(Diffs(R"({"x":18446744073709551615})", R"({"x":18446744073709551615})"),
              ElementsAre());
  EXPECT_THAT(Diffs(R"({"x":-1})", R"({"x":18446744073709551615})"), ElementsAre("x"));
}

TEST(MirrorCompare, RelativeDifferenceIsReportedForNumbers) {
  std::vector<FieldComparison> c =
      CompareResponses(Ok(R"({"x":100.0,"s":"a"})"), Ok(R"({"x":105.0,"s":"a"})"), {});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[2].path, "x");
  ASSERT_TRUE(c[2].rel_diff.has_value());
  EXPECT_NEAR(*c[2].rel_diff, 5.0 / 105.0, 1e-12);
  EXPECT_FALSE(c[1].rel_diff.has_value());
  // Opposite signs near the double range: scaled, not inf.
  c = CompareResponses(Ok("[1e308]"), Ok("[-1e308]"), {});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_TRUE(c[1].differs);
  EXPECT_DOUBLE_EQ(*c[1].rel_diff, 2.0);
}

TEST(MirrorCompare, ANumberBeyondTheDoubleRangeMakesTheBodyBytes) {
  // The JSON parser refuses 1e400, so no infinity reaches the tolerance: the bodies compare as
  // bytes.
  EXPECT_FALSE(FlattenResponse(Ok("[1e400]")).is_json);
  EXPECT_THAT(Diffs("[1e400]", "[1e400]"), ElementsAre());
  EXPECT_THAT(Diffs("[1e400]", "[2e400]"), ElementsAre("<body>"));
}

TEST(MirrorCompare, TypeChangesAndMissingFieldsDiffer) {
  EXPECT_THAT(Diffs(R"({"x":1})", R"({"x":"1"})"), ElementsAre("x"));
  EXPECT_THAT(Diffs(R"({"x":null})", R"({"x":false})"), ElementsAre("x"));
  EXPECT_THAT(Diffs(R"({"x":1,"y":2})", R"({"x":1})"), ElementsAre("y"));
  EXPECT_THAT(Diffs(R"({"x":1})", R"({"x":1,"z":[3]})"), ElementsAre("z[0]"));
  // An object turned array: each side's leaves are missing on the other.
  EXPECT_THAT(Diffs(R"({"a":{"b":1}})", R"({"a":[1]})"), ElementsAre("a.b", "a[0]"));
  EXPECT_THAT(Diffs(R"(["a","b"])", R"(["a","c","d"])"), ElementsAre("[1]", "[2]"));
}

TEST(MirrorCompare, StringsBooleansAndNullAreExact) {
  EXPECT_THAT(Diffs(R"({"t":"Hello"})", R"({"t":"hello"})"), ElementsAre("t"));
  EXPECT_THAT(Diffs(R"({"t":true})", R"({"t":false})"), ElementsAre("t"));
  EXPECT_THAT(Diffs(R"({"t":null})", R"({"t":null})"), ElementsAre());
}

TEST(MirrorCompare, NonJsonBodiesCompareBytewiseAsOneField) {
  EXPECT_THAT(Diffs("plain text", "plain text"), ElementsAre());
  EXPECT_THAT(Diffs("plain text", "plain text "), ElementsAre("<body>"));
  // One side JSON, the other not: the body as bytes.
  EXPECT_THAT(Diffs(R"({"a":1})", "<html>"), ElementsAre("<body>"));
  EXPECT_THAT(Diffs("", ""), ElementsAre());
  EXPECT_FALSE(FlattenResponse(Ok("")).is_json);
  EXPECT_FALSE(FlattenResponse(Ok(R"({"a":)")).is_json);
}

TEST(MirrorCompare, StatusIsAField) {
  std::vector<FieldComparison> c =
      CompareResponses({.status = 200, .body = "{}"}, {.status = 503, .body = "{}"}, {});
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].path, "<status>");
  EXPECT_TRUE(c[0].differs);
  EXPECT_FALSE(c[1].differs);
}

TEST(MirrorCompare, IgnoredFieldsAndTheirSubtreesAreLeftOut) {
  MirrorCompareOptions o{.ignore = {"id", "choices[*].logprobs", "<status>"}};
  std::string a =
      R"({"id":"1","idx":1,"choices":[{"logprobs":[0.1],"text":"a"},{"logprobs":{"x":1}}]})";
  std::string b =
      R"({"id":"2","idx":2,"choices":[{"logprobs":[0.2],"text":"b"},{"logprobs":{"x":2}}]})";
  EXPECT_THAT(Diffs(a, b, o), ElementsAre("choices[0].text", "idx"));
  std::vector<FieldComparison> c =
      CompareResponses({.status = 200, .body = "x"}, {.status = 500, .body = "x"}, o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].path, "<body>");
}

TEST(MirrorCompare, IgnorePatternMatching) {
  EXPECT_TRUE(IgnorePatternMatches("usage", "usage"));
  EXPECT_TRUE(IgnorePatternMatches("usage", "usage.total_tokens"));
  EXPECT_TRUE(IgnorePatternMatches("usage", "usage[3]"));
  EXPECT_FALSE(IgnorePatternMatches("usage", "usage_2"));
  EXPECT_FALSE(IgnorePatternMatches("usage.total", "usage"));
  EXPECT_TRUE(IgnorePatternMatches("a[*].b", "a[12].b"));
  EXPECT_FALSE(IgnorePatternMatches("a[*].b", "a[].b"));
  EXPECT_FALSE(IgnorePatternMatches("a[*].b", "a[\"x\"].b"));
  EXPECT_TRUE(IgnorePatternMatches("a[1]", "a[1].c"));
  EXPECT_FALSE(IgnorePatternMatches("a[1]", "a[12]"));
}

TEST(MirrorCompare, OptionErrorsNameTheFlag) {
  auto message = [](MirrorCompareOptions o) { return ValidateMirrorCompareOptions(o).message(); };
  EXPECT_EQ(message({}), "");
  EXPECT_EQ(message({.rel_tol = -1}), "mirror: --rel-tol must be a finite number >= 0, got -1");
  EXPECT_EQ(message({.abs_tol = std::numeric_limits<double>::infinity()}),
            "mirror: --abs-tol must be a finite number >= 0, got inf");
  EXPECT_EQ(message({.max_diff_rate = 1.5}),
            "mirror: --max-diff-rate must be between 0 and 1, got 1.5");
  EXPECT_EQ(message({.noisy_rate = -0.1}),
            "mirror: --noisy-rate must be between 0 and 1, got -0.1");
  EXPECT_EQ(message({.ignore = {"a", ""}}), "mirror: --ignore needs a field path, got ''");
  EXPECT_EQ(message({.max_fields = 0}), "mirror: --max-fields must be >= 1");
  EXPECT_EQ(ValidateMirrorCompareOptions({.rel_tol = -1}).code(), Code::kInvalidArgument);
}

// Two primaries that differ in a request id every time and a candidate whose score is wrong on
// one request in ten, and whose latency field the primaries disagree on one request in four.
TEST(MirrorAggregator, SubtractsTheNoiseOfTwoPrimaries) {
  MirrorAggregator agg({.max_diff_rate = 0.05, .noisy_rate = 0.2});
  for (int i = 0; i < 100; ++i) {
    std::string n = std::to_string(i);
    std::string slow = i % 4 == 0 ? "1" : "0";
    std::string s_tag = i % 20 == 0 ? "b" : "a";
    std::string c_tag = i % 20 == 5 ? "b" : "a";
    std::string score = i % 10 == 0 ? "0.525" : "0.5000001";
    MirrorResponse p = Ok(R"({"id":"p)" + n + R"(","slow":0,"score":0.5,"tag":"a"})");
    MirrorResponse s =
        Ok(R"({"id":"s)" + n + R"(","slow":)" + slow + R"(,"score":0.5,"tag":")" + s_tag + "\"}");
    MirrorResponse c =
        Ok(R"({"id":"c)" + n + R"(","slow":0,"score":)" + score + R"(,"tag":")" + c_tag + "\"}");
    agg.Add(p, s, c);
  }
  MirrorSummary s = agg.Summarize();
  EXPECT_EQ(s.compared, 100);
  EXPECT_EQ(s.verdict, MirrorVerdict::kFail);
  EXPECT_EQ(s.failing_fields, 1);
  EXPECT_EQ(s.noisy_fields, 2);
  ASSERT_EQ(s.fields.size(), 5u);
  // Order: the failing field, then noisy ones by noise rate, then the rest.
  EXPECT_EQ(s.fields[0].path, "score");
  EXPECT_EQ(s.fields[1].path, "id");
  EXPECT_EQ(s.fields[2].path, "slow");

  const MirrorFieldResult* score = Field(s, "score");
  EXPECT_EQ(score->comparisons, 100);
  EXPECT_EQ(score->noise_diffs, 0);
  EXPECT_EQ(score->candidate_diffs, 10);
  EXPECT_DOUBLE_EQ(score->excess_rate, 0.10);
  EXPECT_EQ(score->verdict, FieldVerdict::kDiffers);
  EXPECT_NEAR(*score->max_rel_diff, 0.025 / 0.525, 1e-12);

  const MirrorFieldResult* id = Field(s, "id");
  EXPECT_DOUBLE_EQ(id->noise_rate, 1.0);
  EXPECT_DOUBLE_EQ(id->excess_rate, 0.0);
  EXPECT_EQ(id->verdict, FieldVerdict::kNoisy);
  EXPECT_FALSE(id->max_rel_diff.has_value());

  EXPECT_DOUBLE_EQ(Field(s, "slow")->noise_rate, 0.25);
  EXPECT_EQ(Field(s, "slow")->verdict, FieldVerdict::kNoisy);

  // The candidate's "tag" differs 5% of the time, exactly as often as the secondary's: no excess.
  const MirrorFieldResult* tag = Field(s, "tag");
  EXPECT_DOUBLE_EQ(tag->noise_rate, 0.05);
  EXPECT_DOUBLE_EQ(tag->candidate_rate, 0.05);
  EXPECT_DOUBLE_EQ(tag->excess_rate, 0.0);
  EXPECT_EQ(tag->verdict, FieldVerdict::kOk);
  EXPECT_EQ(Field(s, "<status>")->candidate_diffs, 0);
}

TEST(MirrorAggregator, ExcessAtTheThresholdPasses) {
  MirrorAggregator agg({.max_diff_rate = 0.25});
  for (int i = 0; i < 4; ++i) {
    agg.Add(Ok("[1]"), Ok("[1]"), Ok(i == 0 ? "[2]" : "[1]"));
  }
  MirrorSummary s = agg.Summarize();
  EXPECT_DOUBLE_EQ(Field(s, "[0]")->excess_rate, 0.25);
  EXPECT_EQ(Field(s, "[0]")->verdict, FieldVerdict::kOk);
  EXPECT_EQ(s.verdict, MirrorVerdict::kPass);
  agg.Add(Ok("[1]"), Ok("[1]"), Ok("[3]"));
  EXPECT_EQ(agg.Summarize().verdict, MirrorVerdict::kFail);
}

TEST(MirrorAggregator, AFieldOnlyTheCandidateHasCounts) {
  MirrorAggregator agg({});
  agg.Add(Ok(R"({"a":1})"), Ok(R"({"a":1})"), Ok(R"({"a":1,"debug":"x"})"));
  MirrorSummary s = agg.Summarize();
  const MirrorFieldResult* debug = Field(s, "debug");
  ASSERT_NE(debug, nullptr);
  EXPECT_EQ(debug->comparisons, 1);
  EXPECT_EQ(debug->noise_diffs, 0);
  EXPECT_EQ(debug->candidate_diffs, 1);
  EXPECT_EQ(debug->verdict, FieldVerdict::kDiffers);
}

TEST(MirrorAggregator, ErrorStatusFromTheCandidateIsADifference) {
  MirrorAggregator agg({});
  agg.Add(Ok(R"({"a":1})"), Ok(R"({"a":1})"), {.status = 500, .body = "oops"});
  MirrorSummary s = agg.Summarize();
  EXPECT_EQ(Field(s, "<status>")->candidate_diffs, 1);
  EXPECT_EQ(Field(s, "<body>")->candidate_diffs, 1);
  EXPECT_EQ(Field(s, "a")->candidate_diffs, 0);  // compared only between the two primaries
  EXPECT_EQ(s.verdict, MirrorVerdict::kFail);
}

TEST(MirrorAggregator, CapsTheFieldsItTracks) {
  MirrorAggregator agg({.max_fields = 10});
  std::string big = "[";
  for (int i = 0; i < 1000; ++i) big += (i ? "," : "") + std::to_string(i);
  big += "]";
  agg.Add(Ok(big), Ok(big), Ok(big));
  agg.Add(Ok(big), Ok(big), Ok(big));
  EXPECT_EQ(agg.tracked_fields(), 10u);
  MirrorSummary s = agg.Summarize();
  EXPECT_EQ(s.fields.size(), 10u);
  // 1001 fields per request (with <status>), 10 tracked, twice.
  EXPECT_EQ(s.untracked_observations, 2 * (1001 - 10));
  EXPECT_EQ(s.verdict, MirrorVerdict::kPass);
}

TEST(MirrorAggregator, NothingComparedIsInconclusive) {
  MirrorAggregator agg({});
  EXPECT_EQ(agg.Summarize().verdict, MirrorVerdict::kInconclusive);
  MirrorRunInfo run{.primary = "http://127.0.0.1:1",
                    .secondary = "http://127.0.0.1:2",
                    .candidate = "http://127.0.0.1:3"};
  EXPECT_THAT(MirrorReportTable(run, agg.Summarize()),
              HasSubstr("verdict: inconclusive (no request was compared)\n"));
}

TEST(MirrorReport, DocumentValidatesAndTableNamesTheFailingField) {
  MirrorCompareOptions o{.ignore = {"created"}};
  MirrorAggregator agg(o);
  for (int i = 0; i < 10; ++i) {
    agg.Add(Ok(R"({"id":)" + std::to_string(i) + R"(,"y":1.0})"), Ok(R"({"id":-1,"y":1.0})"),
            Ok(R"({"id":)" + std::to_string(i) + R"(,"y":)" + (i < 3 ? "1.2" : "1.0") + "}"));
  }
  MirrorSummary s = agg.Summarize();
  MirrorRunInfo run{.primary = "http://127.0.0.1:1",
                    .secondary = "http://127.0.0.1:2",
                    .candidate = "http://127.0.0.1:3",
                    .methods = {"GET", "HEAD"},
                    .started_at = "2026-12-05T07:00:00Z",
                    .finished_at = "2026-12-05T07:01:00Z",
                    .traffic = {.received = 10, .mirrored = 10, .compared = 10}};
  nlohmann::json doc = MirrorReportJson(run, o, s);
  EXPECT_EQ(doc["schema"], "cutover.mirror-report/1");
  EXPECT_EQ(doc["verdict"], "fail");
  EXPECT_EQ(doc["fields"][0]["field"], "y");
  EXPECT_EQ(doc["fields"][0]["candidate_diffs"], 3);
  EXPECT_EQ(doc["fields"][1]["field"], "id");
  EXPECT_EQ(doc["fields"][1]["verdict"], "noisy");
  CUTOVER_EXPECT_VALID(doc, "mirror-report-1.json");

  std::string table = MirrorReportTable(run, s);
  EXPECT_THAT(table, HasSubstr("requests 10, mirrored 10, compared 10, dropped 0"));
  EXPECT_THAT(table, HasSubstr("  differs  30.00%   30.00%     0.00%    0.166667  y\n"));
  EXPECT_THAT(table, HasSubstr("verdict: fail\n"));
  // Fields the candidate never got wrong stay out of the table.
  EXPECT_THAT(table, ::testing::Not(HasSubstr("<status>")));
}

}  // namespace
}  // namespace cutover::canary
