// Fuzzes the cost file parser (YAML from the user, `assess --cost`): no crash, no exception; an
// error names the file; an accepted model has its utilization and goodput in (0, 1] and prices
// above 0, and prices a small pair of records to finite costs.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "report/cost.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto m = cutover::report::ParseCostModel(text, "fuzz.yaml");
  if (!m.ok()) {
    FUZZ_CHECK(m.status().message().rfind("fuzz.yaml", 0) == 0, "an error without the file");
    return 0;
  }
  FUZZ_CHECK(m->utilization > 0 && m->utilization <= 1, "utilization out of range");
  FUZZ_CHECK(m->goodput > 0 && m->goodput <= 1, "goodput out of range");
  for (const auto* side : {&m->source, &m->target}) {
    FUZZ_CHECK(side->self_built.has_value() != !side->managed.empty(), "a side of both kinds");
    for (const auto& o : side->managed) FUZZ_CHECK(o.price_per_gpu_hour > 0, "a price <= 0");
  }
  cutover::CompatRecord rec{.backend = "cpu", .suite = "quick", .accumulate = "fp32"};
  cutover::CaseResult c;
  c.spec = cutover::CaseSpec{.op = "copy", .dtype = "fp32", .shape = {64}, .layout = "row-major"};
  c.id = c.spec.Id();
  c.status = "ok";
  c.timing.reps_s = {1e-3};
  c.timing.median_s = 1e-3;
  rec.cases.push_back(c);
  auto r = cutover::report::ComputeCost(*m, rec, rec);
  if (r.ok()) {
    for (const auto& o : r->options) FUZZ_CHECK(!std::isnan(o.cost_per_unit), "a cost that is NaN");
    (void)cutover::report::CostChartSvg(*r, true);
  }
  return 0;
}
