#include "compat/cpu_kernels.h"

#include <memory>

#include "compat/backends/cpu/cpu_libs.h"
#include "compat/dtype.h"

namespace cutover {
namespace {

std::string WithThreads(const std::string& what, int threads) {
  return what + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

CpuKernel Reference(const OpDescriptor& op, const CaseSpec& spec, const cpu::CpuConfig& cfg,
                    std::string why = "") {
  CpuKernel k;
  k.implementation = kReferenceImplementation;
  if (!why.empty()) k.implementation += " (" + why + ")";
  k.run = [&op, spec, cfg](const Tensors& in, float* out) {
    op.run_cpu(spec, cfg, in, out);
    return Status::Ok();
  };
  return k;
}

void RoundToOutput(const CaseSpec& spec, size_t n, float* out) {
  const std::string_view od = OutputDtype(spec.dtype);
  if (od != "fp16" && od != "bf16") return;
  for (size_t i = 0; i < n; ++i) out[i] = RoundOutput(out[i], od);
}

// The oneDNN problem of a case, or false when oneDNN has no counterpart for it here.
bool DnnlProblemFor(const CaseSpec& spec, cpu::DnnlProblem* p) {
  const bool bf16 = spec.dtype == "bf16";
  if (spec.dtype != "fp32" && !(bf16 && cpu::DnnlHasNativeBf16())) return false;
  p->bf16 = bf16;
  const auto& v = spec.shape;
  if (spec.op.rfind("conv2d_", 0) == 0 && v.size() == 9) {
    p->op = spec.op == "conv2d_fwd"        ? cpu::DnnlOp::kConvFwd
            : spec.op == "conv2d_bwd_data" ? cpu::DnnlOp::kConvBwdData
                                           : cpu::DnnlOp::kConvBwdFilter;
    p->conv = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
    p->layout = spec.layout == "NHWC" ? cpu::ConvLayout::kNhwc : cpu::ConvLayout::kNchw;
    return true;
  }
  p->op = cpu::DnnlOp::kMatmul;
  if (spec.op == "gemm_batched" && v.size() == 4) {
    p->batch = v[0], p->m = v[1], p->n = v[2], p->k = v[3];
    return true;
  }
  if (spec.op == "gemm" && v.size() == 3 && bf16) {  // fp32 gemm goes to the BLAS
    p->m = v[0], p->n = v[1], p->k = v[2];
    return true;
  }
  return false;
}

}  // namespace

CpuKernel SelectCpuKernel(const OpDescriptor& op, const CaseSpec& spec, const cpu::CpuConfig& cfg,
                          bool reference_only) {
  if (reference_only || cfg.fp64_accumulate) return Reference(op, spec, cfg);
  cpu::SetLibraryThreads(cfg.threads);
  const size_t n = op.output_size(spec);
  const cpu::LibraryInfo blas = cpu::BlasInfo();
  if (blas.available && spec.op == "gemm" && spec.dtype == "fp32" && spec.shape.size() == 3) {
    CpuKernel k;
    k.implementation =
        blas.name + " " + blas.version + " (" + WithThreads(blas.detail, cfg.threads) + ")";
    const int64_t m = spec.shape[0], nn = spec.shape[1], kk = spec.shape[2];
    k.run = [m, nn, kk](const Tensors& in, float* out) {
      cpu::BlasSgemm(m, nn, kk, in[0].data(), in[1].data(), out);
      return Status::Ok();
    };
    return k;
  }
  const cpu::LibraryInfo dnnl = cpu::DnnlInfo();
  cpu::DnnlProblem problem;
  if (!dnnl.available || !DnnlProblemFor(spec, &problem)) return Reference(op, spec, cfg);
  Result<std::unique_ptr<cpu::DnnlKernel>> made = cpu::MakeDnnlKernel(problem);
  if (!made.ok()) return Reference(op, spec, cfg, made.status().message());
  std::shared_ptr<cpu::DnnlKernel> kernel = std::move(*made);
  CpuKernel k;
  k.implementation = dnnl.name + " " + dnnl.version + " (" +
                     WithThreads(kernel->Implementation(), cfg.threads) + ")";
  k.run = [kernel, spec, n](const Tensors& in, float* out) {
    CUTOVER_RETURN_IF_ERROR(kernel->Run(in[0].data(), in[1].data(), out));
    RoundToOutput(spec, n, out);
    return Status::Ok();
  };
  return k;
}

CalibrationGemm SelectCalibrationGemm(const cpu::CpuConfig& cfg, bool reference_only) {
  CalibrationGemm g;
  const cpu::LibraryInfo blas = cpu::BlasInfo();
  if (!reference_only && blas.available) {
    cpu::SetLibraryThreads(cfg.threads);
    g.implementation =
        blas.name + " " + blas.version + " (" + WithThreads(blas.detail, cfg.threads) + ")";
    g.run = cpu::BlasSgemm;
    return g;
  }
  cpu::CpuConfig c = cfg;
  c.fp64_accumulate = false;
  g.implementation = kReferenceImplementation;
  g.run = [c](int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* out) {
    cpu::Gemm(c, m, n, k, a, b, out);
  };
  return g;
}

}  // namespace cutover
