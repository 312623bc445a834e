// The cost model (report/cost.h): the file parser with its errors pinned, and every formula
// against a value worked out by hand (the working is in the comments and in docs/cost.md).
#include "report/cost.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "report/render_util.h"
#include "tests/harness/test_env.h"

namespace cutover::report {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A case of op `op` timed at `median_s`.
CaseResult Timed(const std::string& op, double median_s) {
  CaseResult c;
  c.spec = CaseSpec{.op = op, .dtype = "fp32", .shape = {64}, .layout = "row-major"};
  c.id = c.spec.Id();
  c.status = "ok";
  c.timing.reps_s.assign(5, median_s);
  c.timing.median_s = median_s;
  c.timing.rate = 1;
  c.timing.rate_unit = "GB/s";
  return c;
}

CompatRecord Rec(std::vector<CaseResult> cases) {
  CompatRecord r{.backend = "cpu", .suite = "quick", .accumulate = "fp32", .threads = 2};
  r.cases = std::move(cases);
  return r;
}

// The issue's example: $50,000 of capital per GPU over 5 years, nothing else, against $2.35 per
// GPU-hour on demand, at equal throughput.
constexpr char kCapitalOnly[] = R"(apiVersion: cutover/v1
utilization: 0.7
source:
  name: rack A
  self_built:
    capital_per_server: 400000
    gpus_per_server: 8
    depreciation_years: 5
    power_kw_per_server: 0
    pue: 1
    price_per_kwh: 0
    facility_per_server_month: 0
    staff_per_person_month: 0
    servers_per_person: 1
    network_storage_per_server_month: 0
    financing_rate: 0
target:
  supplier: Example Cloud Inc
  managed:
    - name: ExampleCloud 1-year
      kind: reserved
      price_per_gpu_hour: 2.0
      term_months: 12
    - kind: on-demand
      price_per_gpu_hour: 2.35
)";

Result<CostModel> Parse(const std::string& text) { return ParseCostModel(text, "cost.yaml"); }

TEST(CostFormulaTest, CapitalAlonePerGpuHour) {
  // 50000 / (5 * 8760) = 50000 / 43800 = 1.14155...
  EXPECT_NEAR(CapitalPerGpuHour(50000, 5), 1.14155, 1e-5);
  EXPECT_EQ(Num(CapitalPerGpuHour(50000, 5), 3), "1.14");
}

TEST(CostFormulaTest, BreakEvenFromCapitalAloneAtEqualThroughput) {
  // 1.14155 / 2.35 = 0.48577
  EXPECT_NEAR(BreakEvenUtilization(CapitalPerGpuHour(50000, 5), 1, 2.35, 1), 0.48577, 1e-5);
  // A target twice as fast per GPU-hour needs half the rented hours: U* doubles... halves the
  // rented cost per unit, so owning must be busier: 1.14155 * 2 / 2.35 = 0.97153.
  EXPECT_NEAR(BreakEvenUtilization(CapitalPerGpuHour(50000, 5), 1, 2.35, 2), 0.97153, 1e-5);
}

TEST(CostFormulaTest, AnnuityRepaysCapitalWithInterest) {
  // 50000 at 6% a year over 60 months: i = 0.005, 50000 * 0.005 / (1 - 1.005^-60)
  // = 250 / 0.2586278 = 966.64 a month.
  EXPECT_NEAR(AnnuityPerMonth(50000, 0.06, 60), 966.64, 0.01);
  EXPECT_DOUBLE_EQ(AnnuityPerMonth(50000, 0, 60), 50000.0 / 60);
}

TEST(CostFormulaTest, OwnedCostItemsPerGpuHour) {
  SelfBuiltCost s{.capital_per_server = 400000,
                  .gpus_per_server = 8,
                  .depreciation_years = 5,
                  .power_kw_per_server = 10,
                  .pue = 1.5,
                  .price_per_kwh = 0.1,
                  .facility_per_server_month = 1460,
                  .staff_per_person_month = 14600,
                  .servers_per_person = 10,
                  .network_storage_per_server_month = 584,
                  .financing_rate = 0.06};
  OwnedCost c = OwnedCostPerGpuHour(s);
  EXPECT_NEAR(c.capital, 1.14155, 1e-5);
  // 966.64 / 730 - 1.14155 = 1.32416 - 1.14155 = 0.18261
  EXPECT_NEAR(c.financing, 0.18261, 1e-4);
  // 10 kW * 1.5 * 0.1 / 8 = 0.1875
  EXPECT_DOUBLE_EQ(c.power, 0.1875);
  // 1460 / (8 * 730) = 0.25; 14600 / 10 / (8 * 730) = 0.25; 584 / 5840 = 0.1
  EXPECT_DOUBLE_EQ(c.facility, 0.25);
  EXPECT_DOUBLE_EQ(c.staff, 0.25);
  EXPECT_DOUBLE_EQ(c.network_storage, 0.1);
  EXPECT_NEAR(c.total, 1.14155 + 0.18261 + 0.1875 + 0.25 + 0.25 + 0.1, 1e-4);
  EXPECT_NEAR(c.Running(), 0.7875, 1e-9);
  EXPECT_DOUBLE_EQ(c.capital_per_gpu, 50000);
}

TEST(CostFormulaTest, CostPerUnitOfWorkFixedAndPerUse) {
  CostOption own{
      .kind = "self-built", .fixed = true, .effective_per_gpu_hour = 1.2, .throughput = 1};
  // Paid every hour, busy 60% of them, 90% useful: 1.2 / (0.6 * 0.9) = 2.2222
  EXPECT_NEAR(own.CostAt(0.6, 0.9), 2.22222, 1e-5);
  CostOption rent{
      .kind = "on-demand", .fixed = false, .effective_per_gpu_hour = 3, .throughput = 1.5};
  // Paid per use: 3 / (0.9 * 1.5) = 2.2222, whatever the utilization.
  EXPECT_NEAR(rent.CostAt(0.6, 0.9), 2.22222, 1e-5);
  EXPECT_NEAR(rent.CostAt(0.1, 0.9), 2.22222, 1e-5);
}

TEST(CostFormulaTest, MixSpeedRatioWeighsBySourceTime) {
  // 75% of the source's time in a case 2x faster on the target, 25% in one 2x slower:
  // target time = 0.75 * 0.5 + 0.25 * 2 = 0.875 -> speed 1 / 0.875 = 1.142857
  std::vector<MixCase> mix = {{.id = "a", .share = 0.75, .source_s = 2, .target_s = 1},
                              {.id = "b", .share = 0.25, .source_s = 1, .target_s = 2}};
  EXPECT_NEAR(MixSpeedRatio(mix), 1.142857, 1e-6);
}

TEST(CostFormulaTest, MonthsToRecoverCapital) {
  OwnedCost owned;
  owned.capital = CapitalPerGpuHour(50000, 5);
  owned.total = owned.capital + 0.5;  // 0.5 running cost per hour
  owned.capital_per_gpu = 50000;
  CostOption rent{.fixed = false, .effective_per_gpu_hour = 2.35, .throughput = 1};
  // Renting 730 * 0.7 hours a month: 1200.85; running the owned GPU: 365; saved 835.85 a month;
  // 50000 / 835.85 = 59.8193 months.
  EXPECT_NEAR(MonthsToRecoverCapital(owned, 1, rent, 0.7, 1), 59.8193, 1e-4);
  // At 20% busy the rent (343.1) is below the running cost (365): never.
  EXPECT_EQ(MonthsToRecoverCapital(owned, 1, rent, 0.2, 1), -1);
  // Written off over 5 years (60 months), 59.8 months is repaid; over 4 years (48) it never is.
  owned.life_months = 60;
  EXPECT_NEAR(MonthsToRecoverCapital(owned, 1, rent, 0.7, 1), 59.8193, 1e-4);
  owned.life_months = 48;
  EXPECT_EQ(MonthsToRecoverCapital(owned, 1, rent, 0.7, 1), -1);
}

// Below the break-even utilization (0.486) the capital is not repaid within its 5 years: the
// months to recover say never, as the break-even does, instead of 72.9 months.
TEST(CostModelTest, BelowTheBreakEvenTheCapitalIsNeverRecovered) {
  std::string text = kCapitalOnly;
  const size_t at = text.find("utilization: 0.7");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "utilization: 0.4");
  Result<CostModel> m = Parse(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompatRecord src = Rec({Timed("copy", 2e-3), Timed("softmax", 1e-3)});
  Result<CostReport> r = ComputeCost(*m, src, src);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->break_evens.size(), 1u);
  EXPECT_GT(r->break_evens[0].utilization, 0.4);
  EXPECT_EQ(r->break_evens[0].months_to_recover, -1);
  EXPECT_TRUE(Has(CostMarkdown(*r, false, ""), "| 0.486 | never |")) << CostMarkdown(*r, false, "");
}

TEST(CostModelTest, IssueExampleEndToEnd) {
  Result<CostModel> m = Parse(kCapitalOnly);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompatRecord src = Rec({Timed("copy", 2e-3), Timed("softmax", 1e-3)});
  CompatRecord dst = src;  // equal throughput
  Result<CostReport> r = ComputeCost(*m, src, dst);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->speed_ratio, 1);
  ASSERT_EQ(r->options.size(), 3u);
  EXPECT_EQ(r->options[0].kind, "self-built");
  EXPECT_NEAR(r->options[0].per_gpu_hour, 1.14155, 1e-5);
  // At U = 0.7: own 1.14155 / 0.7 = 1.63079; reserved 2.0 / 0.7 = 2.85714; on demand 2.35.
  EXPECT_NEAR(r->options[0].cost_per_unit, 1.63079, 1e-5);
  EXPECT_NEAR(r->options[1].cost_per_unit, 2.85714, 1e-5);
  EXPECT_NEAR(r->options[2].cost_per_unit, 2.35, 1e-12);
  EXPECT_EQ(r->cheapest, 0u);
  // Break-even only against the per-use option, not the reserved term.
  ASSERT_EQ(r->break_evens.size(), 1u);
  EXPECT_EQ(r->break_evens[0].rented, 2u);
  EXPECT_NEAR(r->break_evens[0].utilization, 0.48577, 1e-5);
  // Nothing but capital: 50000 / (730 * 0.7 * 2.35) = 41.637 months.
  EXPECT_NEAR(r->break_evens[0].months_to_recover, 41.637, 1e-3);

  const std::string md = CostMarkdown(*r, false, "cost-chart.svg");
  EXPECT_TRUE(Has(md, "| owned | against (per use) | break-even utilization")) << md;
  EXPECT_TRUE(Has(md, "| source self-built | target on-demand | 0.486 | 41.6 |")) << md;
  EXPECT_TRUE(Has(md, "ExampleCloud 1-year")) << md;
  EXPECT_TRUE(Has(md, "![cost per unit of work against utilization](cost-chart.svg)")) << md;
  const std::string svg = CostChartSvg(*r, false);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n'), 0);
  size_t lines = 0;
  for (size_t p = 0; (p = svg.find("class=\"cost-line\"", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, 3u);
  EXPECT_TRUE(Has(svg, "class=\"crossing\"")) << svg;
  EXPECT_TRUE(Has(svg, "U*=0.486")) << svg;
  nlohmann::json j = CostReportToJson(*r, false);
  EXPECT_EQ(j["source"]["name"], "rack A");
  EXPECT_EQ(j["target"]["supplier"], "Example Cloud Inc");
  EXPECT_EQ(j["target"]["managed"][0]["name"], "ExampleCloud 1-year");
  EXPECT_NEAR(j["break_evens"][0]["utilization"].get<double>(), 0.48577, 1e-5);
}

TEST(CostModelTest, RedactLeavesSupplierAndOptionNamesOut) {
  Result<CostModel> m = Parse(kCapitalOnly);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompatRecord src = Rec({Timed("copy", 2e-3)});
  Result<CostReport> r = ComputeCost(*m, src, src);
  ASSERT_TRUE(r.ok());
  for (const std::string& text :
       {CostReportToJson(*r, true).dump(), CostMarkdown(*r, true, "c.svg"), CostHtml(*r, true),
        CostChartSvg(*r, true)}) {
    EXPECT_FALSE(Has(text, "Example")) << text;
    EXPECT_FALSE(Has(text, "rack A")) << text;
    EXPECT_TRUE(Has(text, "reserved")) << text;
  }
}

TEST(CostModelTest, WorkloadMixWeighsTheMeasuredCases) {
  std::string text = kCapitalOnly;
  text.insert(text.find("source:"), "workload:\n  copy: 3\n  softmax: 1\n");
  Result<CostModel> m = Parse(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompatRecord src = Rec({Timed("copy", 2e-3), Timed("softmax", 1e-3)});
  CompatRecord dst = Rec({Timed("copy", 1e-3), Timed("softmax", 2e-3)});
  Result<CostReport> r = ComputeCost(*m, src, dst);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // 0.75 * 0.5 + 0.25 * 2 = 0.875 of the source's time.
  EXPECT_NEAR(r->speed_ratio, 1 / 0.875, 1e-9);
  EXPECT_NEAR(r->options[2].throughput, 1 / 0.875, 1e-9);
  // The target's on-demand hour does 1.142857 units: 2.35 / 1.142857 = 2.05625 per unit.
  EXPECT_NEAR(r->options[2].cost_per_unit, 2.05625, 1e-5);
  // U* = 1.14155 * 1.142857 / 2.35 = 0.55517
  EXPECT_NEAR(r->break_evens[0].utilization, 0.55517, 1e-5);
}

TEST(CostModelTest, MissingThroughputIsRefused) {
  std::string text = kCapitalOnly;
  text.insert(text.find("source:"), "workload:\n  gemm: 1\n");
  Result<CostModel> m = Parse(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CompatRecord src = Rec({Timed("copy", 2e-3)});
  Result<CostReport> r = ComputeCost(*m, src, src);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "cost.yaml:4:3: workload.gemm: no case of this name was measured ok on both sides "
            "(missing throughput; run it on both or drop it)");
  CompatRecord none = Rec({});
  r = ComputeCost(*m, src, none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "assess: --cost cost.yaml: no case was measured ok on both sides, so neither side's "
            "throughput is known (run the same suite on both)");
}

// Each bad file: the exact first line of the error.
TEST(CostParseTest, ErrorsNameFileLineColumnAndKey) {
  struct Bad {
    std::string from, to, error;
  };
  const Bad kBad[] = {
      {"utilization: 0.7", "utilization: 0",
       "cost.yaml:2:14: utilization: must be in (0, 1], got 0"},
      {"utilization: 0.7", "utilization: 1.5",
       "cost.yaml:2:14: utilization: must be in (0, 1], got 1.5"},
      {"price_per_gpu_hour: 2.35", "price_per_gpu_hour: -1",
       "cost.yaml:25:27: target.managed[1].price_per_gpu_hour: must be above 0, got -1"},
      {"price_per_gpu_hour: 2.35", "price_per_gpu_hour: 0",
       "cost.yaml:25:27: target.managed[1].price_per_gpu_hour: must be above 0, got 0"},
      {"utilization: 0.7", "utilisation: 0.7",
       "cost.yaml:2:1: utilisation: unknown key (expected one of: apiVersion, currency, "
       "utilization, goodput, workload, source, target)"},
      {"    pue: 1", "    pue: 0.9",
       "cost.yaml:10:10: source.self_built.pue: must be 1..10, got 0.9"},
      {"apiVersion: cutover/v1", "apiVersion: cutover/v2",
       "cost.yaml:1:13: apiVersion: unsupported version cutover/v2 (this build reads cutover/v1)"},
      {"      term_months: 12", "      interruption_share: 0.1",
       "cost.yaml:23:27: target.managed[0].interruption_share: applies to kind spot only"},
      {"    financing_rate: 0", "    financing_rate: .nan",
       "cost.yaml:16:21: source.self_built.financing_rate: must be a finite number, got .nan"},
      {"  self_built:", "  managed: []\n  self_built:",
       "cost.yaml:4:3: source: needs exactly one of self_built and managed"},
  };
  for (const Bad& b : kBad) {
    std::string text = kCapitalOnly;
    size_t at = text.find(b.from);
    ASSERT_NE(at, std::string::npos) << b.from;
    text.replace(at, b.from.size(), b.to);
    Result<CostModel> m = Parse(text);
    ASSERT_FALSE(m.ok()) << b.to;
    std::string first = m.status().message().substr(0, m.status().message().find('\n'));
    EXPECT_EQ(first, b.error) << m.status().message();
  }
  Result<CostModel> m = Parse("apiVersion: [");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Has(m.status().message(), "cost.yaml:1:")) << m.status().message();
  m = Parse("- a\n");
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(Has(m.status().message(), "must be a mapping")) << m.status().message();
}

TEST(CostParseTest, TheExampleFileParses) {
  Result<CostModel> m = LoadCostModel(testing::SourceDir() + "/examples/cost.yaml");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m->source.self_built.has_value());
  EXPECT_GE(m->target.managed.size(), 3u);
}

}  // namespace
}  // namespace cutover::report
