#include "canary/prometheus.h"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace cutover::canary {
namespace {

// Response shapes as documented for the Prometheus HTTP API (querying/api), values as 2.42
// writes them.

TEST(PromResponseTest, InstantVector) {
  constexpr char kBody[] = R"({"status":"success","data":{"resultType":"vector","result":[
    {"metric":{"__name__":"up","job":"prometheus","instance":"localhost:9090"},
     "value":[1435781451.781,"1"]},
    {"metric":{"__name__":"up","job":"node","instance":"localhost:9100"},
     "value":[1435781451.781,"0"]}]}})";
  Result<PromResult> r = ParsePromResponse(kBody, 200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, PromResultType::kVector);
  ASSERT_EQ(r->series.size(), 2u);
  EXPECT_EQ(r->series[0].labels.at("instance"), "localhost:9090");
  EXPECT_EQ(r->series[1].labels.at("job"), "node");
  ASSERT_EQ(r->series[0].samples.size(), 1u);
  EXPECT_DOUBLE_EQ(r->series[0].samples[0].time, 1435781451.781);
  EXPECT_DOUBLE_EQ(r->series[0].samples[0].value, 1);
  EXPECT_DOUBLE_EQ(r->series[1].samples[0].value, 0);
  EXPECT_EQ(SingleSeriesValues(*r).status().message(),
            "prometheus: the query returned 2 series; aggregate them to one (for example "
            "sum(...))");
}

TEST(PromResponseTest, RangeMatrixWithNanAndInf) {
  constexpr char kBody[] = R"({"status":"success","data":{"resultType":"matrix","result":[
    {"metric":{"server":"dst1"},
     "values":[[1435781430.781,"0.25"],[1435781445.781,"NaN"],[1435781460.781,"+Inf"],
               [1435781475.781,"-Inf"],[1435781490.781,"1e-3"]]}]}})";
  Result<PromResult> r = ParsePromResponse(kBody, 200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, PromResultType::kMatrix);
  Result<std::vector<double>> v = SingleSeriesValues(*r);
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->size(), 5u);
  EXPECT_DOUBLE_EQ((*v)[0], 0.25);
  EXPECT_TRUE(std::isnan((*v)[1]));
  EXPECT_TRUE(std::isinf((*v)[2]) && (*v)[2] > 0);
  EXPECT_TRUE(std::isinf((*v)[3]) && (*v)[3] < 0);
  EXPECT_DOUBLE_EQ((*v)[4], 0.001);
  EXPECT_DOUBLE_EQ(r->series[0].samples[4].time, 1435781490.781);
}

TEST(PromResponseTest, ScalarStringAndEmpty) {
  Result<PromResult> r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1435781451.781,"NaN"]}})",
      200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->type, PromResultType::kScalar);
  ASSERT_EQ(SingleSeriesValues(*r)->size(), 1u);
  EXPECT_TRUE(std::isnan(SingleSeriesValues(*r)->front()));

  r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"string","result":[1435781451.781,"hi"]}})", 200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->string_value, "hi");
  EXPECT_EQ(SingleSeriesValues(*r).status().message(),
            "prometheus: the query returned a string, not numbers");

  // A missing series is success with an empty result: no samples, never an error.
  r = ParsePromResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 200);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(SingleSeriesValues(*r)->empty());
}

TEST(PromResponseTest, WarningsAreKept) {
  Result<PromResult> r = ParsePromResponse(
      R"({"status":"success","warnings":["partial response"],
          "data":{"resultType":"vector","result":[]}})",
      200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->warnings, (std::vector<std::string>{"partial response"}));
}

// Bodies captured from a local Prometheus 2.42.0 (Debian 12), verbatim.
TEST(PromResponseTest, BodiesFromPrometheus242) {
  // vector(0)/vector(0)
  Result<PromResult> r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1796228261.481,"NaN"]}]}})",
      200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::isnan(SingleSeriesValues(*r)->at(0)));
  // 1/0
  r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1796228261.585,"+Inf"]}})",
      200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(SingleSeriesValues(*r)->at(0), INFINITY);
  // histogram_quantile over missing buckets, and a range query over nothing
  EXPECT_TRUE(
      ParsePromResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 200)
          ->series.empty());
  EXPECT_TRUE(
      ParsePromResponse(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", 200)
          ->series.empty());
  // sum(
  r = ParsePromResponse(
      R"({"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error: unclosed left parenthesis"})",
      400);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "prometheus bad_data (HTTP 400): invalid parameter \"query\": 1:5: parse error: "
            "unclosed left parenthesis");
}

TEST(PromErrorTest, ErrorTypesAreClassified) {
  Result<PromResult> r = ParsePromResponse(
      R"({"status":"error","errorType":"bad_data","error":"1:6: parse error: unexpected end of input"})",
      400);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "prometheus bad_data (HTTP 400): 1:6: parse error: unexpected end of input");
  r = ParsePromResponse(
      R"({"status":"error","errorType":"execution","error":"found duplicate series for the match group"})",
      422);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  r = ParsePromResponse(
      R"({"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"})",
      503);
  EXPECT_EQ(r.status().code(), Code::kDeadlineExceeded);
  EXPECT_EQ(r.status().message(),
            "prometheus timeout (HTTP 503): query timed out in expression evaluation");
  for (const char* type : {"canceled", "unavailable", "internal", "not_found"}) {
    r = ParsePromResponse(
        std::string(R"({"status":"error","errorType":")") + type + R"(","error":"x"})", 503);
    EXPECT_EQ(r.status().code(), Code::kUnavailable) << type;
  }
  r = ParsePromResponse(R"({"status":"error"})", 500);
  EXPECT_EQ(r.status().message(), "prometheus unknown (HTTP 500): (no message)");
}

TEST(PromErrorTest, NonJsonAndMalformedBodies) {
  Result<PromResult> r = ParsePromResponse("<html>502 Bad Gateway</html>", 502);
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "prometheus answered (HTTP 502) with a non-JSON body");
  r = ParsePromResponse("not json", 200);
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_EQ(r.status().message(), "prometheus: malformed response: not a JSON object");
  r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}})",
      200);
  EXPECT_EQ(r.status().message(),
            "prometheus: malformed response: data.result[0].value is not [<time>, \"<value>\"]");
  r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x1"]]}]}})",
      200);
  EXPECT_EQ(r.status().message(),
            "prometheus: malformed response: data.result[0].values[0]: bad sample value \"x1\"");
  r = ParsePromResponse(R"({"status":"success","data":{"resultType":"vector","result":[]}})", 502);
  EXPECT_EQ(r.status().message(), "prometheus answered HTTP 502 with a success body");
  r = ParsePromResponse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[]}]}})",
      200);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "prometheus: data.result[0] holds native histogram samples; query a float (e.g. "
            "histogram_quantile) instead");
}

TEST(PromValueTest, ParsesPrometheusFloats) {
  EXPECT_DOUBLE_EQ(*ParsePromValue("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(*ParsePromValue("-2e3"), -2000);
  EXPECT_TRUE(std::isnan(*ParsePromValue("NaN")));
  EXPECT_EQ(*ParsePromValue("+Inf"), INFINITY);
  EXPECT_EQ(*ParsePromValue("-Inf"), -INFINITY);
  EXPECT_EQ(ParsePromValue("").status().message(), "bad sample value \"\"");
  EXPECT_EQ(ParsePromValue("1.5x").status().message(), "bad sample value \"1.5x\"");
  EXPECT_EQ(ParsePromValue("inf").status().message(), "bad sample value \"inf\"");
}

}  // namespace
}  // namespace cutover::canary
