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
#include <vector>

#include "compat/op.h"
#include "compat/record.h"

namespace cutover {

inline constexpr size_t kDefaultSamples = 4096;

struct RunConfig {
  cpu::CpuConfig cpu;
  int reps = 5;
  size_t samples = kDefaultSamples;
};

// The seeded sample positions of a case with `n` outputs: all of them when n <= count.
std::vector<uint64_t> SamplePositions(const CaseSpec& spec, uint64_t n, size_t count);

// Runs one case on the cpu backend. An op with no meaning on a CPU gives status "n/a".
CaseResult RunCpuCase(const OpDescriptor& op, const CaseSpec& spec, const RunConfig& cfg);

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
