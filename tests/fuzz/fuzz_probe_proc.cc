// Fuzzes the readers of /proc, sysfs, os-release, version headers, version files and Python
// package metadata that probe collect reads from a host or an image root: no crash, no read
// outside the input (ASan), and what the line-based readers return stays within one line.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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
  for (auto name : {ParseDistInfoName(text), ParseEggInfoName(text)}) {
    if (name) FUZZ_CHECK(!name->name.empty() && !name->version.empty(), name->version);
  }

  CpuSummary cpu = ParseCpuInfo(text);
  FUZZ_CHECK(cpu.logical_cpus >= 0 && static_cast<size_t>(cpu.logical_cpus) <= size,
             std::to_string(cpu.logical_cpus));
  if (cpu.model) {
    FUZZ_CHECK(!cpu.model->empty() && cpu.model->find('\n') == std::string::npos, *cpu.model);
  }
  PythonMetadata meta = ParsePythonMetadata(text);
  for (const std::optional<std::string>* field : {&meta.name, &meta.version}) {
    if (*field) FUZZ_CHECK((*field)->find('\n') == std::string::npos, **field);
  }
  for (const std::string& req : meta.requires_dist) {
    FUZZ_CHECK(req.find('\n') == std::string::npos, req);
    (void)RequirementVersion(req);
  }
  (void)PythonStringValue(text, "cuda");
  std::string_view name = text.substr(0, 256);
  (void)ParseLibraryFileName(name);
  (void)ParseDistInfoName(name);
  return 0;
}
