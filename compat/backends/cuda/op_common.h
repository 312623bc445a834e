// What every op of the CUDA compat backend shares: the outcome type, per-device state (stream,
// library handles, workspace), device buffers, the case's dtype, and RunTimed, the one harness
// that uploads inputs, rotates input copies past the L2 cache, warms up, times each repetition
// with CUDA events, checks determinism and returns the output as float32.
//
// Thread-safety: a DeviceState is used by one thread at a time (compat/plugin_api.h: run_case
// and calibrate are called from one thread at a time).
#ifndef CUTOVER_COMPAT_BACKENDS_CUDA_OP_COMMON_H_
#define CUTOVER_COMPAT_BACKENDS_CUDA_OP_COMMON_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "compat/backends/cuda/kernels.h"
#include "compat/backends/cuda/rotation.h"
#include "compat/plugin_api.h"

namespace cutover::cuda_backend {

// A plugin return code with its one-line reason.
struct Outcome {
  int code = CUTOVER_COMPAT_OK;
  std::string message;
  bool ok() const { return code == CUTOVER_COMPAT_OK; }
};
inline Outcome Ok() { return {}; }
Outcome Fail(int code, std::string message);
// "what: cudaErrorX (text)" as CUTOVER_COMPAT_ERR_DEVICE, or Ok for cudaSuccess.
Outcome CudaCheck(cudaError_t e, const std::string& what);
Outcome CublasCheck(cublasStatus_t s, const std::string& what);
Outcome CudnnCheck(cudnnStatus_t s, const std::string& what);

#define CUTOVER_TRY(expr)                         \
  do {                                            \
    ::cutover::cuda_backend::Outcome o_ = (expr); \
    if (!o_.ok()) return o_;                      \
  } while (0)

// Per-device state, created on first use and released by ReleaseDevices().
struct DeviceState {
  int ordinal = -1;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int l2_bytes = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t dnn = nullptr;
  void* lt_workspace = nullptr;  // kLtWorkspaceBytes for cuBLASLt
};
inline constexpr size_t kLtWorkspaceBytes = size_t{64} << 20;

// The state of device `ordinal` (made current), created on first use.
Outcome GetDevice(int ordinal, DeviceState** out);
// Frees every device's state (shutdown).
void ReleaseDevices();

// A device allocation freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  Outcome Allocate(size_t bytes, const std::string& what);
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// The case's dtype name as an element type: fp32 and tf32 -> kF32, fp16, bf16, fp8_e4m3, int8.
// False for a name it does not know.
bool ParseDType(const std::string& name, DType* out);

// A host view of the case (compat/plugin_api.h) with its strings and shape as C++ values.
struct CaseView {
  const CutoverCompatCase* c = nullptr;
  std::string op, dtype, layout;
  std::vector<int64_t> shape;
  // Checks that there are `n` inputs and that input i holds counts[i] elements, and that the
  // output holds out_count elements (CUTOVER_COMPAT_ERR_INVALID naming the first mismatch).
  Outcome Expect(const std::vector<uint64_t>& counts, uint64_t out_count) const;
};

// An input as it goes to the device: bytes already converted to the device type.
using PackedInput = std::vector<uint8_t>;
PackedInput Pack(const CutoverCompatTensor& t, DType type);

// Enqueues one run of the op reading `inputs` (device pointers, one per PackedInput, from the
// input copy this repetition uses) and writing `output`.
using LaunchFn =
    std::function<Outcome(const std::vector<void*>& inputs, void* output, cudaStream_t stream)>;

// Runs a single-device op through the shared protocol: uploads `inputs` into as many copies as
// make their total exceed the L2 cache (at least 1), poisons the output, runs once and keeps
// that output, runs c.warmup untimed and c.reps timed repetitions (events around each, cycling
// through the copies), then compares the last output with the first bit for bit, and widens the
// first to float32 into c.output. `out_count` elements of `out_type`.
Outcome RunTimed(DeviceState& dev, const CaseView& v, const std::vector<PackedInput>& inputs,
                 uint64_t out_count, DType out_type, const LaunchFn& launch,
                 CutoverCompatCaseResult* result);

// Median of the values (0 for none).
double Median(std::vector<double> v);

// Writes `text` into the result's detail line (truncated).
void SetDetail(CutoverCompatCaseResult* result, const std::string& text);

}  // namespace cutover::cuda_backend

#endif  // CUTOVER_COMPAT_BACKENDS_CUDA_OP_COMMON_H_
