// Data files shipped inside the binary (probe/data/*.json, embedded at build time by
// probe/embed_data.cmake), and the GPU table and driver-branch table read from them.
//
// Thread-safety: all functions are thread-safe (the tables are built once, on first use).
#ifndef CUTOVER_PROBE_DATA_H_
#define CUTOVER_PROBE_DATA_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover::probe {

// The text of the embedded data file `name` ("gpus.json"), or empty when there is none.
std::string_view EmbeddedData(std::string_view name);

// One row of probe/data/gpus.json.
struct GpuModel {
  unsigned device_id = 0;          // PCI device id (vendor 0x10de)
  std::string name;                // as NVML names it ("NVIDIA H100 80GB HBM3")
  std::string pci_name;            // as pci.ids names it ("GH100 [H100 SXM5 80GB]")
  std::string generation;          // "Hopper"
  std::string compute_capability;  // "9.0"
  uint64_t memory_mib = 0;
};

struct GpuTable {
  int version = 0;
  std::vector<GpuModel> models;
};

// Parses a GPU table document (schema "cutover.gpu-table/1").
Result<GpuTable> ParseGpuTable(std::string_view text);

// The embedded table (parsed once). An embedded file that fails to parse is a build bug; it
// yields an empty table.
const GpuTable& BuiltinGpuTable();

// The row for PCI device id `device_id`, or else the row whose NVML name equals `model_name`
// (case-insensitive; "NVIDIA " prefix optional), or nullptr.
const GpuModel* FindGpuModel(const GpuTable& table, std::optional<unsigned> device_id,
                             std::string_view model_name);

// The highest CUDA version ("12.4") a driver of version `driver_version` ("550.54.14")
// supports, from the embedded branch table; nullopt when older than every branch or unparsable.
std::optional<std::string> CudaForDriver(std::string_view driver_version);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_DATA_H_
