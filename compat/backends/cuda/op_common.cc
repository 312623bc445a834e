#include "compat/backends/cuda/op_common.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

namespace cutover::cuda_backend {
namespace {

std::map<int, std::unique_ptr<DeviceState>>& Devices() {
  static std::map<int, std::unique_ptr<DeviceState>> devices;
  return devices;
}

// Events for one timed repetition, destroyed on scope exit.
class EventPairs {
 public:
  ~EventPairs() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  Outcome Create(int pairs) {
    events_.reserve(2 * pairs);
    for (int i = 0; i < 2 * pairs; ++i) {
      cudaEvent_t e = nullptr;
      CUTOVER_TRY(CudaCheck(cudaEventCreate(&e), "cudaEventCreate"));
      events_.push_back(e);
    }
    return Ok();
  }
  cudaEvent_t start(int i) const { return events_[2 * i]; }
  cudaEvent_t stop(int i) const { return events_[2 * i + 1]; }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace

Outcome Fail(int code, std::string message) { return {code, std::move(message)}; }

Outcome CudaCheck(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Ok();
  return Fail(CUTOVER_COMPAT_ERR_DEVICE,
              what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

Outcome CublasCheck(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Ok();
  return Fail(CUTOVER_COMPAT_ERR_DEVICE, what + ": " + cublasLtGetStatusName(s));
}

Outcome CudnnCheck(cudnnStatus_t s, const std::string& what) {
  if (s == CUDNN_STATUS_SUCCESS) return Ok();
  return Fail(CUTOVER_COMPAT_ERR_DEVICE, what + ": " + cudnnGetErrorString(s));
}

Outcome GetDevice(int ordinal, DeviceState** out) {
  CUTOVER_TRY(CudaCheck(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")"));
  auto& devices = Devices();
  auto it = devices.find(ordinal);
  if (it != devices.end()) {
    *out = it->second.get();
    return Ok();
  }
  auto d = std::make_unique<DeviceState>();
  d->ordinal = ordinal;
  CUTOVER_TRY(
      CudaCheck(cudaDeviceGetAttribute(&d->cc_major, cudaDevAttrComputeCapabilityMajor, ordinal),
                "cudaDeviceGetAttribute"));
  CUTOVER_TRY(
      CudaCheck(cudaDeviceGetAttribute(&d->cc_minor, cudaDevAttrComputeCapabilityMinor, ordinal),
                "cudaDeviceGetAttribute"));
  CUTOVER_TRY(
      CudaCheck(cudaDeviceGetAttribute(&d->sm_count, cudaDevAttrMultiProcessorCount, ordinal),
                "cudaDeviceGetAttribute"));
  CUTOVER_TRY(CudaCheck(cudaDeviceGetAttribute(&d->l2_bytes, cudaDevAttrL2CacheSize, ordinal),
                        "cudaDeviceGetAttribute(L2 cache size)"));
  CUTOVER_TRY(
      CudaCheck(cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking), "cudaStreamCreate"));
  CUTOVER_TRY(CublasCheck(cublasLtCreate(&d->lt), "cublasLtCreate"));
  CUTOVER_TRY(CudnnCheck(cudnnCreate(&d->dnn), "cudnnCreate"));
  CUTOVER_TRY(CudnnCheck(cudnnSetStream(d->dnn, d->stream), "cudnnSetStream"));
  CUTOVER_TRY(CudaCheck(cudaMalloc(&d->lt_workspace, kLtWorkspaceBytes), "cudaMalloc(workspace)"));
  *out = d.get();
  devices.emplace(ordinal, std::move(d));
  return Ok();
}

void ReleaseDevices() {
  for (auto& [ordinal, d] : Devices()) {
    if (cudaSetDevice(ordinal) != cudaSuccess) continue;
    if (d->lt_workspace != nullptr) cudaFree(d->lt_workspace);
    if (d->dnn != nullptr) cudnnDestroy(d->dnn);
    if (d->lt != nullptr) cublasLtDestroy(d->lt);
    if (d->stream != nullptr) cudaStreamDestroy(d->stream);
  }
  Devices().clear();
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_ != nullptr) cudaFree(p_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (p_ != nullptr) cudaFree(p_);
}

Outcome DeviceBuffer::Allocate(size_t bytes, const std::string& what) {
  if (p_ != nullptr) cudaFree(p_);
  p_ = nullptr;
  bytes_ = bytes;
  return CudaCheck(cudaMalloc(&p_, std::max<size_t>(bytes, 16)),
                   "cudaMalloc of " + std::to_string(bytes) + " bytes for " + what);
}

bool ParseDType(const std::string& name, DType* out) {
  if (name == "fp32" || name == "tf32") {
    *out = DType::kF32;
  } else if (name == "fp16") {
    *out = DType::kF16;
  } else if (name == "bf16") {
    *out = DType::kBF16;
  } else if (name == "fp8_e4m3") {
    *out = DType::kFP8E4M3;
  } else if (name == "int8") {
    *out = DType::kI8;
  } else {
    return false;
  }
  return true;
}

Outcome CaseView::Expect(const std::vector<uint64_t>& counts, uint64_t out_count) const {
  if (c->input_count != counts.size()) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, op + " takes " + std::to_string(counts.size()) +
                                                " inputs, got " + std::to_string(c->input_count));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (c->inputs[i].data == nullptr || c->inputs[i].count != counts[i]) {
      return Fail(CUTOVER_COMPAT_ERR_INVALID, op + " input " + std::to_string(i) + " must hold " +
                                                  std::to_string(counts[i]) + " elements, got " +
                                                  std::to_string(c->inputs[i].count));
    }
  }
  if (c->output == nullptr || c->output_count < out_count) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, op + " needs an output of " +
                                                std::to_string(out_count) + " elements, got " +
                                                std::to_string(c->output_count));
  }
  return Ok();
}

PackedInput Pack(const CutoverCompatTensor& t, DType type) {
  PackedInput p(t.count * DTypeSize(type));
  PackFromFloat(t.data, t.count, type, p.data());
  return p;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void SetDetail(CutoverCompatCaseResult* result, const std::string& text) {
  std::snprintf(result->detail, sizeof(result->detail), "%s", text.c_str());
}

Outcome RunTimed(DeviceState& dev, const CaseView& v, const std::vector<PackedInput>& inputs,
                 uint64_t out_count, DType out_type, const LaunchFn& launch,
                 CutoverCompatCaseResult* result) {
  const CutoverCompatCase& c = *v.c;
  cudaStream_t s = dev.stream;
  size_t set_bytes = 0;
  for (const PackedInput& p : inputs) set_bytes += p.size();
  size_t free_bytes = 0, total_bytes = 0;
  CUTOVER_TRY(CudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  int copies = RotationCopies(set_bytes, static_cast<size_t>(dev.l2_bytes), 64);
  // Never let the copies take more than half of what is free.
  while (copies > 1 && set_bytes * copies > free_bytes / 2) --copies;
  const size_t out_bytes = out_count * DTypeSize(out_type);

  std::vector<std::vector<DeviceBuffer>> sets(copies);
  for (int k = 0; k < copies; ++k) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      DeviceBuffer b;
      CUTOVER_TRY(b.Allocate(inputs[i].size(), v.op + " input " + std::to_string(i)));
      if (k == 0) {
        CUTOVER_TRY(CudaCheck(
            cudaMemcpyAsync(b.get(), inputs[i].data(), inputs[i].size(), cudaMemcpyHostToDevice, s),
            "upload of input " + std::to_string(i)));
      } else {
        CUTOVER_TRY(CudaCheck(cudaMemcpyAsync(b.get(), sets[0][i].get(), inputs[i].size(),
                                              cudaMemcpyDeviceToDevice, s),
                              "copy of input " + std::to_string(i)));
      }
      sets[k].push_back(std::move(b));
    }
  }
  std::vector<std::vector<void*>> ptrs(copies);
  for (int k = 0; k < copies; ++k) {
    for (const DeviceBuffer& b : sets[k]) ptrs[k].push_back(b.get());
  }
  DeviceBuffer out;
  CUTOVER_TRY(out.Allocate(out_bytes, v.op + " output"));
  CUTOVER_TRY(CudaCheck(PoisonBytes(out.get(), out_bytes, s), "cudaMemsetAsync"));

  std::vector<uint8_t> first(out_bytes), last(out_bytes);
  CUTOVER_TRY(launch(ptrs[0], out.get(), s));
  CUTOVER_TRY(
      CudaCheck(cudaMemcpyAsync(first.data(), out.get(), out_bytes, cudaMemcpyDeviceToHost, s),
                "download of the output"));
  CUTOVER_TRY(CudaCheck(cudaStreamSynchronize(s), v.op + " first run"));

  int next = 1 % copies;
  for (int i = 0; i < c.warmup; ++i) {
    CUTOVER_TRY(launch(ptrs[next], out.get(), s));
    next = (next + 1) % copies;
  }
  EventPairs ev;
  CUTOVER_TRY(ev.Create(c.reps));
  for (int i = 0; i < c.reps; ++i) {
    CUTOVER_TRY(CudaCheck(cudaEventRecord(ev.start(i), s), "cudaEventRecord"));
    CUTOVER_TRY(launch(ptrs[next], out.get(), s));
    CUTOVER_TRY(CudaCheck(cudaEventRecord(ev.stop(i), s), "cudaEventRecord"));
    next = (next + 1) % copies;
  }
  CUTOVER_TRY(
      CudaCheck(cudaMemcpyAsync(last.data(), out.get(), out_bytes, cudaMemcpyDeviceToHost, s),
                "download of the output"));
  CUTOVER_TRY(CudaCheck(cudaStreamSynchronize(s), v.op + " timed runs"));
  for (int i = 0; i < c.reps; ++i) {
    float ms = 0;
    CUTOVER_TRY(
        CudaCheck(cudaEventElapsedTime(&ms, ev.start(i), ev.stop(i)), "cudaEventElapsedTime"));
    c.rep_ms[i] = ms;
  }
  result->deterministic = std::memcmp(first.data(), last.data(), out_bytes) == 0 ? 1 : 0;
  result->ranks = 1;
  result->output_written = out_count;
  result->rotation_copies = static_cast<uint64_t>(copies);
  UnpackToFloat(first.data(), out_count, out_type, c.output);
  return Ok();
}

}  // namespace cutover::cuda_backend
