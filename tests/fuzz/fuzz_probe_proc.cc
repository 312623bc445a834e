// Fuzzes the readers of /proc, sysfs, os-release, version headers and version files that probe
// collect reads from a host or an image root: no crash, no read outside the input (ASan).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/parsers.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace cutover::probe;
  (void)ParseOsRelease(text);
  (void)ParseNvidiaProcVersion(text);
  (void)ParseColonFields(text);
  (void)ParseMemTotalMib(text);
  (void)ParseInteger(text);
  (void)ParseHex(text);
  (void)ParseCudnnHeader(text);
  (void)ParseNcclHeader(text);
  (void)ParseCublasHeader(text);
  (void)ParseCudaHeader(text);
  (void)ParseTensorrtHeader(text);
  (void)ParseToolkitVersionJson(text);
  (void)ParseToolkitVersionTxt(text);
  (void)ParseNvccVersion(text);
  (void)ParseProcModules(text);
  std::string_view name = text.substr(0, 256);
  (void)ParseLibraryFileName(name);
  (void)ParseDistInfoName(name);
  return 0;
}
