#include "canary/measure.h"

#include <map>

#include <gtest/gtest.h>

#include "tests/canary/fakes.h"

namespace cutover::canary {
namespace {

using testing::FakeMetrics;

RolloutSpec Spec(const std::string& policy = "  failure_limit: 2\n") {
  std::string text =
      "apiVersion: cutover/v1\n"
      "name: past\n"
      "traffic: {provider: haproxy, socket: /x.sock, backend: infer, baseline: [s1], "
      "canary: [d1]}\n"
      "metrics: {provider: prometheus, url: 'http://127.0.0.1:1', step: 1s}\n"
      "steps: [{weight: 10}, {weight: 100}]\n"
      "analysis:\n"
      "  interval: 10s\n"
      "  min_requests: 10\n"
      "  requests: 'sum(requests{s=~\"{{servers}}\"})'\n"
      "  inconclusive_limit: 3\n" +
      policy +
      "  checks:\n"
      "    - {name: error-rate, query: 'err{s=~\"{{servers}}\"}', max: 0.01}\n";
  auto spec = ParseSpec(text, "past.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.value_or(RolloutSpec{});
}

// The canary's error rate is `bad` for instant queries at or after `bad_from`, else `good`.
class StepMetrics : public FakeMetrics {
 public:
  Result<PromResult> Query(const std::string& expr, double time) override {
    canary_value = time >= bad_from ? bad : good;
    times.push_back(time);
    return FakeMetrics::Query(expr, time);
  }
  double bad_from = 1e18;
  double good = 0.001;
  double bad = 0.2;
  std::vector<double> times;
};

TEST(AnalyzePastTest, HealthyRangeAdvancesWithEveryWindowMeasured) {
  StepMetrics m;
  auto a = AnalyzePast(Spec(), m, 1000, 1035);  // three whole windows; the last 5 s are left out
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->intervals.size(), 3u);
  EXPECT_EQ(a->passes, 3);
  EXPECT_EQ(a->outcome, Decision::kAdvance);
  EXPECT_EQ(a->stopped_at, -1);
  EXPECT_DOUBLE_EQ(a->intervals[2].start, 1020);
  EXPECT_DOUBLE_EQ(a->intervals[2].end, 1030);
  // Two request queries and the check, each at its window's end.
  EXPECT_EQ(m.times, (std::vector<double>{1010, 1010, 1010, 1020, 1020, 1020, 1030, 1030, 1030}));
  // Rows: requests per side, then the check.
  ASSERT_EQ(a->intervals[0].rows.size(), 3u);
  EXPECT_EQ(a->intervals[0].rows[2].check, "error-rate");
  EXPECT_EQ(a->intervals[0].rows[2].verdict, "pass");
  EXPECT_DOUBLE_EQ(a->intervals[0].rows[2].window_start, 1000);
}

TEST(AnalyzePastTest, BadWindowsRollBackAtTheFailureLimitAndLaterWindowsAreStillReported) {
  StepMetrics m;
  m.bad_from = 1025;  // windows ending at 1030 and later fail
  auto a = AnalyzePast(Spec("  failure_limit: 2\n"), m, 1000, 1060);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->intervals.size(), 6u);
  EXPECT_EQ(a->passes, 2);
  EXPECT_EQ(a->failures, 4);
  EXPECT_EQ(a->outcome, Decision::kRollback);
  EXPECT_EQ(a->stopped_at, 3) << "the second failed window reaches failure_limit 2";
  EXPECT_NE(a->reason.find("fail"), std::string::npos) << a->reason;
  nlohmann::json doc = PastAnalysisJson(Spec(), 1000, 1060, *a);
  EXPECT_EQ(doc["schema"], "cutover.canary-analysis/1");
  EXPECT_EQ(doc["outcome"], "rollback");
  EXPECT_EQ(doc["stopped_at"], 3);
  EXPECT_EQ(doc["counts"]["fail"], 4);
  EXPECT_EQ(doc["intervals"][3]["verdict"], "fail");
  EXPECT_EQ(doc["intervals"][0]["checks"][2]["check"], "error-rate");
}

TEST(AnalyzePastTest, NoTrafficIsInconclusiveNeverAnAdvance) {
  StepMetrics m;
  m.canary_requests = 0;
  auto a = AnalyzePast(Spec("  on_inconclusive: pause\n"), m, 1000, 1050);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->passes, 0);
  EXPECT_EQ(a->inconclusives, 5);
  EXPECT_EQ(a->outcome, Decision::kPause);
  EXPECT_EQ(a->stopped_at, 2) << "inconclusive_limit 3";
}

TEST(AnalyzePastTest, TransientErrorsAreErroredWindowsAndABadQueryIsASpecError) {
  StepMetrics m;
  m.error = Status::Unavailable("prometheus: connection refused");
  auto a = AnalyzePast(Spec(), m, 1000, 1020);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->errors, 2);
  EXPECT_NE(a->outcome, Decision::kAdvance);
  m.error = Status::InvalidArgument("prometheus: bad_data: parse error");
  a = AnalyzePast(Spec(), m, 1000, 1020);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->intervals.empty());
  EXPECT_NE(a->spec_error.find("spec error in analysis.requests"), std::string::npos)
      << a->spec_error;
}

TEST(AnalyzePastTest, BadRangesAreRefused) {
  StepMetrics m;
  EXPECT_EQ(AnalyzePast(Spec(), m, 1000, 1000).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(AnalyzePast(Spec(), m, 1000, 900).status().code(), Code::kInvalidArgument);
  auto short_range = AnalyzePast(Spec(), m, 1000, 1009);
  EXPECT_NE(short_range.status().message().find("shorter than one analysis interval (10s)"),
            std::string::npos)
      << short_range.status().ToString();
  auto huge = AnalyzePast(Spec(), m, 0, 10.0 * (kMaxPastIntervals + 1));
  EXPECT_NE(huge.status().message().find("more than 10000"), std::string::npos)
      << huge.status().ToString();
  EXPECT_EQ(m.queries, 0) << "nothing is queried for a refused range";
}

// --- The A/A pair (analysis.aa) ---

// Answers each query by the server group in its `s=~"..."` matcher; request queries get 1000.
class GroupMetrics : public Metrics {
 public:
  Result<PromResult> Query(const std::string& expr, double) override {
    const size_t a = expr.find("=~\"") + 3;
    const std::string group = expr.substr(a, expr.find('"', a) - a);
    queried.push_back(group);
    const double v = expr.rfind("sum(requests", 0) == 0 ? 1000 : value.at(group);
    PromResult r;
    r.series.push_back(PromSeries{{}, {{0.0, v}}});
    return r;
  }
  Result<PromResult> QueryRange(const std::string& expr, double, double end, double) override {
    return Query(expr, end);
  }
  std::map<std::string, double> value;
  std::vector<std::string> queried;
};

RolloutSpec AaSpec(const std::string& bounds = "vs_baseline: {max_ratio: 1.1}") {
  auto spec = ParseSpec(
      "apiVersion: cutover/v1\n"
      "name: aa\n"
      "traffic: {provider: haproxy, socket: /x.sock, backend: infer, baseline: [s1, s2], "
      "canary: [d1]}\n"
      "metrics: {provider: prometheus, url: 'http://127.0.0.1:1', step: 1s}\n"
      "steps: [{weight: 10}, {weight: 100}]\n"
      "analysis:\n"
      "  interval: 10s\n"
      "  min_requests: 10\n"
      "  requests: 'sum(requests{s=~\"{{servers}}\"})'\n"
      "  aa: {a: [s1], b: [s2]}\n"
      "  checks:\n"
      "    - {name: latency, query: 'lat{s=~\"{{servers}}\"}', " +
          bounds + "}\n",
      "aa.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.value_or(RolloutSpec{});
}

TEST(NoiseFloorTest, ACanaryFailureTheAaPairSharesIsInconclusive) {
  GroupMetrics m;
  m.value = {{"d1", 1.3}, {"s1|s2", 1.0}, {"s1", 1.0}, {"s2", 1.5}};
  auto r = MeasureInterval(AaSpec(), m, 0, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->results.size(), 1u);
  EXPECT_EQ(r->results[0].verdict, Verdict::kInconclusive);
  EXPECT_EQ(r->results[0].reason.rfind("noise floor: the A/A pair fails the same band (", 0), 0u)
      << r->results[0].reason;
  // Requests for all four groups, then the check on each.
  EXPECT_EQ(m.queried,
            (std::vector<std::string>{"d1", "s1|s2", "s2", "s1", "d1", "s1|s2", "s2", "s1"}));
  std::vector<std::string> rows;
  for (const auto& row : r->rows) rows.push_back(row.check + "=" + row.verdict);
  EXPECT_EQ(rows, (std::vector<std::string>{"requests:canary=info", "requests:baseline=info",
                                            "requests:aa-b=info", "requests:aa-a=info",
                                            "latency=inconclusive", "aa:latency=fail"}));
  EXPECT_DOUBLE_EQ(*r->rows[5].canary_value, 1.5);
  EXPECT_DOUBLE_EQ(*r->rows[5].baseline_value, 1.0);
}

TEST(NoiseFloorTest, AQuietAaPairLeavesTheFailure) {
  GroupMetrics m;
  m.value = {{"d1", 1.3}, {"s1|s2", 1.0}, {"s1", 1.0}, {"s2", 1.02}};
  auto r = MeasureInterval(AaSpec(), m, 0, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->results[0].verdict, Verdict::kFail);
  EXPECT_EQ(r->rows.back().check, "aa:latency");
  EXPECT_EQ(r->rows.back().verdict, "pass");
}

TEST(NoiseFloorTest, AnAbsoluteBoundStaysAFailure) {
  GroupMetrics m;
  m.value = {{"d1", 1.3}, {"s1|s2", 1.0}, {"s1", 1.0}, {"s2", 1.5}};
  auto r = MeasureInterval(AaSpec("max: 1.2, vs_baseline: {max_ratio: 1.1}"), m, 0, 10);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->results[0].verdict, Verdict::kFail) << r->results[0].reason;
  EXPECT_EQ(r->rows.back().verdict, "fail") << "the pair is judged by the ratio alone";
}

TEST(ParseTimeArgTest, AcceptedForms) {
  const double now = 1764842400;  // 2025-12-04T10:00:00Z
  EXPECT_DOUBLE_EQ(ParseTimeArg("now", now).value(), now);
  EXPECT_DOUBLE_EQ(ParseTimeArg("now-1h", now).value(), now - 3600);
  EXPECT_DOUBLE_EQ(ParseTimeArg("now-1m30s", now).value(), now - 90);
  EXPECT_DOUBLE_EQ(ParseTimeArg("1764842400", now).value(), 1764842400);
  EXPECT_DOUBLE_EQ(ParseTimeArg("1764842400.25", now).value(), 1764842400.25);
  EXPECT_DOUBLE_EQ(ParseTimeArg("2025-12-04T10:00:00Z", now).value(), 1764842400);
  EXPECT_DOUBLE_EQ(ParseTimeArg("2025-12-04t10:00:00z", now).value(), 1764842400);
  EXPECT_DOUBLE_EQ(ParseTimeArg("2025-12-04T11:30:00.5+01:30", now).value(), 1764842400.5);
  EXPECT_DOUBLE_EQ(ParseTimeArg("2025-12-04T05:00:00-05:00", now).value(), 1764842400);
  EXPECT_DOUBLE_EQ(ParseTimeArg("2024-02-29T00:00:00Z", now).value(), 1709164800);
  EXPECT_DOUBLE_EQ(ParseTimeArg("1970-01-01T00:00:00Z", now).value(), 0);
}

TEST(ParseTimeArgTest, RefusedFormsSayWhatIsExpected) {
  for (const char* bad :
       {"", "yesterday", "now+1h", "now-", "now-1x", "-5", "1.", ".5", "1e9", "12ab",
        "2025-12-04", "2025-12-04T10:00:00", "2025-12-04 10:00:00Z", "2025-13-01T00:00:00Z",
        "2025-02-29T00:00:00Z", "2025-12-04T24:00:00Z", "2025-12-04T10:00:00+1:00",
        "2025-12-04T10:00:00.Z", "1969-12-31T23:59:59Z", "2025-12-04T10:00:00Zjunk",
        "99999999999999999999999999"}) {
    auto r = ParseTimeArg(bad, 1764842400);
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << "'" << bad << "'";
    EXPECT_NE(r.status().message().find("expected unix seconds, RFC 3339"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace cutover::canary
