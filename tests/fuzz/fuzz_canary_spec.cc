// Fuzzes the rollout spec parser (YAML from the user): no crash, no exception; an error is one
// line; an accepted spec has steps with weights in 0..100. The first bytes also go through the
// duration parser and the `canary analyze` --from/--to parser (command-line text).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "canary/measure.h"
#include "canary/spec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = cutover::canary::ParseTimeArg(text.substr(0, 40), 1.7e9);
  FUZZ_CHECK(!t.ok() || std::isfinite(*t), "a time that is not finite");
  auto spec = cutover::canary::ParseSpec(text, "fuzz.yaml");
  if (!spec.ok()) {
    FUZZ_CHECK(!spec.status().message().empty(), "an error without a message");
    return 0;
  }
  FUZZ_CHECK(!spec->steps.empty(), "a spec without steps");
  for (const auto& st : spec->steps) {
    FUZZ_CHECK(st.weight >= 0 && st.weight <= 100, "weight out of range");
  }
  (void)cutover::canary::ParseSpecDuration(text.substr(0, 32));
  return 0;
}
