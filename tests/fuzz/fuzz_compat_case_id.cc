// Fuzzes the reading of case IDs (`compat dump CASE_ID...` takes them from the user or a
// record): no crash or exception; an error names the ID; what parses is canonical (its ID reads
// back to the input) and names a registered op with one of its dtypes and layouts.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compat/case_dump.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cutover;
  std::string_view id(reinterpret_cast<const char*>(data), size);
  auto spec = ParseCaseId(id);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().message().rfind("compat: bad case ID '", 0) == 0,
               spec.status().message());
    return 0;
  }
  FUZZ_CHECK(spec->Id() == id, spec->Id());
  const OpDescriptor* op = FindOp(spec->op);
  FUZZ_CHECK(op != nullptr, spec->op);
  FUZZ_CHECK(spec->shape.size() == op->quick.front().size(), spec->Id());
  return 0;
}
