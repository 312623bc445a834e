// The one shared runner: drives any op descriptor (compat/op.h) on a backend and fills a
// CaseResult (compat/record.h): inputs from Philox keyed by the case ID, one untimed run, `reps`
// timed runs (steady clock), determinism (first and last run bit-identical), digest, tiles, and
// outputs at seeded positions with float64 truth.
//
// Thread-safety: RunCase may be called from one thread at a time (the kernels use their own
// worker threads).
#ifndef CUTOVER_COMPAT_RUNNER_H_
#define CUTOVER_COMPAT_RUNNER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/op.h"
#include "compat/record.h"

namespace cutover {

inline constexpr size_t kDefaultSamples = 4096;

struct RunConfig {
  cpu::CpuConfig cpu;
  // --backend reference: every case on our own kernels, never a library (compat/cpu_kernels.h).
  bool reference_only = false;
  // --dump DIR: each case's inputs, output and sampled truth go to DIR (compat/case_dump.h); a
  // write failure makes the case an error naming it.
  std::string dump_dir;
  int reps = 5;
  size_t samples = kDefaultSamples;
};

// The seeded sample positions of a case with `n` outputs: all of them when n <= count.
std::vector<uint64_t> SamplePositions(const CaseSpec& spec, uint64_t n, size_t count);

// Runs one case on the cpu backend with the kernel SelectCpuKernel picks (named in the result's
// implementation). An op with no meaning on a CPU gives status "n/a"; a library call that fails
// gives status "error" with its message.
CaseResult RunCpuCase(const OpDescriptor& op, const CaseSpec& spec, const RunConfig& cfg);

// Measures the cpu backend's ceilings with cfg's threads (under a second or two on 2 cores): the
// best of 3 copies of 64 MiB (cpu::Copy; bytes read + written) and of 3 fp32 GEMMs of 768^3
// through the BLAS when the build has one and not `reference_only`, else cpu::Gemm (fp32
// accumulation whatever cfg says, so fp32 and fp64 runs share a yardstick); the GEMM's
// implementation is recorded.
Calibration CalibrateCpu(const cpu::CpuConfig& cfg, bool reference_only = false);

// timing.rate / the calibration's ceiling of the same unit (GB/s: copy; GFLOP/s: the fp32 GEMM,
// or for a case in a tensor-core dtype (tf32, fp16, bf16, fp8_e4m3, int8) the bf16 GEMM when the
// calibration measured one, as the cuda backend does); 0 when there is none.
double FractionOfCeiling(const Calibration& cal, const CaseTiming& timing, std::string_view dtype);

// The CMake build type cutover was built with ("Release", ...; "unspecified" when none).
std::string BuildType();

// The post-processing every backend shares: fills r's output_count, digest, tiles, NaN/Inf
// counts and the values at SamplePositions(spec, n, samples) with truth(index) beside them,
// from the n float32 outputs `out`.
void SummarizeOutput(const CaseSpec& spec, const float* out, size_t n, size_t samples,
                     const std::function<double(size_t)>& truth, CaseResult* r);
// Fills r's median, p10, p90 and rate (op.rate_unit of r->flops or r->bytes) from
// r->timing.reps_s.
void SummarizeTiming(const OpDescriptor& op, CaseResult* r);

// median, p10, p90 (linear interpolation between order statistics).
double Quantile(std::vector<double> v, double q);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_RUNNER_H_
