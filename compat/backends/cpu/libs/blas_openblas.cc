// The BLAS of the cpu backend: the host's OpenBLAS, loaded on first use through a symbol table
// (libopenblas.so.0, as Debian's libopenblas0 and most distributions install it), so that the
// cutover binary links no BLAS and its tarball needs nothing but glibc. A host without it runs
// GEMM on our kernels; BlasInfo() then says unavailable.
#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "compat/backends/cpu/cpu_libs.h"

namespace cutover::cpu {
namespace {

// cblas.h's values for row-major, no transpose.
constexpr int kCblasRowMajor = 101;
constexpr int kCblasNoTrans = 111;

struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
  Sgemm sgemm = nullptr;                      // cblas_sgemm (blasint = int: LP64 builds)
  char* (*get_config)() = nullptr;            // openblas_get_config
  char* (*get_corename)() = nullptr;          // openblas_get_corename
  void (*set_num_threads)(int) = nullptr;     // openblas_set_num_threads
  int (*get_num_threads)() = nullptr;         // openblas_get_num_threads
  bool ok() const {
    return sgemm && get_config && get_corename && set_num_threads && get_num_threads;
  }
};

const OpenBlas& Load() {
  static const OpenBlas lib = [] {
    OpenBlas b;
    void* h = ::dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return b;
    b.sgemm = reinterpret_cast<OpenBlas::Sgemm>(::dlsym(h, "cblas_sgemm"));
    b.get_config = reinterpret_cast<char* (*)()>(::dlsym(h, "openblas_get_config"));
    b.get_corename = reinterpret_cast<char* (*)()>(::dlsym(h, "openblas_get_corename"));
    b.set_num_threads = reinterpret_cast<void (*)(int)>(::dlsym(h, "openblas_set_num_threads"));
    b.get_num_threads = reinterpret_cast<int (*)()>(::dlsym(h, "openblas_get_num_threads"));
    // An ILP64 build (64-bit blasint) says so in its config; its cblas_sgemm takes int64_t.
    if (b.ok() && std::string(b.get_config()).find("USE64BITINT") != std::string::npos) {
      b.sgemm = nullptr;
    }
    return b;
  }();
  return lib;
}

}  // namespace

LibraryInfo BlasInfo() {
  LibraryInfo info;
  const OpenBlas& b = Load();
  if (!b.ok()) return info;
  info.available = true;
  info.name = "OpenBLAS";
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64": the loaded library's version.
  std::istringstream config(b.get_config());
  std::string word;
  config >> word >> info.version;
  const char* core = b.get_corename();
  info.detail = std::string("core ") + (core != nullptr ? core : "unknown");
  return info;
}

void BlasSetThreads(int threads) {
  const OpenBlas& b = Load();
  if (b.ok()) b.set_num_threads(threads);
}

int BlasThreads() {
  const OpenBlas& b = Load();
  return b.ok() ? b.get_num_threads() : 0;
}

void BlasSgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) {
  const OpenBlas& lib = Load();
  if (!lib.ok()) std::abort();  // REQUIRES: BlasInfo().available
  lib.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, static_cast<int>(m),
            static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(k), b,
            static_cast<int>(n), 0.0f, c, static_cast<int>(n));
}

}  // namespace cutover::cpu
