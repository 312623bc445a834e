// Fuzzes the reading of compat records (`compat compare` takes them from two hosts, and the
// assessment embeds them): no crash or exception; an error names the file; what parses writes
// back to the same document; comparing it with itself finds no regression, no drift and no
// setup difference, its error figures against itself are zero, and it is comparable with itself;
// comparing it with an empty record renders every format (also with --fail-on-slower).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compat/compare.h"
#include "compat/record.h"
#include "core/json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cutover;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = ParseJson(text, "fuzz.rec");
  if (!doc.ok()) return 0;
  auto rec = RecordFromJson(*doc, "fuzz.rec");
  if (!rec.ok()) {
    FUZZ_CHECK(rec.status().message().rfind("fuzz.rec", 0) == 0, rec.status().message());
    return 0;
  }
  nlohmann::json written = RecordToJson(*rec);
  auto again = RecordFromJson(written, "again.rec");
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(RecordToJson(*again) == written, "a record does not survive a write and read");

  Comparison self = CompareRecords(*rec, *again);
  FUZZ_CHECK(self.Count(Verdict::kRegression) == 0, "a record regresses against itself");
  FUZZ_CHECK(self.Count(Verdict::kDrift) == 0, "a record drifts against itself");
  FUZZ_CHECK(self.setup_differences.empty(), "a record differs in setup from itself");
  FUZZ_CHECK(self.CountSpeed(SpeedVerdict::kSlower) == 0, "a record is slower than itself");
  FUZZ_CHECK(CheckComparable(*rec, *again, "a", "b").ok(), "a record is not comparable to itself");
  for (const CaseComparison& k : self.cases) {
    if (!k.has_error_stats) continue;
    const ErrorStats& e = k.target_vs_source;
    FUZZ_CHECK(e.max_rel == 0 && e.normwise == 0 && !(e.max_ulp > 0),
               "a record has an error against itself: " + k.id);
    const ErrorStats& t = k.target_vs_truth;
    FUZZ_CHECK(!(t.mean_rel > t.max_rel * (1 + 1e-9)),
               "mean relative error above the max: " + k.id);
  }
  CompatRecord empty;
  empty.backend = rec->backend;
  for (const auto& [a, b] : {std::pair{&*rec, &*again}, std::pair{&*rec, &empty},
                             std::pair{&empty, &*rec}}) {
    Comparison c = CompareRecords(*a, *b);
    (void)CheckComparable(*a, *b, "a", "b");
    c.fail_on_slower = true;
    (void)DumpJson(ComparisonToJson(c));
    (void)ComparisonTable(c);
    (void)ComparisonJunit(c);
  }
  return 0;
}
