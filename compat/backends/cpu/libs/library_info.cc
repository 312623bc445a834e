#include "compat/backends/cpu/cpu_libs.h"

namespace cutover::cpu {

std::string LibraryInfo::Summary() const {
  if (!available) return "";
  std::string s = name + " " + version;
  if (!detail.empty()) s += " (" + detail + ")";
  return s;
}

void SetLibraryThreads(int threads) {
  BlasSetThreads(threads);
  DnnlSetThreads(threads);
}

}  // namespace cutover::cpu
