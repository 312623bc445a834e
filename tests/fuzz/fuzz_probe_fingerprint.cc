// Fuzzes the reading of fingerprint documents (`probe diff`, `fleet`, `assess` and compat
// records take them from other hosts, often hand-edited): no crash or exception; an error names
// a field; what parses writes back to the same document; a diff of it against itself, against
// an empty fingerprint and in both modes judges and renders.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/fingerprint.h"
#include "core/json.h"
#include "probe/diff.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cutover;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto fp = ParseFingerprint(text);
  if (!fp.ok()) {
    FUZZ_CHECK(!fp.status().message().empty(), "an error without a message");
    return 0;
  }
  nlohmann::json doc = FingerprintToJson(*fp);
  auto again = FingerprintFromJson(doc);
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(FingerprintToJson(*again) == doc, "a fingerprint does not survive a write and read");

  const probe::CompatRules& rules = probe::BuiltinRules();
  Fingerprint empty;
  for (probe::DiffMode mode : {probe::DiffMode::kHost, probe::DiffMode::kContainer}) {
    for (const auto& [a, b] : {std::pair{&*fp, &*again}, std::pair{&*fp, &empty},
                               std::pair{&empty, &*fp}}) {
      probe::DiffReport r = probe::Diff(*a, *b, mode, rules);
      int counted = r.Count("blocker") + r.Count("warning") + r.Count("info");
      FUZZ_CHECK(counted == static_cast<int>(r.findings.size()), "a finding of no known severity");
      (void)DumpJson(probe::DiffToJson(r));
      (void)probe::RenderDiffTable(r);
    }
  }
  (void)probe::SingleHostCollectionFindings(*fp);
  return 0;
}
