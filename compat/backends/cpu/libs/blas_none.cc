// The cpu backend built without a BLAS (CUTOVER_CPU_LIBS=OFF or OpenBLAS not found): every
// GEMM runs our kernels (the reference path).
#include <cstdlib>

#include "compat/backends/cpu/cpu_libs.h"

namespace cutover::cpu {

LibraryInfo BlasInfo() { return {}; }

void BlasSetThreads(int) {}

int BlasThreads() { return 0; }

void BlasSgemm(int64_t, int64_t, int64_t, const float*, const float*, float*) {
  std::abort();  // REQUIRES: BlasInfo().available
}

}  // namespace cutover::cpu
