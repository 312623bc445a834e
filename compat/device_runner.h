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
// plugin as compat/op.h defines them (nccl-tests' count; CollectiveSendValue, CollectiveRecvCount,
// CollectiveTruth); the output is rank 0's receive buffer (all_gather: n blocks) and its truth
// follows the ranks that took part. With n > 1 ranks the rate is nccl-tests' bus bandwidth
// (CollectiveAlgBytes / time * BusBandwidthFactor); with n = 1 it is the algorithm bandwidth
// alone, and multi-GPU behaviour was not measured.
//
// h2d_copy {bytes} (u8): the plugin sends the first `bytes` bytes of input 0's float32 array and
// returns each byte that arrived; the truth is that byte.
//
// timing.fraction_of_ceiling comes from cfg.calibration (0 when it is not measured);
// RunSuiteToRecord (compat/suite_run.h) sets it again from the record's own calibration.
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
  Calibration calibration;  // the device's ceilings (compat/record.h), for fraction_of_ceiling
};

// True for the ops that run over every device (NCCL).
bool IsCollectiveOp(std::string_view op);

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
