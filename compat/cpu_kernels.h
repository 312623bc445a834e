// Which implementation runs a case on the cpu backend. PyTorch's CPU path computes GEMM with a
// BLAS and convolution and matmul with oneDNN; so does ours where the build has them
// (compat/backends/cpu/cpu_libs.h): fp32 gemm through OpenBLAS; gemm_batched in fp32, gemm and
// gemm_batched in bf16 through oneDNN matmul; conv2d forward, backward data and backward filter
// in fp32 and bf16 through oneDNN; bf16 only where the CPU has bf16 instructions. Every other
// case, every case with float64 accumulation and every case of --backend reference runs our own
// kernels (op.run_cpu), named "reference": they stay the independent numerics of the record.
//
// Thread-safety: a CpuKernel runs one call at a time; SelectCpuKernel sets the libraries' thread
// count (process-wide), so call it from the thread that runs the cases.
#ifndef CUTOVER_COMPAT_CPU_KERNELS_H_
#define CUTOVER_COMPAT_CPU_KERNELS_H_

#include <functional>
#include <string>

#include "compat/op.h"
#include "core/status.h"

namespace cutover {

inline constexpr char kReferenceImplementation[] = "reference";

struct CpuKernel {
  // "OpenBLAS 0.3.21 (core Zen, 2 threads)", "oneDNN 2.6.3 (brg:avx512_core, 2 threads)" or
  // "reference".
  std::string implementation;
  // Computes the case's output (rounded to its output dtype) from its inputs.
  // REQUIRES: out has op.output_size(spec) elements.
  std::function<Status(const Tensors& in, float* out)> run;
};

// The kernel for `spec`: a library's when the build has it and the case has a counterpart
// (and neither `reference_only` nor cfg.fp64_accumulate), else op.run_cpu. A library that
// rejects the problem falls back to the reference, saying why in the implementation
// ("reference (oneDNN: ...)"). Sets the libraries' threads to cfg.threads.
CpuKernel SelectCpuKernel(const OpDescriptor& op, const CaseSpec& spec, const cpu::CpuConfig& cfg,
                          bool reference_only);

// The fp32 GEMM of the calibration: the BLAS's cblas_sgemm when the build has it (and not
// `reference_only`), else our cpu::Gemm with fp32 accumulation. `implementation` as above.
struct CalibrationGemm {
  std::string implementation;
  std::function<void(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c)>
      run;
};
CalibrationGemm SelectCalibrationGemm(const cpu::CpuConfig& cfg, bool reference_only);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CPU_KERNELS_H_
