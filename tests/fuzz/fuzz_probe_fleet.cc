// Fuzzes the streaming fingerprint reader of `probe fleet` against the DOM parser: no crash; it
// accepts exactly the documents ParseJson accepts as cutover.fingerprint/1, and the fields it
// reads equal the DOM's where they are plain strings.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "probe/fleet.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto host = cutover::probe::ReadFleetHost(text, "fuzz.json");
  auto doc = cutover::ParseJson(text, "fuzz.json");
  bool dom_ok =
      doc.ok() && cutover::CheckSchema(*doc, "cutover.fingerprint", 1, "fuzz.json").ok();
  FUZZ_CHECK(host.ok() == dom_ok, host.ok() ? "streaming reader accepted what the DOM refused"
                                            : host.status().message());
  if (!host.ok()) {
    FUZZ_CHECK(host.status().message().rfind("fuzz.json", 0) == 0, host.status().message());
    return 0;
  }
  FUZZ_CHECK(host->stack.size() == cutover::probe::FleetFields().size(), "stack size");
  const nlohmann::json* v = cutover::FindJson(*doc, "/driver/version");
  if (v != nullptr && v->is_string()) {
    FUZZ_CHECK(host->stack[2] == v->get<std::string>(), "driver differs from the DOM");
  }
  const nlohmann::json* k = cutover::FindJson(*doc, "/os/kernel");
  if (k != nullptr && k->is_string()) {
    FUZZ_CHECK(host->stack[1] == k->get<std::string>(), "kernel differs from the DOM");
  }
  cutover::probe::FleetReport r;
  r.hosts.push_back(*host);
  r.groups.push_back({{0}, {}});
  (void)cutover::DumpJson(cutover::probe::FleetToJson(r));
  (void)cutover::probe::RenderFleetTable(r);
  return 0;
}
