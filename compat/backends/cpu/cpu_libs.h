// The host's math libraries behind the cpu backend: a BLAS (OpenBLAS) for fp32 GEMM and oneDNN
// for convolution (forward, backward data, backward filter) and matmul (fp32, and bf16 where the
// CPU has bf16 instructions), as PyTorch's CPU path runs them. Both are loaded at run time, so
// the cutover binary links neither: OpenBLAS through a symbol table (libs/blas_openblas.cc),
// oneDNN through the plugin libcutover_compat_dnnl.so (dnnl/, built when CMake finds libdnnl).
// compat/CMakeLists.txt picks the files under libs/ (CUTOVER_CPU_LIBS=OFF: the *_none.cc ones).
// Where a library is missing, Info() says unavailable, MakeDnnlKernel fails with Unavailable,
// and callers run our own kernels (the reference path, cpu_ops.h).
//
// Thread-safety: SetLibraryThreads changes process-wide settings (OpenBLAS's thread count, the
// calling thread's OpenMP team size for oneDNN): call it from the thread that runs the kernels,
// before them. A kernel object runs one call at a time.
#ifndef CUTOVER_COMPAT_BACKENDS_CPU_CPU_LIBS_H_
#define CUTOVER_COMPAT_BACKENDS_CPU_CPU_LIBS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "compat/backends/cpu/cpu_ops.h"
#include "core/status.h"

namespace cutover::cpu {

// What a library build offers, as recorded: "OpenBLAS", "0.3.21", "core Zen, pthread".
struct LibraryInfo {
  bool available = false;
  std::string name;     // "OpenBLAS" | "oneDNN"
  std::string version;  // the loaded library's own ("0.3.21", "2.6.3")
  std::string detail;   // OpenBLAS: its core type; oneDNN: the CPU ISA it may use
  // "OpenBLAS 0.3.21 (core Zen)"; "" when not available.
  std::string Summary() const;
};

LibraryInfo BlasInfo();
LibraryInfo DnnlInfo();

// Sets OpenBLAS's thread count and oneDNN's OpenMP team (the calling thread's) to `threads`.
void SetLibraryThreads(int threads);
// Its two halves, one in each library's file (no-ops without the library).
void BlasSetThreads(int threads);
void DnnlSetThreads(int threads);
// The thread count OpenBLAS itself reports (openblas_get_num_threads); 0 without the library.
int BlasThreads();

// C[m,n] = A[m,k] * B[k,n], fp32 row-major, through cblas_sgemm.
// REQUIRES: BlasInfo().available.
void BlasSgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c);

// One oneDNN primitive prepared for one problem (created once, run many times). Inputs and
// output are float32 in our layouts (cpu_ops.h); with bf16 the inputs (already bf16 values) are
// converted exactly and the primitive accumulates in fp32 with a float32 output.
class DnnlKernel {
 public:
  virtual ~DnnlKernel() = default;
  // conv fwd: (x, w) -> y; bwd data: (dy, w) -> dx; bwd filter: (x, dy) -> dw; matmul: (a, b)
  // -> c. REQUIRES: buffers of the problem's sizes.
  virtual Status Run(const float* in0, const float* in1, float* out) = 0;
  // What oneDNN dispatched to: "brg:avx512_core", "jit:avx512_core_bf16", ...
  virtual const std::string& Implementation() const = 0;
};

// The numbers are the plugin ABI's (dnnl/dnnl_plugin_api.h).
enum class DnnlOp { kConvFwd = 0, kConvBwdData = 1, kConvBwdFilter = 2, kMatmul = 3 };

struct DnnlProblem {
  DnnlOp op = DnnlOp::kMatmul;
  bool bf16 = false;
  ConvShape conv;                        // the conv ops
  ConvLayout layout = ConvLayout::kNchw;  // the conv ops
  int64_t batch = 1, m = 1, n = 1, k = 1;  // matmul: batch x [m,k] * [k,n], row-major
};

// True when oneDNN can run bf16 with native instructions on this CPU (avx512_core_bf16 or
// newer); false without oneDNN.
bool DnnlHasNativeBf16();

// Unavailable "built without oneDNN" without it; Internal with oneDNN's message when it
// rejects the problem.
Result<std::unique_ptr<DnnlKernel>> MakeDnnlKernel(const DnnlProblem& problem);

}  // namespace cutover::cpu

#endif  // CUTOVER_COMPAT_BACKENDS_CPU_CPU_LIBS_H_
