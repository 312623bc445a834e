// The compat record ("schema": "cutover.compat-record/1", docs/schemas/compat-record-1.json):
// what `cutover compat run` writes per case. It never stores whole outputs: a SHA-256 digest of
// the output bytes, per-tile checksums on a fixed grid (kRecordTiles contiguous slices of the
// flat output), a few thousand outputs at seeded positions with their float64 truth, the timing
// repetitions and the deterministic flag. Bump kCompatRecordVersion on any incompatible change.
//
// Thread-safety: plain values; the functions are thread-safe on distinct objects.
#ifndef CUTOVER_COMPAT_RECORD_H_
#define CUTOVER_COMPAT_RECORD_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/op.h"
#include "core/status.h"

namespace cutover {

inline constexpr char kCompatRecordFamily[] = "cutover.compat-record";
inline constexpr int kCompatRecordVersion = 1;
inline constexpr int kRecordTiles = 64;
// The longest timing a record may hold, in seconds (one repetition, or a median): a day.
inline constexpr double kMaxTimingSeconds = 86400;

// What a run saw beside a case's timed repetitions, to explain a spread (compat/interference.h
// samples it; records without it read as not measured). -1: not readable on that host.
struct Interference {
  bool measured = false;
  double wall_s = 0;                 // the sampled period
  double steal_share = -1;           // CPU steal / all CPU time of the host (/proc/stat)
  int64_t involuntary_switches = -1;  // of this process (/proc/self/status)
  double cpu_mhz_min = -1, cpu_mhz_max = -1;  // current frequency of the CPUs (cpufreq)
  // The GPU through NVML (cuda backend): clocks, the OR of the clock-event (throttle) reasons
  // seen, peaks of temperature and power, and other compute processes on the device (a count,
  // never their names).
  double sm_clock_min_mhz = -1, sm_clock_max_mhz = -1, mem_clock_min_mhz = -1;
  int64_t throttle_reasons = -1;
  double temperature_max_c = -1, power_max_w = -1;
  int other_processes = -1;
};

struct CaseTiming {
  std::vector<double> reps_s;  // every timed repetition, steady clock
  double median_s = 0, p10_s = 0, p90_s = 0;
  double rate = 0;        // flops (or bytes) / median, in rate_unit
  std::string rate_unit;  // "GFLOP/s" | "GB/s"
  // rate / the record's calibrated ceiling of the same unit (copy GB/s or GEMM GFLOP/s); 0 when
  // the record has no calibration.
  double fraction_of_ceiling = 0;
  Interference interference;  // written as "interference" when measured
};

struct CaseResult {
  CaseSpec spec;
  std::string id;      // spec.Id()
  std::string status;  // "ok" | "n/a" | "error" | "missing" (the backend lacks the op)
  std::string error;   // why, for every status but "ok"
  // cpu and reference backends: what computed it, "OpenBLAS 0.3.21 (core Zen, 2 threads)",
  // "oneDNN 2.6.3 (brg:avx512_core, 2 threads)" or "reference" (our kernels); compat/
  // cpu_kernels.h. "" in cuda records and in records written before it.
  std::string implementation;
  uint64_t output_count = 0;
  std::string digest;              // hex SHA-256 of the output bytes
  std::vector<std::string> tiles;  // kRecordTiles hex prefixes (16) of per-tile SHA-256
  std::vector<uint64_t> sample_index;
  std::vector<double> sample_value;  // the output (as float, widened), NaN allowed
  std::vector<double> sample_truth;  // float64 truth from the same inputs
  uint64_t nan_count = 0, inf_count = 0;
  bool deterministic = true;  // two runs gave the same bits
  int64_t reduction_length = 1;
  double flops = 0, bytes = 0;
  CaseTiming timing;
};

// The backend's own ceilings, measured at the start of a run (compat/runner.h Calibrate): a
// large copy's bandwidth and a large GEMM's rate, so that each case's rate is also a fraction of
// what this device can do and hosts of different generations compare fairly.
struct Calibration {
  bool measured = false;            // false: an older record without calibration
  double copy_gbps = 0;             // bytes read + written / second, best of the repetitions
  double gemm_gflops = 0;           // fp32 GEMM, 2 M N K / second, best of the repetitions
  double copy_bytes = 0;            // the copy's bytes read + written
  std::vector<int64_t> gemm_shape;  // M, N, K (of the fp32 GEMM)
  double seconds = 0;               // the calibration's wall time
  // cuda only: a bf16 GEMM of gemm_bf16_size^3 (the ceiling of the tensor-core dtypes: tf32,
  // fp16, bf16, fp8_e4m3, int8); 0 when not measured (cpu: every GFLOP/s case uses gemm_gflops).
  double gemm_bf16_gflops = 0;
  int64_t gemm_bf16_size = 0;
  // cpu: what ran the fp32 GEMM ("OpenBLAS 0.3.21 (core Zen, 2 threads)" or "reference"); ""
  // for cuda and older records.
  std::string gemm_implementation;
};

struct CompatRecord {
  std::string backend;     // "cpu" | "reference" (our kernels only) | "cuda"
  std::string suite;       // "quick" | ...
  std::string accumulate;  // "fp32" | "fp64"
  int threads = 0;
  std::string build_type;  // the CMake build type of the cutover that ran it ("" unknown)
  Calibration calibration;
  // cuda records only (absent for cpu): whether TF32 tensor-core math was allowed for fp32
  // GEMM and convolution, and the device's SM count. -1: not recorded.
  int tf32_allowed = -1;  // 0 | 1 | -1
  int sm_count = -1;
  int op_table_version = kOpTableVersion;
  std::string created_at;  // RFC 3339 UTC
  std::string cutover_version;
  nlohmann::json fingerprint;  // a cutover.fingerprint/1 document (or null)
  // The backend's device as it ran the cases (cuda: name, SMs, compute capability, library
  // versions, TF32 setting, calibration); null for cpu. Written as "device" when not null.
  nlohmann::json device;
  std::vector<CaseResult> cases;
};

nlohmann::json RecordToJson(const CompatRecord& rec);
// Reads a record; InvalidArgument naming `what` and the field for a wrong schema, a missing or
// mistyped field ("a.rec: /cases/3/digest: missing"), an ok case with no timed repetition, a
// timing that is not finite, above 0 and at most kMaxTimingSeconds ("a.rec: /cases/0:
// /timing/reps_s/2: expected a time in seconds above 0 and at most 86400, got 1e+308"), or a case
// ID that appears twice.
Result<CompatRecord> RecordFromJson(const nlohmann::json& doc, const std::string& what);
// Reads and parses a record file (a truncated file is a positioned syntax error).
Result<CompatRecord> LoadRecord(const std::string& path);
// Writes the record atomically.
Status SaveRecord(const std::string& path, const CompatRecord& rec);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_RECORD_H_
