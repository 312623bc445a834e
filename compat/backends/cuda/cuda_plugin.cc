// The CUDA compat backend plugin (libcutover_compat_cuda.so): implements compat/plugin_api.h
// with the CUDA runtime, cuBLAS, cuDNN, NCCL and the kernels in this directory. It links CUDA for
// real; the cutover binary only ever reaches it through dlopen.
//
// Thread-safety: as in compat/plugin_api.h. The state below is written only by init and
// shutdown, which the host calls with no other call in flight.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include "compat/backends/cuda/fill_kernel.h"
#include "compat/backends/cuda/kernels.h"
#include "compat/backends/cuda/op_common.h"
#include "compat/backends/cuda/ops.h"
#include "compat/plugin_api.h"

#ifndef CUTOVER_CUDA_ARCHITECTURES
#define CUTOVER_CUDA_ARCHITECTURES "unknown"
#endif
#ifndef CUTOVER_CUDA_TOOLKIT_VERSION
#define CUTOVER_CUDA_TOOLKIT_VERSION "unknown"
#endif

namespace cutover::cuda_backend {
namespace {

#define CUTOVER_STR_INNER_(x) #x
#define CUTOVER_STR_(x) CUTOVER_STR_INNER_(x)

#define CUTOVER_VERSION3_(a, b, c) CUTOVER_STR_(a) "." CUTOVER_STR_(b) "." CUTOVER_STR_(c)

// One line: the toolkit, the architectures compiled for, the library headers built against.
// clang-format off
constexpr char kBuildInfo[] =
    "CUDA toolkit " CUTOVER_CUDA_TOOLKIT_VERSION
    ", architectures " CUTOVER_CUDA_ARCHITECTURES
    ", headers cuBLAS " CUTOVER_VERSION3_(CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH)
    ", cuDNN " CUTOVER_VERSION3_(CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL)
    ", NCCL " CUTOVER_VERSION3_(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
// clang-format on

// The elements the init self-check fills on each device.
constexpr uint64_t kSelfCheckCount = 1 << 20;

struct State {
  bool init_called = false;
  bool initialized = false;
  int device_count = 0;
};
State& GetState() {
  static State state;
  return state;
}

// Writes a printf-formatted one-line reason into err and returns `code`.
int Fail(int code, char* err, size_t err_size, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int Fail(int code, char* err, size_t err_size, const char* fmt, ...) {
  if (err != nullptr && err_size > 0) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
  }
  return code;
}

// "cudaErrorNoDevice (no CUDA-capable device is detected)"
std::string Describe(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + " (" + cudaGetErrorString(e) + ")";
}

// Fills a device buffer with the fill kernel and checks every element on the host.
int SelfCheck(int device, char* err, size_t err_size) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    return Fail(CUTOVER_COMPAT_ERR_DEVICE, err, err_size,
                "self-check on device %d: cudaSetDevice returned %s", device, Describe(e).c_str());
  }
  uint32_t* d = nullptr;
  e = cudaMalloc(&d, kSelfCheckCount * sizeof(uint32_t));
  if (e != cudaSuccess) {
    return Fail(CUTOVER_COMPAT_ERR_DEVICE, err, err_size,
                "self-check on device %d: cudaMalloc returned %s", device, Describe(e).c_str());
  }
  std::vector<uint32_t> h(kSelfCheckCount);
  constexpr uint64_t kSeed = 0x9e3779b97f4a7c15ull;
  e = LaunchFillU32(d, kSelfCheckCount, kSeed, nullptr);
  if (e == cudaSuccess)
    e = cudaMemcpy(h.data(), d, h.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (e != cudaSuccess) {
    return Fail(CUTOVER_COMPAT_ERR_DEVICE, err, err_size,
                "self-check on device %d: the fill kernel failed: %s (no kernel image for this "
                "GPU's architecture in " CUTOVER_CUDA_ARCHITECTURES "?)",
                device, Describe(e).c_str());
  }
  for (uint64_t i = 0; i < h.size(); ++i) {
    if (h[i] != static_cast<uint32_t>(kSeed + i)) {
      return Fail(CUTOVER_COMPAT_ERR_DEVICE, err, err_size,
                  "self-check on device %d: element %llu is %u, expected %u", device,
                  static_cast<unsigned long long>(i), h[i], static_cast<uint32_t>(kSeed + i));
    }
  }
  return CUTOVER_COMPAT_OK;
}

int Init(char* err, size_t err_size) {
  State& s = GetState();
  if (s.init_called) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "init called twice");
  }
  s.init_called = true;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    if (e == cudaErrorNoDevice) {
      return Fail(CUTOVER_COMPAT_ERR_NO_DEVICE, err, err_size,
                  "no CUDA device: cudaGetDeviceCount returned %s", Describe(e).c_str());
    }
    if (driver == 0) {
      return Fail(CUTOVER_COMPAT_ERR_NO_DRIVER, err, err_size,
                  "no CUDA driver: cudaGetDeviceCount returned %s", Describe(e).c_str());
    }
    if (e == cudaErrorInsufficientDriver) {
      return Fail(CUTOVER_COMPAT_ERR_NO_DRIVER, err, err_size,
                  "CUDA driver too old: it supports CUDA %d.%d, this backend needs %d.%d: "
                  "cudaGetDeviceCount returned %s",
                  driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10,
                  Describe(e).c_str());
    }
    return Fail(CUTOVER_COMPAT_ERR_NO_DRIVER, err, err_size,
                "CUDA driver unusable: cudaGetDeviceCount returned %s", Describe(e).c_str());
  }
  if (count == 0) {
    return Fail(CUTOVER_COMPAT_ERR_NO_DEVICE, err, err_size,
                "no CUDA device: cudaGetDeviceCount found 0 devices");
  }
  for (int i = 0; i < count; ++i) {
    int rc = SelfCheck(i, err, err_size);
    if (rc != CUTOVER_COMPAT_OK) return rc;
  }
  s.device_count = count;
  s.initialized = true;
  return CUTOVER_COMPAT_OK;
}

void Shutdown() {
  State& s = GetState();
  if (s.initialized) {
    ReleaseCollectives();
    ReleaseDevices();
  }
  s.initialized = false;
  s.init_called = false;
  s.device_count = 0;
}

int DeviceCount() { return GetState().initialized ? GetState().device_count : 0; }

int DeviceInfo(int ordinal, CutoverCompatDeviceInfo* out, char* err, size_t err_size) {
  const State& s = GetState();
  if (!s.initialized) {
    return Fail(CUTOVER_COMPAT_ERR_NOT_INITIALIZED, err, err_size, "device_info before init");
  }
  if (out == nullptr || out->struct_size < sizeof(CutoverCompatDeviceInfo)) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "device_info: bad output struct");
  }
  if (ordinal < 0 || ordinal >= s.device_count) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size,
                "device_info: no device %d (there are %d)", ordinal, s.device_count);
  }
  cudaDeviceProp prop{};
  cudaError_t e = cudaGetDeviceProperties(&prop, ordinal);
  if (e != cudaSuccess) {
    return Fail(CUTOVER_COMPAT_ERR_DEVICE, err, err_size,
                "device %d: cudaGetDeviceProperties returned %s", ordinal, Describe(e).c_str());
  }
  uint32_t size = out->struct_size;
  std::memset(out, 0, sizeof(CutoverCompatDeviceInfo));
  out->struct_size = size;
  out->ordinal = ordinal;
  std::snprintf(out->name, sizeof(out->name), "%s", prop.name);
  out->cc_major = prop.major;
  out->cc_minor = prop.minor;
  out->total_memory = prop.totalGlobalMem;
  out->sm_count = prop.multiProcessorCount;
  e = cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), ordinal);
  if (e != cudaSuccess) out->pci_bus_id[0] = '\0';
  return CUTOVER_COMPAT_OK;
}

int LibraryVersions(CutoverCompatLibraryVersions* out, char* err, size_t err_size) {
  if (out == nullptr || out->struct_size < sizeof(CutoverCompatLibraryVersions)) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "library_versions: bad output struct");
  }
  uint32_t size = out->struct_size;
  std::memset(out, 0, sizeof(CutoverCompatLibraryVersions));
  out->struct_size = size;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) out->cuda_runtime = v;
  v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) out->cuda_driver = v;
  int p = 0;
  if (cublasGetProperty(MAJOR_VERSION, &p) == CUBLAS_STATUS_SUCCESS) out->cublas_major = p;
  if (cublasGetProperty(MINOR_VERSION, &p) == CUBLAS_STATUS_SUCCESS) out->cublas_minor = p;
  if (cublasGetProperty(PATCH_LEVEL, &p) == CUBLAS_STATUS_SUCCESS) out->cublas_patch = p;
  out->cublaslt = static_cast<int64_t>(cublasLtGetVersion());
  out->cudnn = static_cast<int64_t>(cudnnGetVersion());
  v = 0;
  if (ncclGetVersion(&v) == ncclSuccess) out->nccl = v;
  return CUTOVER_COMPAT_OK;
}

// Copies an Outcome's reason into err and returns its code.
int Report(const Outcome& o, char* err, size_t err_size) {
  if (!o.ok()) Fail(o.code, err, err_size, "%s", o.message.c_str());
  return o.code;
}

int RunCase(const CutoverCompatCase* c, CutoverCompatCaseResult* result, char* err,
            size_t err_size) {
  const State& s = GetState();
  if (!s.initialized) {
    return Fail(CUTOVER_COMPAT_ERR_NOT_INITIALIZED, err, err_size, "run_case before init");
  }
  if (c == nullptr || c->struct_size < sizeof(CutoverCompatCase) || c->op == nullptr ||
      c->dtype == nullptr || c->layout == nullptr || (c->shape == nullptr && c->shape_count > 0) ||
      (c->inputs == nullptr && c->input_count > 0)) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "run_case: bad case struct");
  }
  if (result == nullptr || result->struct_size < sizeof(CutoverCompatCaseResult)) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "run_case: bad result struct");
  }
  if (c->reps < 1 || c->warmup < 0 || c->rep_ms == nullptr) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size,
                "run_case: needs reps >= 1, warmup >= 0 and a rep_ms array");
  }
  if (c->device < 0 || c->device >= s.device_count) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "run_case: no device %d",
                static_cast<int>(c->device));
  }
  const uint32_t size = result->struct_size;
  std::memset(result, 0, sizeof(CutoverCompatCaseResult));
  result->struct_size = size;
  CaseView v;
  v.c = c;
  v.op = c->op;
  v.dtype = c->dtype;
  v.layout = c->layout;
  v.shape.assign(c->shape, c->shape + c->shape_count);
  if (IsCollective(v.op)) return Report(RunCollective(s.device_count, v, result), err, err_size);
  DeviceState* dev = nullptr;
  int rc = Report(GetDevice(c->device, &dev), err, err_size);
  if (rc != CUTOVER_COMPAT_OK) return rc;
  if (v.op == "gemm" || v.op == "gemm_batched")
    return Report(RunGemm(*dev, v, result), err, err_size);
  if (v.op == "conv2d_fwd" || v.op == "conv2d_bwd_data" || v.op == "conv2d_bwd_filter") {
    return Report(RunConv(*dev, v, result), err, err_size);
  }
  if (IsOwnOp(v.op)) return Report(RunOwn(*dev, v, result), err, err_size);
  return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, err, err_size, "run_case: unknown op '%s'", c->op);
}

// The median time of `reps` runs of `launch` after 3 warm-ups, in ms.
Outcome TimeMedian(DeviceState& dev, int reps, const std::function<cudaError_t()>& launch,
                   double* ms) {
  for (int i = 0; i < 3; ++i) CUTOVER_TRY(CudaCheck(launch(), "calibration launch"));
  std::vector<cudaEvent_t> ev(2 * reps, nullptr);
  Outcome o = Ok();
  for (cudaEvent_t& e : ev) {
    if (o.ok()) o = CudaCheck(cudaEventCreate(&e), "cudaEventCreate");
  }
  for (int i = 0; i < reps && o.ok(); ++i) {
    cudaEventRecord(ev[2 * i], dev.stream);
    o = CudaCheck(launch(), "calibration launch");
    cudaEventRecord(ev[2 * i + 1], dev.stream);
  }
  if (o.ok()) o = CudaCheck(cudaStreamSynchronize(dev.stream), "calibration");
  std::vector<double> t;
  for (int i = 0; i < reps && o.ok(); ++i) {
    float x = 0;
    o = CudaCheck(cudaEventElapsedTime(&x, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    t.push_back(x);
  }
  for (cudaEvent_t e : ev) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  *ms = Median(t);
  return o;
}

Outcome CalibrateDevice(int device, CutoverCompatCalibration* out) {
  DeviceState* dev = nullptr;
  CUTOVER_TRY(GetDevice(device, &dev));
  size_t free_bytes = 0, total_bytes = 0;
  CUTOVER_TRY(CudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  // 1 GiB each way, or a quarter of what is free; at least 8x the L2 cache either way.
  size_t bytes = std::min<size_t>(size_t{1} << 30, free_bytes / 4) & ~size_t{4095};
  {
    DeviceBuffer src, dst;
    CUTOVER_TRY(src.Allocate(bytes, "calibration copy source"));
    CUTOVER_TRY(dst.Allocate(bytes, "calibration copy destination"));
    CUTOVER_TRY(
        CudaCheck(LaunchFillUniform(DType::kF32, src.get(), bytes / 4, 3, dev->stream), "fill"));
    double ms = 0;
    CUTOVER_TRY(TimeMedian(
        *dev, 10, [&] { return LaunchCopyBytes(src.get(), dst.get(), bytes, dev->stream); }, &ms));
    out->copy_kernel_gbps = ms > 0 ? 2.0 * bytes / (ms * 1e-3) / 1e9 : 0;
    CUTOVER_TRY(TimeMedian(
        *dev, 10,
        [&] {
          return cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice,
                                 dev->stream);
        },
        &ms));
    out->memcpy_gbps = ms > 0 ? 2.0 * bytes / (ms * 1e-3) / 1e9 : 0;
  }
  out->copy_bytes = bytes;
  constexpr int kGemmSize = 8192;
  out->gemm_size = kGemmSize;
  CUTOVER_TRY(CalibrateGemm(*dev, "bf16", kGemmSize, 10, &out->gemm_bf16_tflops));
  CUTOVER_TRY(CalibrateGemm(*dev, "fp32", 4096, 5, &out->gemm_fp32_tflops));
  return Ok();
}

int Calibrate(int device, CutoverCompatCalibration* out, char* err, size_t err_size) {
  const State& s = GetState();
  if (!s.initialized) {
    return Fail(CUTOVER_COMPAT_ERR_NOT_INITIALIZED, err, err_size, "calibrate before init");
  }
  if (out == nullptr || out->struct_size < sizeof(CutoverCompatCalibration)) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "calibrate: bad output struct");
  }
  if (device < 0 || device >= s.device_count) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "calibrate: no device %d", device);
  }
  const uint32_t size = out->struct_size;
  std::memset(out, 0, sizeof(CutoverCompatCalibration));
  out->struct_size = size;
  return Report(CalibrateDevice(device, out), err, err_size);
}

constexpr CutoverCompatPlugin kPlugin = {
    CUTOVER_COMPAT_PLUGIN_ABI,
    sizeof(CutoverCompatPlugin),
    "cuda",
    kBuildInfo,
    &Init,
    &Shutdown,
    &DeviceCount,
    &DeviceInfo,
    &LibraryVersions,
    &RunCase,
    &Calibrate,
};

}  // namespace
}  // namespace cutover::cuda_backend

extern "C" CUTOVER_COMPAT_PLUGIN_EXPORT const CutoverCompatPlugin* cutover_compat_plugin_entry(
    uint32_t /*host_abi*/) {
  // The ABI of this build is the only one this plugin serves; the host checks the abi field.
  return &cutover::cuda_backend::kPlugin;
}
