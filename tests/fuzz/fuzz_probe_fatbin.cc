// Fuzzes the ELF and fatbin readers of `probe check-binary` and `probe collect` (any file a user
// points it at, any library found on a host): no crash and no read past the input; an error
// names the file; what parses judges and renders. Also the .gnu.version_r reader behind
// libraries[].glibc_needed, on whole files and on raw (count, section, string table) splits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "probe/check_binary.h"
#include "probe/elf.h"
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
  cutover::probe::BufferSource source(bytes);
  auto elf = cutover::probe::ParseElf(source);
  if (elf.ok()) {
    auto needs = cutover::probe::ReadVersionNeeds(source, *elf);
    if (needs.ok()) {
      (void)cutover::probe::HighestGlibcVersion(*needs);
    } else {
      FUZZ_CHECK(needs.status().message().rfind("corrupt ELF", 0) == 0, needs.status().message());
    }
  }
  if (size >= 4) {
    uint32_t count = static_cast<uint32_t>(data[0]) | (static_cast<uint32_t>(data[1]) << 8);
    std::string_view rest = bytes.substr(4);
    size_t half = rest.size() / 2;
    auto raw = cutover::probe::ParseVersionNeeds(rest.substr(0, half), count, rest.substr(half));
    if (raw.ok()) {
      (void)cutover::probe::HighestGlibcVersion(*raw);
    } else {
      FUZZ_CHECK(raw.status().message().rfind("corrupt ELF", 0) == 0, raw.status().message());
    }
  }
  auto entries = cutover::probe::ParseFatbin(bytes);
  if (!entries.ok()) {
    FUZZ_CHECK(entries.status().message().rfind("corrupt fatbin", 0) == 0,
               entries.status().message());
  }
  return 0;
}
