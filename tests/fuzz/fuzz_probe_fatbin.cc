// Fuzzes the ELF and fatbin readers of `probe check-binary` (any file a user points it at): no
// crash and no read past the input; an error names the file; what parses judges and renders.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "probe/check_binary.h"
#include "probe/fatbin.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto img = cutover::probe::ReadBinaryImage("fuzz.bin", bytes);
  if (img.ok()) {
    cutover::Fingerprint fp;
    fp.gpus.push_back({.index = 0, .compute_capability = "9.0"});
    fp.driver.status = "ok";
    fp.driver.cuda_version = "12.4";
    auto r = cutover::probe::CheckBinaries({*img}, fp);
    (void)cutover::DumpJson(cutover::probe::CheckBinaryToJson(r));
    (void)cutover::probe::RenderCheckBinaryTable(r);
  } else {
    FUZZ_CHECK(img.status().message().find("fuzz.bin") != std::string::npos,
               img.status().message());
  }
  auto entries = cutover::probe::ParseFatbin(bytes);
  if (!entries.ok()) {
    FUZZ_CHECK(entries.status().message().rfind("corrupt fatbin", 0) == 0,
               entries.status().message());
  }
  return 0;
}
