#include "compat/backend_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace cutover {
namespace {

namespace fs = std::filesystem;

// Plugin text goes into one-line messages: no control characters.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string DlErrorText() {
  const char* e = ::dlerror();
  return e != nullptr ? OneLine(e) : std::string("unknown dlerror");
}

std::string FromBuffer(const char* buf, size_t size) {
  size_t n = 0;
  while (n < size && buf[n] != '\0') ++n;
  return OneLine(std::string(buf, n));
}

// "major.minor" of the CUDA encoding (1000*major + 10*minor), or "none".
std::string CudaDotted(int64_t v) {
  if (v <= 0) return "none";
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// "major.minor.patch" of the library encoding (10000*major + 100*minor + patch), or "none".
std::string LibDotted(int64_t v) {
  if (v <= 0) return "none";
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}

// The error text of a failed plugin call: the plugin's reason, or its code when it gave none.
std::string CallError(const char* what, int rc, const char* err, size_t size) {
  std::string reason = FromBuffer(err, size);
  if (reason.empty()) reason = std::string(what) + " failed with code " + std::to_string(rc);
  return reason;
}

}  // namespace

std::string BackendLibraryVersions::ToString() const {
  std::string cublas = cublas_major > 0
                           ? std::to_string(cublas_major) + "." + std::to_string(cublas_minor) +
                                 "." + std::to_string(cublas_patch)
                           : "none";
  return "CUDA runtime " + CudaDotted(cuda_runtime) + ", CUDA driver " + CudaDotted(cuda_driver) +
         ", cuBLAS " + cublas + ", cuBLASLt " + LibDotted(cublaslt) + ", cuDNN " +
         LibDotted(cudnn) + ", NCCL " + LibDotted(nccl);
}

LoadedBackend::LoadedBackend(LoadedBackend&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      table_(std::exchange(other.table_, nullptr)),
      path_(std::move(other.path_)),
      initialized_(std::exchange(other.initialized_, false)) {}

LoadedBackend& LoadedBackend::operator=(LoadedBackend&& other) noexcept {
  if (this != &other) {
    Release();
    handle_ = std::exchange(other.handle_, nullptr);
    table_ = std::exchange(other.table_, nullptr);
    path_ = std::move(other.path_);
    initialized_ = std::exchange(other.initialized_, false);
  }
  return *this;
}

LoadedBackend::~LoadedBackend() { Release(); }

void LoadedBackend::Release() {
  if (table_ != nullptr && initialized_) table_->shutdown();
  initialized_ = false;
  table_ = nullptr;
  if (handle_ != nullptr) ::dlclose(handle_);
  handle_ = nullptr;
}

std::string LoadedBackend::name() const {
  return table_->name != nullptr ? OneLine(table_->name) : std::string();
}

std::string LoadedBackend::build_info() const {
  return table_->build_info != nullptr ? OneLine(table_->build_info) : std::string();
}

Status LoadedBackend::Init() {
  if (initialized_) return Status::Internal("LoadedBackend::Init called twice");
  char err[512] = {0};
  int rc = table_->init(err, sizeof(err));
  // shutdown is safe after a failed init too; the destructor calls it either way.
  initialized_ = true;
  if (rc != CUTOVER_COMPAT_OK) {
    return Status::Environment(CallError("init", rc, err, sizeof(err)));
  }
  return Status::Ok();
}

int LoadedBackend::DeviceCount() const { return initialized_ ? table_->device_count() : 0; }

Result<BackendDevice> LoadedBackend::Device(int ordinal) const {
  CutoverCompatDeviceInfo info{};
  info.struct_size = sizeof(info);
  char err[512] = {0};
  int rc = table_->device_info(ordinal, &info, err, sizeof(err));
  if (rc != CUTOVER_COMPAT_OK) {
    return Status::Environment(CallError("device_info", rc, err, sizeof(err)));
  }
  BackendDevice d;
  d.ordinal = info.ordinal;
  d.name = FromBuffer(info.name, sizeof(info.name));
  d.cc_major = info.cc_major;
  d.cc_minor = info.cc_minor;
  d.total_memory = info.total_memory;
  d.sm_count = info.sm_count;
  d.pci_bus_id = FromBuffer(info.pci_bus_id, sizeof(info.pci_bus_id));
  return d;
}

Result<BackendLibraryVersions> LoadedBackend::LibraryVersions() const {
  CutoverCompatLibraryVersions v{};
  v.struct_size = sizeof(v);
  char err[512] = {0};
  int rc = table_->library_versions(&v, err, sizeof(err));
  if (rc != CUTOVER_COMPAT_OK) {
    return Status::Environment(CallError("library_versions", rc, err, sizeof(err)));
  }
  BackendLibraryVersions out;
  out.cuda_runtime = v.cuda_runtime;
  out.cuda_driver = v.cuda_driver;
  out.cublas_major = v.cublas_major;
  out.cublas_minor = v.cublas_minor;
  out.cublas_patch = v.cublas_patch;
  out.cublaslt = v.cublaslt;
  out.cudnn = v.cudnn;
  out.nccl = v.nccl;
  return out;
}

Result<BackendCalibration> LoadedBackend::Calibrate(int ordinal) const {
  if (!initialized_) return Status::FailedPrecondition("calibrate before init");
  CutoverCompatCalibration c{};
  c.struct_size = sizeof(c);
  char err[512] = {0};
  int rc = table_->calibrate(ordinal, &c, err, sizeof(err));
  if (rc != CUTOVER_COMPAT_OK) {
    return Status::Environment(CallError("calibrate", rc, err, sizeof(err)));
  }
  BackendCalibration out;
  out.copy_kernel_gbps = c.copy_kernel_gbps;
  out.memcpy_gbps = c.memcpy_gbps;
  out.gemm_bf16_tflops = c.gemm_bf16_tflops;
  out.gemm_fp32_tflops = c.gemm_fp32_tflops;
  out.copy_bytes = c.copy_bytes;
  out.gemm_size = c.gemm_size;
  return out;
}

std::vector<std::string> CudaPluginCandidates(const LoaderOptions& options) {
  std::error_code ec;
  auto absolute = [&ec](const std::string& p) {
    fs::path a = fs::absolute(p, ec);
    return (ec ? fs::path(p) : a).lexically_normal().string();
  };
  if (!options.plugin_path.empty()) return {absolute(options.plugin_path)};
  if (!options.env_var.empty()) {
    const char* env = std::getenv(options.env_var.c_str());
    if (env != nullptr && *env != '\0') return {absolute(env)};
  }
  fs::path exe = options.exe_path.empty() ? fs::read_symlink("/proc/self/exe", ec)
                                          : fs::path(options.exe_path);
  if (exe.empty()) return {};
  fs::path dir = exe.parent_path();
  return {(dir / options.file_name).lexically_normal().string(),
          (dir / ".." / "lib" / "cutover" / options.file_name).lexically_normal().string()};
}

Result<LoadedBackend> LoadCudaBackend(const LoaderOptions& options) {
  std::vector<std::string> candidates = CudaPluginCandidates(options);
  std::string tried;
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::exists(c, ec)) return LoadBackendFile(c);
    if (!tried.empty()) tried += ", ";
    tried += c;
  }
  if (tried.empty()) tried = "nothing (cannot read /proc/self/exe)";
  std::string hint;
  if (!options.plugin_path.empty()) {
    hint = "";
  } else if (candidates.size() == 1) {
    hint = " (from " + options.env_var + ")";
  } else if (!options.env_var.empty()) {
    hint = " (set " + options.env_var + " to its path)";
  }
  return Status::Environment("CUDA backend plugin not found: tried " + tried + hint);
}

Result<LoadedBackend> LoadBackendFile(const std::string& path) {
  ::dlerror();
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Status::Environment("cannot load CUDA backend plugin: " + DlErrorText());
  }
  auto refuse = [&](const std::string& why) {
    ::dlclose(handle);
    return Status::Environment("CUDA backend plugin " + path + " refused: " + why);
  };
  ::dlerror();
  void* sym = ::dlsym(handle, CUTOVER_COMPAT_PLUGIN_ENTRY_NAME);
  if (sym == nullptr) {
    ::dlerror();
    return refuse("no entry point " CUTOVER_COMPAT_PLUGIN_ENTRY_NAME " (not a cutover plugin)");
  }
  auto entry = reinterpret_cast<CutoverCompatPluginEntryFn>(sym);
  const CutoverCompatPlugin* table = entry(CUTOVER_COMPAT_PLUGIN_ABI);
  if (table == nullptr) return refuse("its entry point returned no plugin table");
  if (table->abi != CUTOVER_COMPAT_PLUGIN_ABI) {
    return refuse("plugin ABI " + std::to_string(table->abi) + ", this cutover speaks " +
                  std::to_string(CUTOVER_COMPAT_PLUGIN_ABI));
  }
  if (table->struct_size < sizeof(CutoverCompatPlugin)) {
    return refuse("plugin table is " + std::to_string(table->struct_size) + " bytes, ABI " +
                  std::to_string(CUTOVER_COMPAT_PLUGIN_ABI) + " needs " +
                  std::to_string(sizeof(CutoverCompatPlugin)));
  }
  const char* missing = nullptr;
  if (table->init == nullptr)
    missing = "init";
  else if (table->shutdown == nullptr)
    missing = "shutdown";
  else if (table->device_count == nullptr)
    missing = "device_count";
  else if (table->device_info == nullptr)
    missing = "device_info";
  else if (table->library_versions == nullptr)
    missing = "library_versions";
  else if (table->run_case == nullptr)
    missing = "run_case";
  else if (table->calibrate == nullptr)
    missing = "calibrate";
  if (missing != nullptr) return refuse(std::string("plugin table has no ") + missing);
  return LoadedBackend(handle, table, path);
}

}  // namespace cutover
