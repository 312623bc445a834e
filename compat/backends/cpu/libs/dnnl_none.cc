// The cpu backend built without oneDNN (CUTOVER_CPU_LIBS=OFF or libdnnl not found):
// convolution and matmul run our kernels (the reference path).
#include "compat/backends/cpu/cpu_libs.h"

namespace cutover::cpu {

LibraryInfo DnnlInfo() { return {}; }

void DnnlSetThreads(int) {}

bool DnnlHasNativeBf16() { return false; }

Result<std::unique_ptr<DnnlKernel>> MakeDnnlKernel(const DnnlProblem&) {
  return Status::Unavailable("built without oneDNN");
}

}  // namespace cutover::cpu
