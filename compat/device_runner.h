// The device side of the shared runner: runs an op descriptor's case (compat/op.h) through a
// loaded backend plugin (compat/backend_loader.h, compat/plugin_api.h) and fills the same
// CaseResult as RunCpuCase (compat/runner.h): the same inputs from Philox, the plugin's output
// widened to float32, its digest, tiles and samples with float64 truth, and every timed
// repetition (CUDA events in the plugin, after warm-up, input copies rotated past L2).
//
// Status of a case: "ok"; "missing" when the plugin lacks the op or dtype; "n/a" when the case
// has no meaning on the device (fp8 before compute capability 8.9); "error" with the plugin's
// one-line reason otherwise.
//
// Collectives (all_reduce, all_gather, reduce_scatter, broadcast) run on every device of the
// plugin with nccl-tests' meaning of count (the elements each rank sends; reduce_scatter's each
// rank receives); element i of rank r's send buffer is x0[i % count] * (r + 1) * (i / count + 1)
// rounded to the dtype, and the output is rank 0's receive buffer (all_gather: n blocks). With
// n > 1 ranks the truth follows n, and the rate is the bus bandwidth of nccl-tests (algorithm
// bandwidth times CollectiveBusFactor); with n = 1 it is the algorithm bandwidth alone.
//
// Thread-safety: one call at a time per plugin (the plugin's run_case contract).
#ifndef CUTOVER_COMPAT_DEVICE_RUNNER_H_
#define CUTOVER_COMPAT_DEVICE_RUNNER_H_

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "compat/backend_loader.h"
#include "compat/op.h"
#include "compat/record.h"
#include "compat/runner.h"

namespace cutover {

struct DeviceRunConfig {
  int device = 0;        // the plugin's device ordinal
  int device_count = 1;  // devices the plugin has (collectives use them all)
  int warmup = 3;        // untimed runs before the timed ones
  int reps = 5;          // timed runs
  size_t samples = kDefaultSamples;
};

// True for the ops that run over every device (NCCL).
bool IsCollectiveOp(std::string_view op);

// nccl-tests' bus bandwidth factor for `ranks` > 1: all_reduce 2(n-1)/n, all_gather and
// reduce_scatter (n-1)/n, broadcast 1; 1 for any op when ranks <= 1 (only the algorithm
// bandwidth is meaningful then) and for an op that is not a collective.
double CollectiveBusFactor(std::string_view op, int ranks);

// Runs one case on `plugin`. REQUIRES: the plugin was initialized; spec names op.
CaseResult RunDeviceCase(const CutoverCompatPlugin& plugin, const OpDescriptor& op,
                         const CaseSpec& spec, const DeviceRunConfig& cfg);

// The record's "device" object for a run on `backend`'s device `ordinal`: name, sm_count,
// compute_capability, memory_bytes, pci_bus_id, device_count, build, libraries (the loaded
// versions), tf32 (what fp32 and tf32 cases use, and NVIDIA_TF32_OVERRIDE as set), and the
// calibration when `calibration` is not null. REQUIRES: backend initialized.
Result<nlohmann::json> DeviceRecordInfo(const LoadedBackend& backend, int ordinal,
                                        const BackendCalibration* calibration);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_DEVICE_RUNNER_H_
