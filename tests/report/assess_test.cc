// The assessment's verdicts on fingerprints of the fixture trees (tests/fixtures/hosts/) and on
// compat records built here to sit on either side of the tolerances, and its four renderings:
// report.json against docs/schemas/report-2.json, Markdown, HTML and JUnit.
#include "report/assess.h"

#include <gtest/gtest.h>

#include "compat/op.h"
#include "core/file_system.h"
#include "core/json.h"
#include "probe/collect.h"
#include "report/redact.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::report {
namespace {

Fingerprint Fixture(const std::string& name) {
  RealFileSystem fs(testing::SourceDir() + "/tests/fixtures/hosts/" + name);
  return probe::Collect(fs, probe::CollectOptions{});
}

constexpr int64_t kK = 64;
constexpr int kSamples = 32;

// A gemm case whose sampled outputs are truth + offset * (the fp32 tolerance at 1.0).
CaseResult GemmCase(double offset, double median_s, const std::string& digest) {
  CaseResult c;
  c.spec = CaseSpec{.op = "gemm", .dtype = "fp32", .shape = {64, 64, kK}, .layout = "row-major"};
  c.id = c.spec.Id();
  c.status = "ok";
  c.output_count = 64 * 64;
  c.digest = digest;
  c.tiles.assign(kRecordTiles, digest.substr(0, 16));
  Tolerance tol = ToleranceFor("fp32", kK);
  for (int i = 0; i < kSamples; ++i) {
    c.sample_index.push_back(i * 7);
    c.sample_truth.push_back(1.0);
    c.sample_value.push_back(1.0 + offset * (tol.atol + tol.rtol));
  }
  c.reduction_length = kK;
  c.flops = 2.0 * 64 * 64 * kK;
  for (int i = 0; i < 9; ++i) c.timing.reps_s.push_back(median_s * (1 + 0.001 * (i - 4)));
  c.timing.median_s = median_s;
  c.timing.p10_s = median_s * 0.997;
  c.timing.p90_s = median_s * 1.003;
  c.timing.rate = c.flops / median_s / 1e9;
  c.timing.rate_unit = "GFLOP/s";
  return c;
}

CaseResult CopyCase(double median_s) {
  CaseResult c;
  c.spec = CaseSpec{.op = "copy", .dtype = "fp32", .shape = {1 << 20}, .layout = "row-major"};
  c.id = c.spec.Id();
  c.status = "ok";
  c.output_count = 1 << 20;
  c.digest = std::string(64, 'c');
  c.tiles.assign(kRecordTiles, std::string(16, 'c'));
  c.bytes = 8.0 * (1 << 20);
  c.timing.reps_s.assign(9, median_s);
  c.timing.median_s = c.timing.p10_s = c.timing.p90_s = median_s;
  c.timing.rate = c.bytes / median_s / 1e9;
  c.timing.rate_unit = "GB/s";
  return c;
}

CompatRecord Record(CaseResult gemm, double copy_s) {
  CompatRecord r{.backend = "cpu", .suite = "quick", .accumulate = "fp32", .threads = 2};
  r.cases.push_back(std::move(gemm));
  r.cases.push_back(CopyCase(copy_s));
  return r;
}

AssessInputs Pair(const std::string& src, const std::string& dst) {
  AssessInputs in;
  in.source = Fixture(src);
  in.target = Fixture(dst);
  in.input_paths = {{"source", src + ".json"}, {"target", dst + ".json"}};
  in.generated_at = "2026-12-03T07:00:00Z";
  return in;
}

void ExpectValid(const Assessment& a) {
  nlohmann::json doc = AssessmentToJson(a);
  // What the command writes is what a reader parses back.
  Result<nlohmann::json> back = ParseJson(DumpJson(doc, 2), "report.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)["schema"], "cutover.report/2");
  CUTOVER_EXPECT_VALID(*back, "report-2.json");
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(AssessTest, MissingDriverOnTheTargetIsNoGo) {
  Result<Assessment> a = Assess(Pair("h100-cuda12.4", "no-driver"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "no-go");
  EXPECT_EQ(a->ExitCode(), 1);
  ASSERT_FALSE(a->findings.empty());
  EXPECT_EQ(a->findings.front().severity, "blocker");
  EXPECT_GT(a->Count("blocker"), 0);
  EXPECT_TRUE(Has(a->headline, "blocker")) << a->headline;
  ExpectValid(*a);

  std::string md = RenderMarkdown(*a);
  EXPECT_TRUE(Has(md, "NO-GO")) << md;
  EXPECT_TRUE(Has(md, a->findings.front().message)) << md;
  std::string html = RenderHtml(*a);
  EXPECT_TRUE(Has(html, "data-verdict=\"no-go\"")) << html.substr(0, 2000);
  EXPECT_FALSE(Has(html, "<script"));
  JunitReport j = AssessmentJunit(*a);
  ASSERT_FALSE(j.suites.empty());
  int failed = 0;
  for (const JunitCase& c : j.suites[0].cases) failed += c.outcome == JunitOutcome::kFailed;
  // The verdict case and one per blocker.
  EXPECT_EQ(failed, 1 + a->Count("blocker"));
}

TEST(AssessTest, SameHostAndSameNumericsIsGo) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = in.compat_source;
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "go") << a->headline;
  EXPECT_EQ(a->ExitCode(), 0);
  EXPECT_EQ(a->Count("blocker") + a->Count("warning"), 0);
  ASSERT_EQ(a->compat.size(), 2u);
  EXPECT_EQ(a->compat[0].cmp.verdict, Verdict::kIdentical);
  ExpectValid(*a);
  const std::string html = RenderHtml(*a);
  EXPECT_TRUE(Has(html, "data-verdict=\"go\""));
  // Every case exact: one line instead of a column of dots at the left edge.
  const size_t chart = html.find("id=\"chart-error\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string figure = html.substr(chart, html.find("</figure>", chart) - chart);
  EXPECT_TRUE(Has(figure, "<p class=\"chart-summary\">All ")) << figure;
  EXPECT_TRUE(Has(figure, "cases are exact or within 1e-8 of their tolerance")) << figure;
  EXPECT_FALSE(Has(figure, "<circle")) << figure;
}

TEST(AssessTest, DriftIsGoWithRisks) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  // Source 0.75 tolerance below truth, target 0.75 above: 1.5 apart, each within truth's.
  in.compat_source = Record(GemmCase(-0.75, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = Record(GemmCase(0.75, 1e-3, std::string(64, 'b')), 2e-3);
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "go-with-risks") << a->headline;
  EXPECT_EQ(a->ExitCode(), 0);
  EXPECT_EQ(a->compat[0].cmp.verdict, Verdict::kDrift);
  bool drift = false;
  for (const ReportFinding& f : a->findings) drift |= f.code == "compat.drift";
  EXPECT_TRUE(drift);
  ExpectValid(*a);
  std::string html = RenderHtml(*a);
  EXPECT_TRUE(Has(html, "id=\"chart-error\"")) << "the error-against-truth chart";
  // The case ids label the dots whole, never cut.
  EXPECT_TRUE(Has(html, "text-anchor=\"end\">" + a->compat[0].cmp.id + "</text>")) << html;
  EXPECT_TRUE(Has(html, "id=\"chart-speed\""));
}

TEST(AssessTest, NumericsRegressionIsNoGoEvenOnTheSameHost) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = Record(GemmCase(0.1, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = Record(GemmCase(3.0, 1e-3, std::string(64, 'b')), 2e-3);
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "no-go");
  EXPECT_EQ(a->findings.front().code, "compat.regression");
  ExpectValid(*a);
}

TEST(AssessTest, CeilingsAreTheRecordsBestRates) {
  CompatRecord r = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  CaseResult slower = GemmCase(0, 4e-3, std::string(64, 'a'));
  slower.spec.seed = 2;
  slower.id = slower.spec.Id();
  r.cases.push_back(slower);
  std::map<std::string, double> c = MeasuredCeilings(r);
  EXPECT_DOUBLE_EQ(c["GFLOP/s"], r.cases[0].timing.rate);
  EXPECT_DOUBLE_EQ(c["GB/s"], r.cases[1].timing.rate);

  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = r;
  in.compat_target = r;
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->compat.size(), 3u);
  EXPECT_DOUBLE_EQ(a->compat[0].source_fraction, 1.0);
  EXPECT_NEAR(a->compat[2].source_fraction, 0.25, 1e-9);
}

TEST(AssessTest, PricesGivePerformancePerUnitCost) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = Record(GemmCase(0, 0.5e-3, std::string(64, 'a')), 2e-3);
  in.price_source = 2.0;
  in.price_target = 4.0;
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok());
  const CostRow* gemm = nullptr;
  for (const CostRow& c : a->cost) {
    if (c.rate_unit == "GFLOP/s") gemm = &c;
  }
  ASSERT_NE(gemm, nullptr);
  EXPECT_NEAR(gemm->target_rate / gemm->source_rate, 2.0, 1e-9);
  // Twice as fast at twice the price: the same work per unit of money.
  EXPECT_NEAR(gemm->target_per_price / gemm->source_per_price, 1.0, 1e-9);
  EXPECT_NEAR(gemm->source_per_price, gemm->source_rate * 3600 / 2.0, 1e-6);
  ExpectValid(*a);
  EXPECT_TRUE(Has(RenderMarkdown(*a), "GPU-hour"));
}

TEST(AssessTest, RejectsHalfACompatPairAndBadPrices) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  EXPECT_EQ(Assess(in).status().code(), Code::kInvalidArgument);
  AssessInputs p = Pair("h100-cuda12.4", "h100-cuda12.4");
  p.price_source = -1;
  EXPECT_EQ(Assess(p).status().code(), Code::kInvalidArgument);
  AssessInputs d = Pair("h100-cuda12.4", "h100-cuda12.4");
  d.datasync_plan = nlohmann::json{{"schema", "cutover.diff/1"}};
  Result<Assessment> bad = Assess(d);
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Has(bad.status().message(), "--datasync")) << bad.status().ToString();
}

TEST(AssessTest, RefusesCompatRecordsOfAnotherOpTable) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.input_paths["compat source"] = "src.rec";
  in.input_paths["compat target"] = "dst.rec";
  in.compat_source = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = in.compat_source;
  in.compat_target->op_table_version = kOpTableVersion + 1;
  Result<Assessment> a = Assess(in);
  EXPECT_EQ(a.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(a.status().message(),
            "assess: --compat: src.rec has op table version " + std::to_string(kOpTableVersion) +
                ", dst.rec " + std::to_string(kOpTableVersion + 1) +
                ": cases of different op tables are not comparable (record both with the same "
                "cutover)");
  // A case defined differently (another output count) is refused too.
  in.compat_target = in.compat_source;
  in.compat_target->cases[0].output_count += 1;
  a = Assess(in);
  EXPECT_EQ(a.status().code(), Code::kFailedPrecondition);
  EXPECT_TRUE(Has(a.status().message(), "is defined differently in src.rec and dst.rec"))
      << a.status().ToString();
}

TEST(AssessTest, CeilingsComeFromTheRecordsCalibrationWhenItHasOne) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  CompatRecord r = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  r.calibration = {.measured = true,
                   .copy_gbps = 2 * r.cases[1].timing.rate,
                   .gemm_gflops = 4 * r.cases[0].timing.rate};
  in.compat_source = r;
  in.compat_target = r;
  Result<Assessment> a = Assess(in);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_NEAR(a->compat[0].source_fraction, 0.25, 1e-9);
  EXPECT_NEAR(a->compat[1].source_fraction, 0.5, 1e-9);

  // A calibration slower than a measured case is raised to it: never above 100%.
  r.calibration.gemm_gflops = r.cases[0].timing.rate / 2;
  in.compat_source = r;
  in.compat_target = r;
  Result<Assessment> slow = Assess(in);
  ASSERT_TRUE(slow.ok());
  EXPECT_NEAR(slow->compat[0].source_fraction, 1.0, 1e-9);
  EXPECT_NEAR(slow->source_ceilings.at("GFLOP/s"), r.cases[0].timing.rate, 1e-9);
}

// Fingerprints alone: the report says, at the top and in the headline, that numerics, speed,
// stability, the cluster, the data plan and the canary were not assessed.
TEST(AssessTest, CoverageSaysWhatWasNotAssessed) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.input_paths["source"] = "a.json";
  in.input_paths["target"] = "b.json";
  Result<Assessment> a = Assess(in);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_EQ(a->coverage.size(), 7u);
  EXPECT_EQ(a->coverage[0].area, "fingerprints");
  EXPECT_TRUE(a->coverage[0].assessed);
  EXPECT_EQ(a->coverage[0].input, "probe fingerprints a.json, b.json");
  EXPECT_EQ(a->coverage[1].area, "numerics");
  EXPECT_FALSE(a->coverage[1].assessed);
  EXPECT_EQ(a->coverage[1].input, "not measured: no --compat records");
  EXPECT_EQ(a->coverage[2].area, "speed");
  EXPECT_FALSE(a->coverage[2].assessed);
  EXPECT_EQ(a->coverage[4].area, "cluster");
  EXPECT_EQ(a->coverage[4].input, "not measured: no --cluster records");
  EXPECT_TRUE(
      Has(a->headline, "; not assessed: numerics, speed, stability, cluster, data plan, canary"))
      << a->headline;
  ExpectValid(*a);
  nlohmann::json doc = AssessmentToJson(*a);
  ASSERT_TRUE(doc.contains("coverage"));
  EXPECT_EQ(doc["coverage"][1], nlohmann::json({{"area", "numerics"},
                                                {"assessed", false},
                                                {"input", "not measured: no --compat records"}}));
  std::string md = RenderMarkdown(*a);
  EXPECT_LT(md.find("## Coverage"), md.find("Generated ")) << md;
  EXPECT_TRUE(Has(md, "| numerics | **no** | not measured: no --compat records |")) << md;
  EXPECT_TRUE(Has(RenderHtml(*a), "<section id=\"coverage\">"));
}

// The stability row follows the records: a quick run (9 repetitions) cannot judge it, and says
// what would; a soak's 30 repetitions a side can, and the row says how many cases it judged.
TEST(AssessTest, CoverageOfStabilityFollowsTheRepetitionsOfTheRecords) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.compat_source = Record(GemmCase(0, 1e-3, std::string(64, 'a')), 2e-3);
  in.compat_target = in.compat_source;
  Result<Assessment> quick = Assess(in);
  ASSERT_TRUE(quick.ok()) << quick.status().ToString();
  ASSERT_EQ(quick->coverage[3].area, "stability");
  EXPECT_FALSE(quick->coverage[3].assessed);
  EXPECT_EQ(quick->coverage[3].input,
            "not assessed: no case ran 30 repetitions a side (compat run --soak, or --reps 30)");
  EXPECT_TRUE(Has(quick->headline, "not assessed: stability")) << quick->headline;

  for (CompatRecord* r : {&*in.compat_source, &*in.compat_target}) {
    CaseResult& gemm = r->cases[0];
    gemm.timing.reps_s.clear();
    for (int i = 0; i < 30; ++i) gemm.timing.reps_s.push_back(1e-3 * (1 + 0.001 * (i % 7)));
  }
  Result<Assessment> soak = Assess(in);
  ASSERT_TRUE(soak.ok()) << soak.status().ToString();
  EXPECT_TRUE(soak->coverage[3].assessed) << soak->coverage[3].input;
  EXPECT_EQ(soak->coverage[3].input,
            "1 of 2 timed cases with at least 30 repetitions a side, from the compat records");
  EXPECT_FALSE(Has(soak->headline, "stability")) << soak->headline;
  ExpectValid(*soak);
}

// A case that does not apply on one side is not judged: it shows n/a in grey, never a q of 0 in
// the passing colour.
TEST(AssessTest, NotApplicableCaseIsNotShownAsPassing) {
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  CaseResult na = GemmCase(0, 0.001, std::string(64, 'a'));
  na.status = "n/a";
  na.error = "fp64 is not supported by this backend";
  in.compat_source = Record(GemmCase(0, 0.001, std::string(64, 'a')), 0.001);
  in.compat_target = Record(na, 0.001);
  Result<Assessment> a = Assess(in);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  std::string html = RenderHtml(*a);
  const std::string row = "<td class=\"na\">n/a</td><td class=\"na\">";
  EXPECT_TRUE(Has(html, row)) << html;
  const size_t at = html.find(row);
  ASSERT_NE(at, std::string::npos);
  const std::string line = html.substr(at, html.find("</tr>", at) - at);
  EXPECT_TRUE(Has(line, "<td>n/a</td><td>n/a</td>")) << line;
  EXPECT_FALSE(Has(line, "class=\"ok\"")) << line;
}

TEST(AssessTest, CanaryRollbackIsNoGoAndPromotionIsGo) {
  nlohmann::json history = {{"schema", "cutover.rollout-history/1"},
                            {"rollout", {{"name", "web"}, {"status", "rolled-back"},
                                         {"reason", "error rate 4% > 1%"}}},
                            {"steps", nlohmann::json::array()},
                            {"measurements", nlohmann::json::array()},
                            {"events", nlohmann::json::array()}};
  AssessInputs in = Pair("h100-cuda12.4", "h100-cuda12.4");
  in.canary_history = history;
  Result<Assessment> a = Assess(in);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, "no-go");
  EXPECT_EQ(a->findings.front().code, "canary.rolled-back");
  EXPECT_TRUE(Has(a->findings.front().message, "error rate 4% > 1%"));
  ExpectValid(*a);

  // The failing check and its figures, from the last interval that failed.
  in.canary_history->at("measurements") =
      nlohmann::json::array({{{"step", 1},
                              {"interval", 2},
                              {"check", "error-rate"},
                              {"verdict", "fail"},
                              {"reason", "canary value 0.1 > max 0.01"}},
                             {{"step", 1},
                              {"interval", 3},
                              {"check", "error-rate"},
                              {"verdict", "fail"},
                              {"reason", "canary value 0.52 > max 0.01"}},
                             {{"step", 1},
                              {"interval", 3},
                              {"check", "p99-latency"},
                              {"verdict", "pass"},
                              {"reason", "ratio 1.1 <= max_ratio 2"}},
                             {{"step", 1},
                              {"interval", 3},
                              {"check", "interval"},
                              {"verdict", "fail"},
                              {"reason", "rollback: 2 failing intervals"}}});
  Result<Assessment> figures = Assess(in);
  ASSERT_TRUE(figures.ok());
  EXPECT_EQ(figures->findings.front().message,
            "rollout web is rolled-back: error rate 4% > 1%; failing checks in interval 3: "
            "error-rate: canary value 0.52 > max 0.01");
  // The canary section: the failing check with its figures, and the applied weights.
  in.canary_history->at("steps") = nlohmann::json::array({{{"index", 0},
                                                           {"kind", "weight"},
                                                           {"canary_percent", 25},
                                                           {"outcome", "rolled-back"},
                                                           {"applied_at", 1796601600.0},
                                                           {"readback", {{"d1", 1}, {"s1", 3}}}}});
  const std::string html = RenderHtml(*Assess(in));
  EXPECT_TRUE(Has(html, "error-rate: canary value 0.52 &gt; max 0.01")) << html;
  EXPECT_TRUE(Has(html, "<td>2026-12-07T00:00:00Z (d1 1, s1 3)</td>")) << html;

  in.canary_history->at("rollout")["status"] = "promoted";
  Result<Assessment> ok = Assess(in);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->verdict, "go") << ok->headline;
  in.canary_history->at("rollout")["status"] = "running";
  EXPECT_EQ(Assess(in)->verdict, "go-with-risks");
}

TEST(AssessTest, RedactedInputsLeaveNoNameInAnyOutput) {
  nlohmann::json src = FingerprintToJson(Fixture("h100-cuda12.4"));
  nlohmann::json dst = FingerprintToJson(Fixture("a100-cuda11.8"));
  // Files-only collection finds no hostname in the fixture trees: give both sides one.
  src["hostname"] = "gpu-node-7.corp.example";
  dst["hostname"] = "dgx-b12.cloud.example";
  std::vector<std::string> secrets;
  for (const nlohmann::json* d : {&src, &dst}) {
    if (d->contains("hostname") && (*d)["hostname"].is_string()) {
      secrets.push_back((*d)["hostname"]);
    }
    for (const auto& g : (*d)["gpus"]) {
      if (g.contains("uuid") && g["uuid"].is_string()) secrets.push_back(g["uuid"]);
    }
  }
  ASSERT_GE(secrets.size(), 3u) << "the fixtures carry hostnames and GPU UUIDs";
  Redactor r;
  r.Learn(src);
  r.Learn(dst);
  r.Apply(src);
  r.Apply(dst);
  AssessInputs in;
  in.source = *FingerprintFromJson(src);
  in.target = *FingerprintFromJson(dst);
  in.redacted = true;
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok());
  std::string all = DumpJson(AssessmentToJson(*a)) + RenderMarkdown(*a) + RenderHtml(*a) +
                    AssessmentJunit(*a).ToXml();
  for (const std::string& s : secrets) EXPECT_FALSE(Has(all, s)) << s;
  // The same pseudonym in every output (the host table shows the hostnames).
  const std::string pseudonym = r.mapping().at("dgx-b12.cloud.example");
  EXPECT_TRUE(Has(DumpJson(AssessmentToJson(*a)), pseudonym));
  EXPECT_TRUE(Has(RenderMarkdown(*a), pseudonym));
  EXPECT_TRUE(Has(RenderHtml(*a), pseudonym));
}

TEST(AssessTest, HtmlIsSelfContainedAndEscapesInput) {
  AssessInputs in = Pair("h100-cuda12.4", "no-driver");
  in.target.hostname = "<img src=x onerror=alert(1)>";
  Result<Assessment> a = Assess(std::move(in));
  ASSERT_TRUE(a.ok());
  std::string html = RenderHtml(*a);
  EXPECT_FALSE(Has(html, "<img src=x"));
  EXPECT_TRUE(Has(html, "&lt;img src=x"));
  EXPECT_FALSE(Has(html, "<script"));
  EXPECT_FALSE(Has(html, "http://"));
  EXPECT_FALSE(Has(html, "https://"));
  EXPECT_TRUE(Has(html, "Content-Security-Policy"));
}

}  // namespace
}  // namespace cutover::report
