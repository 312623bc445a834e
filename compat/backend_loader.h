// Finds, loads and checks a compat backend plugin (compat/plugin_api.h) at run time, so that the
// `cutover` binary links no NVIDIA library and starts on hosts with no or a broken CUDA.
//
//   CUTOVER_ASSIGN_OR_RETURN(LoadedBackend cuda, LoadCudaBackend(LoaderOptions{}));
//   CUTOVER_RETURN_IF_ERROR(cuda.Init());
//
// Every failure is a Status::Environment with a one-line message: the paths tried, the dlerror
// text, or "plugin ABI 2, this cutover speaks 1".
//
// Thread-safety: LoadCudaBackend may be called from any thread. A LoadedBackend is used from one
// thread at a time; Init and the destructor must not race with other calls on it.
#ifndef CUTOVER_COMPAT_BACKEND_LOADER_H_
#define CUTOVER_COMPAT_BACKEND_LOADER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compat/plugin_api.h"
#include "core/status.h"

namespace cutover {

// The file name of the CUDA backend plugin.
inline constexpr char kCudaPluginFileName[] = "libcutover_compat_cuda.so";
// The environment variable that names the plugin file, overriding the search.
inline constexpr char kCudaPluginEnvVar[] = "CUTOVER_CUDA_PLUGIN";

struct LoaderOptions {
  // When set, only this file is tried (and the environment is not read).
  std::string plugin_path;
  // When plugin_path is empty and this variable is set and non-empty, only its value is tried.
  // Empty: do not read the environment.
  std::string env_var = kCudaPluginEnvVar;
  // The executable whose directory anchors the search; empty means /proc/self/exe. Tried in
  // order: <dir>/<file>, <dir>/../lib/cutover/<file>.
  std::string exe_path;
  std::string file_name = kCudaPluginFileName;
};

// A device as reported by the plugin.
struct BackendDevice {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  uint64_t total_memory = 0;  // bytes
  int sm_count = 0;
  std::string pci_bus_id;
};

// Library versions as loaded by the plugin; 0 where unknown.
struct BackendLibraryVersions {
  int cuda_runtime = 0;  // 1000*major + 10*minor
  int cuda_driver = 0;   // same encoding; 0: no driver
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  int64_t cublaslt = 0;  // 10000*major + 100*minor + patch
  int64_t cudnn = 0;     // 10000*major + 100*minor + patch
  int nccl = 0;          // 10000*major + 100*minor + patch

  // "CUDA runtime 13.0, CUDA driver none, cuBLAS 13.1.0, cuBLASLt 13.1.0, cuDNN 9.19.0,
  // NCCL 2.28.9".
  std::string ToString() const;
};

// A device's own ceilings as the plugin measured them (CutoverCompatCalibration).
struct BackendCalibration {
  double copy_kernel_gbps = 0;  // our copy kernel, bytes read + written
  double memcpy_gbps = 0;       // cudaMemcpyAsync device to device, read + written
  double gemm_bf16_tflops = 0;  // bf16 gemm_size^3
  double gemm_fp32_tflops = 0;  // fp32 4096^3, no TF32
  uint64_t copy_bytes = 0;
  int gemm_size = 0;
};

// A loaded plugin whose table passed the ABI checks. Move-only; the destructor calls the
// plugin's shutdown (when Init was called) and unloads the library.
class LoadedBackend {
 public:
  LoadedBackend(LoadedBackend&& other) noexcept;
  LoadedBackend& operator=(LoadedBackend&& other) noexcept;
  LoadedBackend(const LoadedBackend&) = delete;
  LoadedBackend& operator=(const LoadedBackend&) = delete;
  ~LoadedBackend();

  // The file that was loaded, and the plugin's name and build line.
  const std::string& path() const { return path_; }
  std::string name() const;
  std::string build_info() const;

  // Calls the plugin's init. Environment with the plugin's one-line reason on failure
  // (e.g. "no CUDA driver: cudaGetDeviceCount returned ..."). REQUIRES: called at most once.
  Status Init();
  bool initialized() const { return initialized_; }

  // REQUIRES: Init() succeeded.
  int DeviceCount() const;
  Result<BackendDevice> Device(int ordinal) const;

  // Works before Init and without a driver.
  Result<BackendLibraryVersions> LibraryVersions() const;

  // Runs the plugin's calibration on device `ordinal` (a few seconds). REQUIRES: Init() succeeded
  // (else FailedPrecondition); Environment with the plugin's reason on failure.
  Result<BackendCalibration> Calibrate(int ordinal) const;

  // The raw table, for op runners. Never null.
  const CutoverCompatPlugin& table() const { return *table_; }

 private:
  friend Result<LoadedBackend> LoadBackendFile(const std::string& path);
  LoadedBackend(void* handle, const CutoverCompatPlugin* table, std::string path)
      : handle_(handle), table_(table), path_(std::move(path)) {}
  void Release();

  void* handle_ = nullptr;
  const CutoverCompatPlugin* table_ = nullptr;
  std::string path_;
  bool initialized_ = false;
};

// The candidate files LoadCudaBackend tries, in order (see LoaderOptions).
std::vector<std::string> CudaPluginCandidates(const LoaderOptions& options);

// Loads the first existing candidate and checks it. Environment when none exists ("CUDA backend
// plugin not found: tried A, B (set CUTOVER_CUDA_PLUGIN to its path)") or when the one found
// fails to load or to pass the checks (LoadBackendFile). A candidate that exists but fails is
// not skipped: its error is returned.
Result<LoadedBackend> LoadCudaBackend(const LoaderOptions& options);

// Loads `path` with dlopen(RTLD_NOW | RTLD_LOCAL) and checks the entry point, the table's abi,
// struct_size and function pointers, before calling any of them.
Result<LoadedBackend> LoadBackendFile(const std::string& path);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_BACKEND_LOADER_H_
