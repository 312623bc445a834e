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
#include "core/status.h"

namespace cutover {

inline constexpr int kOpTableVersion = 1;

enum class Suite { kQuick, kStandard, kFull };
// "quick" | "standard" | "full"; InvalidArgument "unknown suite 'x' (use quick, standard, full)".
Result<Suite> ParseSuite(std::string_view name);
std::string_view SuiteName(Suite s);

// One case: the same inputs on every backend and host.
struct CaseSpec {
  std::string op;
  std::string dtype;           // "fp32", ...
  std::vector<int64_t> shape;  // op-specific (gemm: M, N, K)
  std::string layout;          // "row-major"
  uint64_t seed = 1;
  // The canonical ID "op/dtype/AxBxC/layout/seed=N": the Philox key comes from it.
  std::string Id() const;
};

using Tensors = std::vector<std::vector<float>>;

struct OpDescriptor {
  std::string name;
  std::string description;
  std::string shape_meaning;  // "M x N x K"
  std::vector<std::string> dtypes;
  std::vector<std::vector<int64_t>> quick, standard, full;  // shapes per suite
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

// Every registered op, in listing order.
const std::vector<OpDescriptor>& OpRegistry();
// The op named `name`, or nullptr.
const OpDescriptor* FindOp(std::string_view name);

// The cases of `suite`, restricted to `ops` when not empty (InvalidArgument on an unknown name:
// "unknown op 'x' (see cutover compat list)").
Result<std::vector<CaseSpec>> SuiteCases(Suite suite, const std::vector<std::string>& ops);

// assert_close-style tolerance |x - t| <= atol + rtol * |t|, per dtype (PyTorch's defaults)
// and widened for long reductions: rtol = max(base, 8 * u * sqrt(n)) for n > 1, u the unit
// roundoff.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
Tolerance ToleranceFor(std::string_view dtype, int64_t reduction_length);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_OP_H_
