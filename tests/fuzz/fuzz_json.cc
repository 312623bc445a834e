// Fuzzes ParseJson, CheckSchema and the typed getters: none may crash or throw, errors must
// start with the `what` given, and a parsed document must survive DumpJson and a reparse.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using cutover::Result;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = cutover::ParseJson(text, "fuzz");
  if (!doc.ok()) {
    FUZZ_CHECK(doc.status().message().rfind("fuzz: ", 0) == 0, doc.status().message());
    return 0;
  }
  auto version = cutover::SchemaVersion(*doc, "cutover.fingerprint", 1, "fp");
  FUZZ_CHECK(version.ok() == cutover::CheckSchema(*doc, "cutover.fingerprint", 1, "fp").ok(), "");
  FUZZ_CHECK(!version.ok() || *version == 1, "");
  FUZZ_CHECK(version.ok() || version.status().message().rfind("fp: ", 0) == 0,
             version.status().message());
  for (std::string_view ptr :
       {"", "/schema", "/hosts/0/host", "/hosts/0/mem_bytes", "/0", "/a~1b", "/~", "/hosts/-"}) {
    (void)cutover::GetString(*doc, ptr, "fp");
    (void)cutover::GetInt(*doc, ptr, "fp");
    (void)cutover::GetUint(*doc, ptr, "fp");
    (void)cutover::GetDouble(*doc, ptr, "fp");
    (void)cutover::GetBool(*doc, ptr, "fp");
    (void)cutover::GetArray(*doc, ptr, "fp");
    (void)cutover::GetObject(*doc, ptr, "fp");
    (void)cutover::FindJson(*doc, ptr);
  }
  // Pointers taken from the input itself, when it is a string.
  if (doc->is_string()) {
    const std::string& ptr = doc->get_ref<const std::string&>();
    (void)cutover::GetString(*doc, ptr, "fp");
  }
  std::string dumped = cutover::DumpJson(*doc);
  auto again = cutover::ParseJson(dumped, "dump");
  FUZZ_CHECK(again.ok(), again.status().message());
  FUZZ_CHECK(*again == *doc, dumped);
  return 0;
}
