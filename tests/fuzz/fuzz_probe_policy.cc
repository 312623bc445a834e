// Fuzzes the policy reader of `probe check` (YAML from a CI repository): no crash, no uncaught
// exception, every error names the file; a policy that parses checks and renders against an
// empty fingerprint; each constraint matches its own bare version consistently.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "probe/policy.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = cutover::probe::ParsePolicy(text, "fuzz.yaml");
  if (p.ok()) {
    cutover::Fingerprint fp;
    cutover::probe::PolicyReport r = cutover::probe::CheckPolicy(*p, fp);
    FUZZ_CHECK(!cutover::probe::RenderPolicyTable(r).empty(), "");
    (void)cutover::probe::PolicyJunit(r).ToXml();
    // As the command prints it: DumpJson replaces invalid UTF-8 (a policy name may hold any bytes).
    (void)cutover::DumpJson(cutover::probe::PolicyReportToJson(r, fp));
  } else {
    FUZZ_CHECK(p.status().message().rfind("fuzz.yaml", 0) == 0, p.status().message());
  }
  auto c = cutover::probe::ParseVersionConstraint(text);
  if (c.ok()) {
    FUZZ_CHECK(!c->clauses.empty(), std::string(text));
    for (const auto& clause : c->clauses) {
      bool m = c->Matches(clause.version);
      FUZZ_CHECK(m == c->Matches(clause.version), "Matches is not deterministic");
    }
  }
  return 0;
}
