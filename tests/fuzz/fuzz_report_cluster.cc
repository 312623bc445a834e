// Fuzzes the reading of cluster records (`compat compare` and `assess --cluster` take them from
// two clusters): no crash or exception; an error names the file; a record that is read compares
// with itself with every ratio 1, and its assessment against itself renders in every format.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compat/cluster_compare.h"
#include "core/json.h"
#include "report/assess.h"
#include "report/cluster_section.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cutover;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = ParseJson(text, "fuzz.rec");
  if (!doc.ok()) return 0;
  Result<nlohmann::json> rec = CheckClusterRecord(*doc, "fuzz.rec");
  if (!rec.ok()) {
    FUZZ_CHECK(rec.status().message().rfind("fuzz.rec: ", 0) == 0, rec.status().message());
    return 0;
  }
  ClusterComparison self = CompareClusterRecords(*rec, *rec);
  for (const nlohmann::json& row : self.doc["collectives"]) {
    const double r = row["busbw_ratio"].get<double>();
    FUZZ_CHECK(!std::isfinite(r) || std::fabs(r - 1) < 1e-9, "a record is not x1 of itself");
  }
  std::vector<report::ReportFinding> findings;
  report::ClusterSection c =
      report::AssessCluster(*rec, *rec, probe::BuiltinFabricFloors(), &findings);
  for (const report::ReportFinding& f : findings) {
    FUZZ_CHECK(f.code != "cluster.slower", "a record is slower than itself");
  }
  (void)DumpJson(report::ClusterJson(c));
  (void)report::ClusterMarkdown(c);
  (void)report::ClusterHtml(c);
  return 0;
}
