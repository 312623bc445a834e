// `probe check-binary`: reads the GPU code embedded in ELF executables, shared libraries and
// objects (.nv_fatbin, __nv_relfatbin), and judges for each GPU of a target fingerprint whether
// it can run that code: by SASS (same major, minor no higher; arch-specific "a" SASS only on
// exactly that compute capability; family "f" SASS on the same major with a minor no lower), or
// by JIT from PTX (the PTX's compute capability no higher than the GPU, under the same a/f rules,
// and its PTX ISA version no newer than the target driver's CUDA version can JIT).
//
// Thread-safety: pure functions.
#ifndef CUTOVER_PROBE_CHECK_BINARY_H_
#define CUTOVER_PROBE_CHECK_BINARY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fingerprint.h"
#include "core/status.h"
#include "probe/fatbin.h"

namespace cutover::probe {

// Bump on any incompatible change to the JSON document (no JSON Schema file yet).
inline constexpr char kCheckBinarySchema[] = "cutover.check-binary/1";

// One row of the built-in PTX ISA table (from the PTX ISA release history).
struct PtxIsaRelease {
  unsigned ptx_major, ptx_minor;
  unsigned cuda_major, cuda_minor;  // the first CUDA release (and driver) that reads it
};

// The built-in table, oldest first.
const std::vector<PtxIsaRelease>& PtxIsaTable();

// The CUDA version ("12.8") that first reads PTX ISA `major.minor`, or nullopt when unknown.
std::optional<std::string> CudaForPtxIsa(unsigned major, unsigned minor);

// What one file holds.
struct BinaryImage {
  std::string path;
  std::vector<std::string> sections;  // fatbin sections found (".nv_fatbin", "__nv_relfatbin")
  std::vector<FatbinEntry> entries;   // in file order
  bool HasGpuCode() const { return !entries.empty(); }
};

// Reads `bytes` (the content of `path`). InvalidArgument naming the path when it is not an
// ELF64 file or its fatbin is corrupt. An ELF without fatbin sections yields no entries.
Result<BinaryImage> ReadBinaryImage(const std::string& path, std::string_view bytes);

// Reads the file at `path` (NotFound/IoError name it), then ReadBinaryImage.
Result<BinaryImage> ReadBinaryFile(const std::string& path);

// Whether an entry of `entry` runs on compute capability `cc_major.cc_minor` by the SASS or
// PTX compute-capability rules alone (the driver is judged separately for PTX).
bool ArchRunsOn(const FatbinEntry& entry, unsigned cc_major, unsigned cc_minor);

struct GpuVerdict {
  int index = 0;
  std::string name;
  std::string compute_capability;  // as the fingerprint gives it; empty when unknown
  std::string verdict;             // "runs" | "fails" | "unknown"
  std::string via;                 // "sass sm_90" or "ptx compute_80 (JIT)" when it runs
  std::string reason;              // why, when it does not run
};

// Judges one image on one GPU (what CheckBinaries does for each pair). `driver_cuda_version`:
// the CUDA version ("12.4") the GPU's driver supports, for PTX JIT; nullopt when unknown.
GpuVerdict JudgeImage(const BinaryImage& image, const GpuInfo& gpu,
                      const std::optional<std::string>& driver_cuda_version);

// The entry an arch name stands for ("sm_90a", "compute_100f"); nullopt for other text. PTX
// entries get PTX ISA `ptx_isa` ("8.8"), or the oldest ISA known when it is not given.
std::optional<FatbinEntry> EntryFromArchName(std::string_view name,
                                             const std::optional<std::string>& ptx_isa);

struct FileVerdict {
  BinaryImage image;
  std::vector<GpuVerdict> gpus;  // empty when the file has no GPU code
};

struct CheckBinaryReport {
  std::optional<std::string> driver_cuda_version;
  std::vector<FileVerdict> files;
  // True when some GPU does not (or may not) run some file with GPU code.
  bool AnyFailure() const;
};

// Judges every image against every GPU of `target`.
CheckBinaryReport CheckBinaries(std::vector<BinaryImage> images, const Fingerprint& target);

// The JSON document (schema kCheckBinarySchema) and the text table.
nlohmann::json CheckBinaryToJson(const CheckBinaryReport& report);
std::string RenderCheckBinaryTable(const CheckBinaryReport& report);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_CHECK_BINARY_H_
