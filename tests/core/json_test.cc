#include "core/json.h"

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using nlohmann::json;

TEST(ParseJsonTest, ParsesValidDocument) {
  auto doc = ParseJson(R"({"a": [1, 2.5, "x"], "b": null})", "doc");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ((*doc)["a"][2], "x");
}

TEST(ParseJsonTest, ErrorsCarryLineAndColumn) {
  auto bad = ParseJson("{\n  \"a\": 1,\n  \"b\" 2\n}", "src.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "src.json: line 3, column 7: syntax error while parsing object separator - unexpected "
            "number literal; expected ':'");
  EXPECT_EQ(ParseJson("", "empty.json").status().message(),
            "empty.json: line 1, column 1: syntax error while parsing value - unexpected end of "
            "input; expected '[', '{', or a literal");
  EXPECT_EQ(ParseJson("[1,\n2,\n]", "x").status().message(),
            "x: line 3, column 1: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
}

TEST(ParseJsonTest, RefusesDeepNesting) {
  std::string deep(kMaxJsonDepth + 1, '[');
  EXPECT_EQ(ParseJson(deep, "d").status().message(),
            "d: line 1, column 513: nesting deeper than 512");
  std::string ok_depth = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(ParseJson(ok_depth, "d").ok());
  // Brackets inside strings do not count.
  EXPECT_TRUE(ParseJson("\"" + deep + "\\\"\"", "d").ok());
}

TEST(LoadJsonFileTest, ReadsFilesAndReportsPath) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.Join("a.json"), "{\"schema\": \"cutover.fingerprint/1\"}").ok());
  auto doc = LoadJsonFile(dir.Join("a.json"));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_TRUE(CheckSchema(*doc, "cutover.fingerprint", 1, "a.json").ok());
  ASSERT_TRUE(WriteFileAtomic(dir.Join("b.json"), "[1,").ok());
  EXPECT_EQ(LoadJsonFile(dir.Join("b.json")).status().message(),
            dir.Join("b.json") +
                ": line 1, column 4: syntax error while parsing value - unexpected end of input; "
                "expected '[', '{', or a literal");
  EXPECT_EQ(LoadJsonFile(dir.Join("missing.json")).status().code(), Code::kNotFound);
}

TEST(SchemaTest, MessagesArePinned) {
  auto check = [](const json& doc) {
    return CheckSchema(doc, "cutover.fingerprint", 1, "fp.json").message();
  };
  EXPECT_EQ(check(json::object()), "fp.json: no \"schema\" field");
  EXPECT_EQ(check(json::array()), "fp.json: expected a JSON object, got array");
  EXPECT_EQ(check({{"schema", 1}}), "fp.json: \"schema\" is not a string");
  EXPECT_EQ(check({{"schema", "cutover.diff/1"}}),
            "fp.json: schema cutover.diff/1, expected cutover.fingerprint");
  EXPECT_EQ(check({{"schema", "cutover.fingerprint/2"}}),
            "fp.json: schema cutover.fingerprint/2 is newer than this cutover reads (1); upgrade "
            "cutover");
  for (const char* bad : {"cutover.fingerprint", "cutover.fingerprint/", "cutover.fingerprint/0",
                          "cutover.fingerprint/01", "/1", "cutover.fingerprint/1x"}) {
    EXPECT_EQ(check({{"schema", bad}}),
              std::string("fp.json: malformed schema '") + bad + "' (expected FAMILY/VERSION)");
  }
  EXPECT_EQ(check({{"schema", "cutover.fingerprint/1"}}), "");
  auto v = SchemaVersion({{"schema", "cutover.fingerprint/3"}}, "cutover.fingerprint", 4, "x");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
}

TEST(GettersTest, TypedValuesAndPathAwareErrors) {
  json doc = json::parse(R"({"gpus": [{"uuid": "GPU-1", "mem": 80, "ok": true, "f": 1.5,
                                       "neg": -3, "big": 18446744073709551615, "whole": 2.0}],
                            "a/b": {"~": "tilde"}})");
  EXPECT_EQ(*GetString(doc, "/gpus/0/uuid", "fp"), "GPU-1");
  EXPECT_EQ(*GetInt(doc, "/gpus/0/mem", "fp"), 80);
  EXPECT_EQ(*GetUint(doc, "/gpus/0/mem", "fp"), 80u);
  EXPECT_EQ(*GetInt(doc, "/gpus/0/whole", "fp"), 2);
  EXPECT_EQ(*GetInt(doc, "/gpus/0/neg", "fp"), -3);
  EXPECT_EQ(*GetUint(doc, "/gpus/0/big", "fp"), 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(*GetDouble(doc, "/gpus/0/f", "fp"), 1.5);
  EXPECT_TRUE(*GetBool(doc, "/gpus/0/ok", "fp"));
  EXPECT_EQ(*GetString(doc, "/a~1b/~0", "fp"), "tilde");
  EXPECT_EQ((*GetArray(doc, "/gpus", "fp"))->size(), 1u);
  EXPECT_TRUE((*GetObject(doc, "", "fp"))->is_object());

  EXPECT_EQ(GetString(doc, "/gpus/0/mem", "fp").status().message(),
            "fp: /gpus/0/mem: expected a string, got number");
  EXPECT_EQ(GetString(doc, "/gpus/1/uuid", "fp").status().message(), "fp: /gpus/1/uuid: missing");
  EXPECT_EQ(GetString(doc, "/gpus/01", "fp").status().message(), "fp: /gpus/01: missing");
  EXPECT_EQ(GetInt(doc, "/gpus/0/f", "fp").status().message(),
            "fp: /gpus/0/f: 1.5 is not an integer");
  EXPECT_EQ(GetInt(doc, "/gpus/0/big", "fp").status().message(),
            "fp: /gpus/0/big: 18446744073709551615 is out of range");
  EXPECT_EQ(GetUint(doc, "/gpus/0/neg", "fp").status().message(),
            "fp: /gpus/0/neg: -3 is out of range");
  EXPECT_EQ(GetBool(doc, "/gpus/0/uuid", "fp").status().message(),
            "fp: /gpus/0/uuid: expected a boolean, got string");
  EXPECT_EQ(GetArray(doc, "", "fp").status().message(),
            "fp: (document): expected an array, got object");
  EXPECT_EQ(GetString(doc, "gpus", "fp").status().message(),
            "fp: bad JSON pointer 'gpus': must start with '/'");
  EXPECT_EQ(GetString(doc, "/nope/x~2", "fp").status().message(),
            "fp: bad JSON pointer '/nope/x~2': bad escape '~2'");
  EXPECT_EQ(FindJson(doc, "/gpus/0/nope"), nullptr);
  EXPECT_NE(FindJson(doc, "/gpus/0"), nullptr);
}

TEST(DumpJsonTest, ReplacesInvalidUtf8InsteadOfThrowing) {
  json doc = {{"s", std::string("a\xff"
                                "b")}};
  EXPECT_EQ(DumpJson(doc),
            "{\"s\":\"a\xef\xbf\xbd"
            "b\"}");
}

}  // namespace
}  // namespace cutover
