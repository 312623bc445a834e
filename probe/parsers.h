// Pure parsers for the host files probe reads: /proc and /sys files, os-release, CUDA and library
// headers, toolkit version files, Python package metadata, library file names.
//
// Every parser takes the text as read (possibly truncated, garbled or empty) and never crashes or
// throws: it returns what it could recognise, or nullopt / an error Status with the reason. They
// are the fuzz targets for probe's input handling.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_PROBE_PARSERS_H_
#define CUTOVER_PROBE_PARSERS_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover::probe {

// Trims ASCII whitespace and NUL bytes from both ends of a value read from a file (sysfs values
// may end in NUL); core/strings.h Trim for text.
std::string_view TrimField(std::string_view s);

// True when `s` is one or more dot-separated decimal numbers ("550.54.14", "9", "12.4").
bool IsDottedVersion(std::string_view s);

// Compares dotted versions numerically component by component ("12.10" > "12.9"); a missing
// component counts as 0. Non-numeric components compare as 0.
int CompareVersions(std::string_view a, std::string_view b);

// The first `n` components of a dotted version ("12.4.1", 2 -> "12.4").
std::string VersionPrefix(std::string_view version, int n);

// KEY=value lines of /etc/os-release (values unquoted; comments and junk lines skipped).
std::map<std::string, std::string> ParseOsRelease(std::string_view text);

// /proc/driver/nvidia/version.
struct NvidiaProcVersion {
  std::string version;  // "550.54.14"
  std::string flavor;   // "open" | "proprietary"
};
// InvalidArgument ("no NVRM version line" / "no version number in the NVRM line") on garbage.
Result<NvidiaProcVersion> ParseNvidiaProcVersion(std::string_view text);

// "Key: value" lines (/proc/driver/nvidia/gpus/*/information, /proc/cpuinfo blocks, ...): keys
// and values trimmed; lines without ':' skipped; the first occurrence of a key wins.
std::map<std::string, std::string> ParseColonFields(std::string_view text);

struct CpuSummary {
  std::optional<std::string> model;
  int logical_cpus = 0;
};
CpuSummary ParseCpuInfo(std::string_view text);

// MemTotal of /proc/meminfo in MiB.
std::optional<uint64_t> ParseMemTotalMib(std::string_view text);

// The PCIe generation of a sysfs link speed ("16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s").
std::optional<int> PcieGenFromSpeed(std::string_view speed);

// A decimal integer with surrounding whitespace ("16\n"), or nullopt.
std::optional<long long> ParseInteger(std::string_view text);

// "0x10de\n" -> 0x10de.
std::optional<unsigned> ParseHex(std::string_view text);

// The value of `#define NAME <integer>` in a C header.
std::optional<long long> HeaderDefine(std::string_view header, std::string_view name);

// cudnn_version.h (or cudnn.h before v8): "9.1.0" from CUDNN_MAJOR/MINOR/PATCHLEVEL.
std::optional<std::string> ParseCudnnHeader(std::string_view header);
// nccl.h: "2.21.5" from NCCL_MAJOR/MINOR/PATCH.
std::optional<std::string> ParseNcclHeader(std::string_view header);
// cublas_api.h: "12.4.5" from CUBLAS_VER_MAJOR/MINOR/PATCH.
std::optional<std::string> ParseCublasHeader(std::string_view header);
// cuda.h: CUDA_VERSION 12040 -> "12.4".
std::optional<std::string> ParseCudaHeader(std::string_view header);
// NvInferVersion.h: "10.0.1" from NV_TENSORRT_MAJOR/MINOR/PATCH.
std::optional<std::string> ParseTensorrtHeader(std::string_view header);

// A CUDA toolkit's version.json: the "cuda" component's "version" ("12.4.1").
std::optional<std::string> ParseToolkitVersionJson(std::string_view text);
// A CUDA toolkit's version.txt: "CUDA Version 11.0.228" -> "11.0.228".
std::optional<std::string> ParseToolkitVersionTxt(std::string_view text);
// `nvcc --version` output: "release 12.4, V12.4.131" -> "12.4.131".
std::optional<std::string> ParseNvccVersion(std::string_view text);

// A shared library file name such as "libcudnn_ops.so.9.1.0".
struct LibraryFileName {
  std::string stem;     // "cudnn_ops" (without "lib" and ".so")
  std::string version;  // "9.1.0"; "" for a bare "libfoo.so"
};
std::optional<LibraryFileName> ParseLibraryFileName(std::string_view file_name);

// A wheel's *.dist-info directory name: "nvidia_cudnn_cu12-9.1.0.70.dist-info".
struct DistInfoName {
  std::string name;  // normalised: lower case, '-' and '.' become '_'
  std::string version;
};
std::optional<DistInfoName> ParseDistInfoName(std::string_view dir_name);
// An egg's *.egg-info name (a directory holding PKG-INFO, or a single PKG-INFO-format file):
// "torch-1.13.0a0+gitunknown.egg-info", "foo-1.0-py3.11.egg-info" (the "-pyX.Y" tag is dropped).
std::optional<DistInfoName> ParseEggInfoName(std::string_view name);

// The core fields of a Python METADATA / PKG-INFO file.
struct PythonMetadata {
  std::optional<std::string> name;
  std::optional<std::string> version;
  std::vector<std::string> requires_dist;
};
PythonMetadata ParsePythonMetadata(std::string_view text);

// The string assigned to `name` in a Python file: `cuda = '12.4'`,
// `cuda: Optional[str] = "12.4"`, or in a dict literal `'cuda_version': '12.4'`. None -> nullopt.
std::optional<std::string> PythonStringValue(std::string_view text, std::string_view name);

// The pinned version in a Requires-Dist entry: "nvidia-cudnn-cu12==9.1.0.70; ..." -> "9.1.0.70",
// "nvidia-cudnn-cu12 (==8.9.2.26)" -> "8.9.2.26"; nullopt when not pinned with == or >=.
std::optional<std::string> RequirementVersion(std::string_view requirement);
// The distribution name of a requirement, normalised like ParseDistInfoName.
std::string RequirementName(std::string_view requirement);

// A "+cu124" local version tag -> "12.4" ("2.3.0+cu121" -> "12.1", "+cu118" -> "11.8").
std::optional<std::string> CudaFromLocalVersion(std::string_view version);

// Module names of /proc/modules.
std::vector<std::string> ParseProcModules(std::string_view text);

// glibc's version from the text of libc.so.6 ("GNU C Library ... release version 2.36").
std::optional<std::string> GlibcVersionFromLibc(std::string_view libc_bytes);
// glibc's version from a file name: "libc-2.31.so" -> "2.31".
std::optional<std::string> GlibcVersionFromFileName(std::string_view file_name);

// Package versions of installed packages in /var/lib/dpkg/status whose name starts with
// `prefix` (upstream version: epoch and Debian revision removed).
std::map<std::string, std::string> DpkgVersions(std::string_view status, std::string_view prefix);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_PARSERS_H_
