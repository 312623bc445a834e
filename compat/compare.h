// Comparing two compat records case by case: a numerics verdict (identical, equivalent, drift,
// regression, broken, missing, n/a) judged from the sampled outputs and their float64 truth with
// assert_close-style tolerances (compat/op.h ToleranceFor), error figures (relative error, ULP
// distance, normwise error) of the target against the source and against the truth, and a speed
// verdict from a bootstrap interval on the ratio of median times. A drift or regression names
// what the two records say differs in their setup (accumulate mode, backend, build type, TF32
// setting and SM count of cuda records, and from the embedded fingerprints CPU, glibc, GPU,
// compute capability and generation, driver, CUDA, cuBLAS, cuDNN, NCCL, TF32 and cuBLAS
// environment variables), and first the differences that explain a drift of that op ("likely
// cause": a TF32 change explains fp32 GEMM and convolution, a cuBLAS change GEMM, a cuDNN change
// convolution and attention, an SM count or GPU generation change every GPU kernel).
//
// Error measure: for outputs x and reference r at the sampled positions,
//   q = max_i |x_i - r_i| / (atol + rtol * max(|r_i|, rms(truth)))
// (the rms floor keeps outputs that cancel to near zero from dominating); q <= 1 passes.
//   identical   the output digests are equal
//   equivalent  q(target vs source) <= 1
//   drift       otherwise, and q(target vs truth) <= 1, or the target is no further from the
//               truth than the source
//   regression  q(target vs truth) > 1 and > q(source vs truth)
//   broken      an error on either side, NaN/Inf the source did not have, or samples that do not
//               line up; missing: the case is in one record only; n/a: the op has no meaning on
//               one side's backend.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_COMPARE_H_
#define CUTOVER_COMPAT_COMPARE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/record.h"
#include "compat/stability.h"
#include "core/junit.h"

namespace cutover {

// 2: speed_ratio (target / source speed) replaced time_ratio (target / source time).
inline constexpr char kCompatCompareSchema[] = "cutover.compat-compare/2";

enum class Verdict {
  kIdentical,
  kEquivalent,
  kDrift,
  kRegression,
  kBroken,
  kMissing,
  kNotApplicable
};
// Speed is the target's over the source's (source median time / target median time): above 1 the
// target is faster, the direction of every ratio cutover prints (DESIGN.md, "Ratios").
// faster / slower need the 95% interval of the speed ratio to exclude 1 AND the ratio itself to
// differ from 1 by more than kSpeedMinEffect (docs/compat.md says why); otherwise same.
enum class SpeedVerdict { kFaster, kSame, kSlower, kUnknown };
inline constexpr double kSpeedMinEffect = 0.05;

std::string_view VerdictName(Verdict v);            // "identical", ..., "n/a"
std::string_view SpeedVerdictName(SpeedVerdict v);  // "faster", "same", "slower", "unknown"

// Error of outputs x against a reference r at the sampled positions, over the pairs where both
// are finite (`compared` of them):
//   rel_i      |x_i - r_i| / |r_i|  (0 when both are 0, infinity when only r_i is 0)
//   ulp_i      the number of representable values of the dtype between x_i and r_i rounded to
//              the dtype (0: x_i is r_i correctly rounded); fp32, fp64 and u8 only, else NaN
//   normwise   ||x - r||_2 / ||r||_2 (0 when both norms are 0, infinity when only ||r|| is)
// nan and inf count x's samples that are NaN and infinite.
struct ErrorStats {
  uint64_t compared = 0;
  double max_rel = 0, mean_rel = 0;
  double max_ulp = 0;
  double normwise = 0;
  uint64_t nan = 0, inf = 0;
};

// REQUIRES: x.size() == r.size().
ErrorStats MeasureError(const std::vector<double>& x, const std::vector<double>& r,
                        std::string_view dtype);

struct CaseComparison {
  std::string id;
  std::string op;
  Verdict verdict = Verdict::kMissing;
  std::string reason;
  double q_target_source = 0, q_source_truth = 0, q_target_truth = 0;
  double rtol = 0, atol = 0;
  int differing_tiles = 0;
  // Filled when both sides ran and their sampled positions line up.
  bool has_error_stats = false;
  ErrorStats target_vs_source, target_vs_truth, source_vs_truth;
  // NaN and Inf among all outputs, from the records.
  uint64_t source_nan = 0, source_inf = 0, target_nan = 0, target_inf = 0;
  SpeedVerdict speed = SpeedVerdict::kUnknown;
  // Target / source speed (source median time / target median time) and its 95% interval.
  double speed_ratio = 0, speed_lo = 0, speed_hi = 0;
  bool unstable_timing = false;  // (p90 - p10) / median > kUnstableSpread on either side
  // Each side's rate as a fraction of its own calibrated ceiling (0: not calibrated).
  double source_fraction = 0, target_fraction = 0;
  // The setup differences that explain a drift or regression of this op, with why.
  std::vector<std::string> likely_causes;
  // How steadily each side ran and whether the target is noisier (compat/stability.h).
  StabilityComparison stability;
};

inline constexpr double kUnstableSpread = 0.25;

struct Comparison {
  std::vector<CaseComparison> cases;
  // What the records say differs between the two setups ("accumulate fp32 vs fp64", "GPU
  // NVIDIA A100 vs NVIDIA H100", ...), and what they cannot say (notes).
  std::vector<std::string> setup_differences;
  std::vector<std::string> notes;
  // The two records' calibrated ceilings (measured = false for a record without them).
  Calibration source_calibration, target_calibration;
  // Set by the caller (compare --fail-on-slower): a case judged slower then fails too.
  bool fail_on_slower = false;
  // True when any case is a regression or broken, or slower with fail_on_slower (the command
  // exits 1).
  bool failed() const;
  // Number of cases with verdict `v`, and with speed verdict `v`.
  int Count(Verdict v) const;
  int CountSpeed(SpeedVerdict v) const;
  // Over the cases: noisier when any is, else steadier when any is, else same (or not assessed).
  StabilityVerdict Stability() const;
};

// FailedPrecondition when the two records cannot be compared case by case: another op table
// version ("compat compare: a.rec has op table version 1, b.rec 2: cases of different op tables
// are not comparable (record both with the same cutover)"), or a case of the same ID defined
// differently (output count, reduction length, flops or bytes).
Status CheckComparable(const CompatRecord& source, const CompatRecord& target,
                       const std::string& source_name, const std::string& target_name);

// One difference between the setups of two records, and which cases it can explain.
struct SetupDifference {
  std::string text;              // "cublas 12.4.5.8 vs 12.6.3.3"
  std::string why;               // "another cuBLAS may pick other GEMM kernels"; "" unknown
  std::vector<std::string> ops;  // op-name prefixes it explains ("gemm", "conv2d"); empty: all
  bool fp32_only = false;        // explains only cases of dtype fp32 (TF32)
  // When not empty: the "op/dtype" keys it explains, and no others (a change of a case's
  // implementation, ImplementationDifferences).
  std::vector<std::string> cases;
  // True when this difference can explain a numerics change of `op` in `dtype`.
  bool Explains(const std::string& op, const std::string& dtype) const;
};
std::vector<SetupDifference> SetupDifferences(const CompatRecord& source,
                                              const CompatRecord& target,
                                              std::vector<std::string>* notes);

// The cases whose implementation (CaseResult::implementation, cpu and reference records) differs
// between the records, one difference per pair of implementations: "implementation OpenBLAS
// 0.3.21 (core Zen, 2 threads) vs reference (gemm/fp32)", explaining those cases only. Cases
// where either record names none (cuda, older records) are left out. Part of SetupDifferences.
std::vector<SetupDifference> ImplementationDifferences(const CompatRecord& source,
                                                       const CompatRecord& target);

// The setup differences (as text) and notes of Comparison, from the records' headers and
// fingerprints.
void DescribeSetupDifferences(const CompatRecord& source, const CompatRecord& target,
                              std::vector<std::string>* differences,
                              std::vector<std::string>* notes);

// Compares every case of `source` with the case of the same ID in `target` (source order, then
// the target's extra cases). A drift or regression's reason ends with the setup differences.
Comparison CompareRecords(const CompatRecord& source, const CompatRecord& target);

// The bootstrap 95% interval (2000 resamples, deterministic seed) of median(b) / median(a).
// REQUIRES: a and b not empty.
void BootstrapRatio(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed,
                    double* lo, double* hi);

nlohmann::json ComparisonToJson(const Comparison& c);
// A case's stability figures and verdict, as ComparisonToJson and the report write them.
nlohmann::json StabilityToJson(const StabilityComparison& s);
// The noisier and steadier cases with their figures and cause, then the overall verdict; "" when
// no case ran on both sides.
std::string StabilityLines(const Comparison& c);
// One line per case: verdict, ID, speed, "max rel / max ULP" against the source and against
// float64 truth, reason; then the setup differences, notes and a summary.
std::string ComparisonTable(const Comparison& c);
// One suite per op; regression/broken (and slower with fail_on_slower) are failures, missing and
// n/a skipped.
JunitReport ComparisonJunit(const Comparison& c);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_COMPARE_H_
