#include "compat/device_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

namespace cutover {
namespace {

// One line of plugin text (no control characters), from a fixed buffer.
std::string Line(const char* buf, size_t size) {
  std::string s;
  for (size_t i = 0; i < size && buf[i] != '\0'; ++i) {
    s.push_back(buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t' ? ' ' : buf[i]);
  }
  return s;
}

}  // namespace

bool IsCollectiveOp(std::string_view op) {
  return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter" || op == "broadcast";
}

CaseResult RunDeviceCase(const CutoverCompatPlugin& plugin, const OpDescriptor& op,
                         const CaseSpec& spec, const DeviceRunConfig& cfg) {
  CaseResult r;
  r.spec = spec;
  r.id = spec.Id();
  r.reduction_length = op.reduction_length != nullptr ? op.reduction_length(spec) : 1;
  r.flops = op.flops != nullptr ? op.flops(spec) : 0;
  r.bytes = op.bytes != nullptr ? op.bytes(spec) : 0;
  if (op.make_inputs == nullptr || op.output_size == nullptr) {
    r.status = "error";
    r.error = op.name + " has no input maker or output size";
    return r;
  }
  const bool collective = IsCollectiveOp(op.name);
  const Tensors in = op.make_inputs(spec);
  size_t capacity = op.output_size(spec);
  if (collective && !in.empty()) {
    // The descriptor's size is for one rank; all_gather receives n blocks of count.
    capacity = std::max(
        capacity, static_cast<size_t>(CollectiveRecvCount(
                      op.name, static_cast<int64_t>(in[0].size()), std::max(1, cfg.device_count))));
  }
  std::vector<float> out(capacity, std::numeric_limits<float>::quiet_NaN());
  std::vector<CutoverCompatTensor> tensors;
  for (const std::vector<float>& t : in) tensors.push_back({t.data(), t.size()});
  const int reps = std::max(1, cfg.reps);
  std::vector<double> rep_ms(reps, 0.0);

  CutoverCompatCase c{};
  c.struct_size = sizeof(c);
  c.device = cfg.device;
  c.op = spec.op.c_str();
  c.dtype = spec.dtype.c_str();
  c.layout = spec.layout.c_str();
  c.shape = spec.shape.data();
  c.shape_count = static_cast<uint32_t>(spec.shape.size());
  c.inputs = tensors.data();
  c.input_count = static_cast<uint32_t>(tensors.size());
  c.output = out.data();
  c.output_count = out.size();
  c.warmup = std::max(0, cfg.warmup);
  c.reps = reps;
  c.rep_ms = rep_ms.data();
  CutoverCompatCaseResult res{};
  res.struct_size = sizeof(res);
  char err[512] = {0};
  const int rc = plugin.run_case(&c, &res, err, sizeof(err));
  if (rc != CUTOVER_COMPAT_OK) {
    std::string why = Line(err, sizeof(err));
    if (why.empty()) why = "run_case failed with code " + std::to_string(rc);
    r.error = why;
    r.status = rc == CUTOVER_COMPAT_ERR_UNSUPPORTED      ? "missing"
               : rc == CUTOVER_COMPAT_ERR_NOT_APPLICABLE ? "n/a"
                                                         : "error";
    return r;
  }
  const size_t written = static_cast<size_t>(res.output_written);
  if (written == 0 || written > out.size()) {
    r.status = "error";
    r.error = "the plugin reported " + std::to_string(written) +
              " outputs written, the buffer holds " + std::to_string(out.size());
    return r;
  }
  r.status = "ok";
  r.deterministic = res.deterministic != 0;
  const int ranks = std::max(1, static_cast<int>(res.ranks));
  std::function<double(size_t)> truth;
  if (collective && !in.empty()) {
    // Rank 0's receive buffer over the ranks that took part (compat/op.h).
    truth = [&](size_t i) {
      return CollectiveTruth(op.name, spec.dtype, in[0], ranks, 0, static_cast<int64_t>(i));
    };
  } else if (op.truth != nullptr) {
    truth = [&](size_t i) { return op.truth(spec, in, i); };
  } else if (spec.dtype == "u8" && in.size() == 1 && in[0].size() * sizeof(float) >= written) {
    // A pure transfer of bytes (h2d_copy): byte i of the input's float32 array.
    truth = [&](size_t i) {
      return static_cast<double>(reinterpret_cast<const unsigned char*>(in[0].data())[i]);
    };
  } else if (in.size() == 1 && in[0].size() == written) {
    // A pure transfer of floats: the output is the input.
    truth = [&](size_t i) { return static_cast<double>(in[0][i]); };
  } else {
    r.status = "error";
    r.error = op.name + " has no float64 truth";
    return r;
  }
  SummarizeOutput(spec, out.data(), written, cfg.samples, truth, &r);
  for (double ms : rep_ms) r.timing.reps_s.push_back(ms * 1e-3);
  SummarizeTiming(op, &r);
  if (collective) {
    // nccl-tests: algorithm bandwidth over CollectiveAlgBytes; with n > 1 ranks the rate is the
    // bus bandwidth (times BusBandwidthFactor); with one rank the factor says nothing (0 for all
    // but broadcast), so the rate is the algorithm bandwidth alone (multi-GPU not measured).
    const double alg_bytes =
        CollectiveAlgBytes(op.name, spec.dtype, static_cast<int64_t>(in[0].size()), ranks);
    const double algbw = r.timing.median_s > 0 ? alg_bytes / r.timing.median_s / 1e9 : 0;
    r.timing.rate = ranks > 1 ? algbw * BusBandwidthFactor(op.name, ranks) : algbw;
    r.timing.rate_unit = "GB/s";
  }
  r.timing.fraction_of_ceiling = FractionOfCeiling(cfg.calibration, r.timing, spec.dtype);
  return r;
}

Result<nlohmann::json> DeviceRecordInfo(const LoadedBackend& backend, int ordinal,
                                        const BackendCalibration* calibration) {
  CUTOVER_ASSIGN_OR_RETURN(BackendDevice d, backend.Device(ordinal));
  CUTOVER_ASSIGN_OR_RETURN(BackendLibraryVersions v, backend.LibraryVersions());
  const char* override_env = std::getenv("NVIDIA_TF32_OVERRIDE");
  nlohmann::json info = {
      {"name", d.name},
      {"ordinal", d.ordinal},
      {"device_count", backend.DeviceCount()},
      {"sm_count", d.sm_count},
      {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
      {"memory_bytes", d.total_memory},
      {"pci_bus_id", d.pci_bus_id},
      {"plugin", backend.path()},
      {"build", backend.build_info()},
      {"libraries",
       {{"summary", v.ToString()},
        {"cuda_runtime", v.cuda_runtime},
        {"cuda_driver", v.cuda_driver},
        {"cublas", std::to_string(v.cublas_major) + "." + std::to_string(v.cublas_minor) + "." +
                       std::to_string(v.cublas_patch)},
        {"cublaslt", v.cublaslt},
        {"cudnn", v.cudnn},
        {"nccl", v.nccl}}},
      {"tf32",
       {{"fp32_cases", "off (cuBLASLt CUBLAS_COMPUTE_32F, cuDNN CUDNN_FMA_MATH)"},
        {"tf32_cases", "on (cuBLASLt CUBLAS_COMPUTE_32F_FAST_TF32)"},
        {"NVIDIA_TF32_OVERRIDE",
         override_env != nullptr ? nlohmann::json(override_env) : nlohmann::json(nullptr)}}}};
  if (calibration != nullptr) {
    info["calibration"] = {{"copy_kernel_gbps", calibration->copy_kernel_gbps},
                           {"memcpy_gbps", calibration->memcpy_gbps},
                           {"gemm_bf16_tflops", calibration->gemm_bf16_tflops},
                           {"gemm_fp32_tflops", calibration->gemm_fp32_tflops},
                           {"copy_bytes", calibration->copy_bytes},
                           {"gemm_size", calibration->gemm_size}};
  }
  return info;
}

}  // namespace cutover
