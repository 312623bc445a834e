// The compat op table: each op is one descriptor (name, dtypes, shapes per suite, input maker,
// cpu run, float64 truth at one position, flops and bytes counted, reduction length for the
// tolerance), driven by the one shared runner (compat/runner.h), like nccl-tests' struct testColl.
// Bump kOpTableVersion when a case's inputs or meaning change (records of another table version
// are not comparable case by case).
//
// Thread-safety: the registry is immutable after first use; descriptors are read-only.
#ifndef CUTOVER_COMPAT_OP_H_
#define CUTOVER_COMPAT_OP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compat/backends/cpu/cpu_ops.h"
#include "compat/dtype.h"
#include "core/status.h"

namespace cutover {

// 2: conv2d (fwd, bwd-data, bwd-filter), sdpa, gemm_batched, collectives; gemm in tf32, fp16,
//    bf16, fp8_e4m3 and int8; the `dist` of a case (normal, uniform, stress).
inline constexpr int kOpTableVersion = 2;

enum class Suite { kQuick, kStandard, kFull };
// "quick" | "standard" | "full"; InvalidArgument "unknown suite 'x' (use quick, standard, full)".
Result<Suite> ParseSuite(std::string_view name);
std::string_view SuiteName(Suite s);

// The input distributions. normal (the default): N(mean, sd) per tensor as the op sets;
// uniform: the same mean and variance, uniform; stress: magnitudes log-uniform over a wide
// range of the dtype's exponents (capped per op so that outputs stay finite), with about 1/8 of
// the elements the dtype's subnormals, 1/16 at the cap, 1/32 exact zeros, random signs.
// "normal" | "uniform" | "stress"; InvalidArgument "unknown input distribution 'x' (use normal,
// uniform, stress)".
Status ParseDist(std::string_view name);

// One case: the same inputs on every backend and host.
struct CaseSpec {
  std::string op;
  std::string dtype;           // "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8", "u8"
  std::vector<int64_t> shape;  // op-specific (gemm: M, N, K)
  std::string layout;          // "row-major", "NCHW", "NHWC", "causal", "full", "ring"
  uint64_t seed = 1;
  std::string dist = "normal";
  // The canonical ID "op/dtype/AxBxC/layout/seed=N", with "/dist=D" before the seed when the
  // distribution is not normal ("gemm/fp16/256x256x256/row-major/dist=stress/seed=1"); the
  // Philox key comes from it.
  std::string Id() const;
};

using Tensors = std::vector<std::vector<float>>;

struct OpDescriptor {
  std::string name;
  std::string description;
  std::string shape_meaning;  // "M x N x K"
  std::vector<std::string> dtypes;
  std::vector<std::vector<int64_t>> quick, standard, full;  // shapes per suite
  // A suite runs dtypes x shapes x layouts (dist normal), less what `keep` drops, plus one
  // dist-stress case per dtype of `stress_dtypes` at the suite's first shape and first layout.
  std::vector<std::string> layouts = {"row-major"};
  bool (*keep)(Suite, const CaseSpec&) = nullptr;  // null: keep every case
  std::vector<std::string> stress_dtypes;
  bool on_cpu = true;     // false: the op has no meaning on a CPU (n/a there)
  std::string rate_unit;  // "GFLOP/s" or "GB/s"
  Tensors (*make_inputs)(const CaseSpec&) = nullptr;
  size_t (*output_size)(const CaseSpec&) = nullptr;
  // REQUIRES: out has output_size elements.
  void (*run_cpu)(const CaseSpec&, const cpu::CpuConfig&, const Tensors&, float* out) = nullptr;
  // The float64 result at flat output position `index`, from the same float inputs.
  double (*truth)(const CaseSpec&, const Tensors&, size_t index) = nullptr;
  double (*flops)(const CaseSpec&) = nullptr;
  double (*bytes)(const CaseSpec&) = nullptr;
  // How many rounded terms feed one output (gemm: K; elementwise: 1): scales the tolerance.
  int64_t (*reduction_length)(const CaseSpec&) = nullptr;
};

// ---- The collectives (all_reduce, all_gather, reduce_scatter, broadcast), run by the CUDA
// backend only. shape {count}: nccl-tests' count, the elements each rank sends (all_reduce,
// broadcast, all_gather) or receives (reduce_scatter); the reduction is a sum; broadcast's root
// is rank 0. make_inputs gives one tensor x0 of `count` elements (already rounded to the dtype);
// rank r's send buffer is CollectiveSendValue(...) below, so that a block sent to the wrong rank
// or summed twice shows in the outputs.

// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n,
// broadcast 1; 0 for another op. With n = 1 report algorithm bandwidth only (and say that
// multi-GPU behaviour was not measured): the factor is then 0 for all but broadcast.
double BusBandwidthFactor(std::string_view op, int nranks);
// Elements of rank r's send buffer and receive buffer for `count` and `nranks` ranks:
// all_reduce count/count, broadcast count/count, all_gather count/count*n,
// reduce_scatter count*n/count.
int64_t CollectiveSendCount(std::string_view op, int64_t count, int nranks);
int64_t CollectiveRecvCount(std::string_view op, int64_t count, int nranks);
// Element i of rank r's send buffer: x0[i % count] * (r + 1) * (i / count + 1) (the block
// number i / count is 0 except for reduce_scatter's n blocks), rounded to `dtype`.
float CollectiveSendValue(std::string_view dtype, const std::vector<float>& x0, int rank,
                          int64_t i);
// Element i of rank r's receive buffer, in float64 from the send values.
double CollectiveTruth(std::string_view op, std::string_view dtype, const std::vector<float>& x0,
                       int nranks, int rank, int64_t i);
// The bytes of the algorithm bandwidth (nccl-tests): all_reduce and broadcast count * size,
// all_gather and reduce_scatter count * n * size (size 4 for fp32, 2 for bf16).
double CollectiveAlgBytes(std::string_view op, std::string_view dtype, int64_t count, int nranks);

// Every registered op, in listing order.
const std::vector<OpDescriptor>& OpRegistry();
// The op named `name`, or nullptr.
const OpDescriptor* FindOp(std::string_view name);

// The cases of `suite`, restricted to `ops` when not empty (InvalidArgument on an unknown name:
// "unknown op 'x' (see cutover compat list)").
Result<std::vector<CaseSpec>> SuiteCases(Suite suite, const std::vector<std::string>& ops);

// assert_close-style tolerance |x - t| <= atol + rtol * |t|, per dtype and widened for long
// reductions: rtol = max(base, 8 * u * sqrt(n)) for n > 1, with base the output rounding
// (PyTorch's defaults: fp32 1.3e-6, fp16 1e-3, bf16 1.6e-2; tf32 1e-3; fp8_e4m3 1.6e-2, its bf16
// output) and u the unit roundoff of the accumulation (fp32's for fp32, tf32, fp16 and bf16,
// 2^-14 for fp8_e4m3 on tensor cores). int8, u8: exact (0, 0). docs/compat.md says why.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance ToleranceFor(std::string_view dtype, int64_t reduction_length);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_OP_H_
