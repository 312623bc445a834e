// Fuzzes the Xid reader of `probe health` (kernel logs): no crash; every event has a positive
// Xid and a line starting at the NVRM mark; judging and rendering a GPU against them works.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "probe/health.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto events = cutover::probe::ParseXidEvents(text);
  for (const auto& e : events) {
    FUZZ_CHECK(e.xid > 0, "xid");
    FUZZ_CHECK(e.text.rfind("NVRM: Xid (PCI:", 0) == 0, e.text);
  }
  cutover::Fingerprint fp;
  cutover::GpuInfo gpu;
  gpu.pci_bus_id = "00000000:18:00.0";
  fp.gpus.push_back(gpu);
  gpu.index = 1;
  gpu.pci_bus_id = std::string(text.substr(0, 24));  // whatever the input says
  fp.gpus.push_back(gpu);
  auto r = cutover::probe::JudgeHealth(fp, events, "fuzz");
  FUZZ_CHECK(r.gpus.size() == 2, "gpus");
  (void)cutover::DumpJson(cutover::probe::HealthToJson(r));
  (void)cutover::probe::RenderHealthTable(r);
  return 0;
}
