// Fuzzes the reading of compat records (`compat compare` takes them from two hosts, and the
// assessment embeds them): no crash or exception; an error names the file; what parses writes
// back to the same document; comparing it with itself finds no regression, and comparing it
// with an empty record renders every format.
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
  CompatRecord empty;
  empty.backend = rec->backend;
  for (const auto& [a, b] : {std::pair{&*rec, &*again}, std::pair{&*rec, &empty},
                             std::pair{&empty, &*rec}}) {
    Comparison c = CompareRecords(*a, *b);
    (void)DumpJson(ComparisonToJson(c));
    (void)ComparisonTable(c);
    (void)ComparisonJunit(c);
  }
  return 0;
}
