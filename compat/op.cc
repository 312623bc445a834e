#include "compat/op.h"

#include <algorithm>
#include <cmath>

#include "compat/philox.h"

namespace cutover {
namespace {

using cpu::CpuConfig;

int64_t Prod(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

std::vector<float> Normal(const CaseSpec& c, uint32_t stream, size_t n, float mean = 0,
                          float sd = 1) {
  std::vector<float> v(n);
  FillNormal(PhiloxKeyForId(c.Id()), stream, mean, sd, v.data(), n);
  return v;
}
std::vector<float> Uniform(const CaseSpec& c, uint32_t stream, size_t n, float lo, float hi) {
  std::vector<float> v(n);
  FillUniform(PhiloxKeyForId(c.Id()), stream, lo, hi, v.data(), n);
  return v;
}

// ---- gemm: shape {M, N, K}; inputs A[M,K], B[K,N].
Tensors GemmInputs(const CaseSpec& c) {
  const int64_t m = c.shape[0], n = c.shape[1], k = c.shape[2];
  return {Normal(c, 0, m * k), Normal(c, 1, k * n)};
}
size_t GemmOut(const CaseSpec& c) { return c.shape[0] * c.shape[1]; }
void GemmRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Gemm(cfg, c.shape[0], c.shape[1], c.shape[2], in[0].data(), in[1].data(), out);
}
double GemmTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t n = c.shape[1], k = c.shape[2], i = idx / n, j = idx % n;
  double s = 0;
  for (int64_t p = 0; p < k; ++p) s += static_cast<double>(in[0][i * k + p]) * in[1][p * n + j];
  return s;
}
double GemmFlops(const CaseSpec& c) { return 2.0 * c.shape[0] * c.shape[1] * c.shape[2]; }
double GemmBytes(const CaseSpec& c) {
  return 4.0 * (c.shape[0] * c.shape[2] + c.shape[2] * c.shape[1] + c.shape[0] * c.shape[1]);
}
int64_t GemmRed(const CaseSpec& c) { return c.shape[2]; }

// ---- row ops: shape {rows, cols}.
Tensors RowInputs(const CaseSpec& c) {
  const int64_t r = c.shape[0], n = c.shape[1];
  if (c.op == "layernorm") {
    return {Normal(c, 0, r * n, 0.5f, 2.0f), Normal(c, 1, n, 1.0f, 0.1f), Normal(c, 2, n, 0, 0.1f)};
  }
  if (c.op == "rmsnorm") return {Normal(c, 0, r * n, 0.5f, 2.0f), Normal(c, 1, n, 1.0f, 0.1f)};
  return {Normal(c, 0, r * n, 0.0f, 2.0f)};
}
size_t RowsOut(const CaseSpec& c) { return c.shape[0]; }
size_t SameOut(const CaseSpec& c) { return Prod(c.shape); }
int64_t ColsRed(const CaseSpec& c) { return c.shape[1]; }
int64_t OneRed(const CaseSpec&) { return 1; }

void SoftmaxRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Softmax(cfg, c.shape[0], c.shape[1], in[0].data(), out);
}
double SoftmaxTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t n = c.shape[1], i = idx / n, j = idx % n;
  const float* x = in[0].data() + i * n;
  double mx = -INFINITY, s = 0;
  for (int64_t p = 0; p < n; ++p) mx = std::max(mx, static_cast<double>(x[p]));
  for (int64_t p = 0; p < n; ++p) s += std::exp(x[p] - mx);
  return std::exp(x[j] - mx) / s;
}
void LayerNormRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::LayerNorm(cfg, c.shape[0], c.shape[1], in[0].data(), in[1].data(), in[2].data(), out);
}
double LayerNormTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t n = c.shape[1], i = idx / n, j = idx % n;
  const float* x = in[0].data() + i * n;
  double m = 0, v = 0;
  for (int64_t p = 0; p < n; ++p) m += x[p];
  m /= n;
  for (int64_t p = 0; p < n; ++p) v += (x[p] - m) * (x[p] - m);
  v /= n;
  return (x[j] - m) / std::sqrt(v + 1e-5) * in[1][j] + in[2][j];
}
void RmsNormRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::RmsNorm(cfg, c.shape[0], c.shape[1], in[0].data(), in[1].data(), out);
}
double RmsNormTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t n = c.shape[1], i = idx / n, j = idx % n;
  const float* x = in[0].data() + i * n;
  double s = 0;
  for (int64_t p = 0; p < n; ++p) s += static_cast<double>(x[p]) * x[p];
  return x[j] / std::sqrt(s / n + 1e-6) * in[1][j];
}
void SumRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::ReduceSum(cfg, c.shape[0], c.shape[1], in[0].data(), out);
}
double SumTruth(const CaseSpec& c, const Tensors& in, size_t i) {
  double s = 0;
  for (int64_t p = 0; p < c.shape[1]; ++p) s += in[0][i * c.shape[1] + p];
  return s;
}
void MaxRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::ReduceMax(cfg, c.shape[0], c.shape[1], in[0].data(), out);
}
double MaxTruth(const CaseSpec& c, const Tensors& in, size_t i) {
  double m = -INFINITY;
  for (int64_t p = 0; p < c.shape[1]; ++p) m = std::max(m, double{in[0][i * c.shape[1] + p]});
  return m;
}
double RowFlops(const CaseSpec& c) { return 5.0 * Prod(c.shape); }
double RowBytes(const CaseSpec& c) { return 8.0 * Prod(c.shape); }
double ReduceBytes(const CaseSpec& c) { return 4.0 * (Prod(c.shape) + c.shape[0]); }

// ---- elementwise: shape {n}.
Tensors ActInputs(const CaseSpec& c) { return {Normal(c, 0, Prod(c.shape), 0.0f, 3.0f)}; }
void GeluRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Gelu(cfg, Prod(c.shape), in[0].data(), out);
}
double GeluTruth(const CaseSpec&, const Tensors& in, size_t i) {
  double x = in[0][i];
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}
void SiluRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Silu(cfg, Prod(c.shape), in[0].data(), out);
}
double SiluTruth(const CaseSpec&, const Tensors& in, size_t i) {
  double x = in[0][i];
  return x / (1.0 + std::exp(-x));
}
double ActBytes(const CaseSpec& c) { return 8.0 * Prod(c.shape); }

// ---- bandwidth: shape {n}.
constexpr float kTriadScalar = 3.0f;
Tensors CopyInputs(const CaseSpec& c) { return {Uniform(c, 0, Prod(c.shape), -1.0f, 1.0f)}; }
Tensors TriadInputs(const CaseSpec& c) {
  return {Uniform(c, 0, Prod(c.shape), -1.0f, 1.0f), Uniform(c, 1, Prod(c.shape), -1.0f, 1.0f)};
}
void CopyRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Copy(cfg, Prod(c.shape), in[0].data(), out);
}
double CopyTruth(const CaseSpec&, const Tensors& in, size_t i) { return in[0][i]; }
void TriadRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Triad(cfg, Prod(c.shape), in[0].data(), in[1].data(), kTriadScalar, out);
}
double TriadTruth(const CaseSpec&, const Tensors& in, size_t i) {
  return double{in[0][i]} + double{kTriadScalar} * in[1][i];
}
double ZeroFlops(const CaseSpec&) { return 0; }
double TriadFlops(const CaseSpec& c) { return 2.0 * Prod(c.shape); }
double CopyBytes(const CaseSpec& c) { return 8.0 * Prod(c.shape); }
double TriadBytes(const CaseSpec& c) { return 12.0 * Prod(c.shape); }

std::vector<OpDescriptor> BuildRegistry() {
  std::vector<OpDescriptor> r;
  const std::vector<std::string> f32 = {"fp32"};
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
  add({.name = "gemm",
       .description = "C = A * B, row-major",
       .shape_meaning = "M x N x K",
       .dtypes = f32,
       .quick = {{512, 512, 512}, {1024, 1024, 1024}, {16, 1024, 4096}},
       .standard = {{2048, 2048, 2048}, {16, 4096, 4096}, {4096, 4096, 4096}},
       .full = {{8192, 8192, 8192}, {4096, 11008, 4096}, {16, 11008, 4096}},
       .rate_unit = "GFLOP/s",
       .make_inputs = GemmInputs,
       .output_size = GemmOut,
       .run_cpu = GemmRun,
       .truth = GemmTruth,
       .flops = GemmFlops,
       .bytes = GemmBytes,
       .reduction_length = GemmRed});
  const std::vector<std::vector<int64_t>> rq = {{1024, 1024}}, rs = {{4096, 4096}},
                                          rf = {{8192, 8192}};
  add({.name = "softmax",
       .description = "row-wise softmax",
       .shape_meaning = "rows x cols",
       .dtypes = f32,
       .quick = rq,
       .standard = rs,
       .full = rf,
       .rate_unit = "GB/s",
       .make_inputs = RowInputs,
       .output_size = SameOut,
       .run_cpu = SoftmaxRun,
       .truth = SoftmaxTruth,
       .flops = RowFlops,
       .bytes = RowBytes,
       .reduction_length = ColsRed});
  add({.name = "layernorm",
       .description = "row-wise layer norm, eps 1e-5",
       .shape_meaning = "rows x cols",
       .dtypes = f32,
       .quick = rq,
       .standard = rs,
       .full = rf,
       .rate_unit = "GB/s",
       .make_inputs = RowInputs,
       .output_size = SameOut,
       .run_cpu = LayerNormRun,
       .truth = LayerNormTruth,
       .flops = RowFlops,
       .bytes = RowBytes,
       .reduction_length = ColsRed});
  add({.name = "rmsnorm",
       .description = "row-wise RMS norm, eps 1e-6",
       .shape_meaning = "rows x cols",
       .dtypes = f32,
       .quick = rq,
       .standard = rs,
       .full = rf,
       .rate_unit = "GB/s",
       .make_inputs = RowInputs,
       .output_size = SameOut,
       .run_cpu = RmsNormRun,
       .truth = RmsNormTruth,
       .flops = RowFlops,
       .bytes = RowBytes,
       .reduction_length = ColsRed});
  const std::vector<std::vector<int64_t>> dq = {{1024, 4096}}, ds = {{8192, 8192}};
  add({.name = "reduce_sum",
       .description = "row-wise sum",
       .shape_meaning = "rows x cols",
       .dtypes = f32,
       .quick = dq,
       .standard = ds,
       .full = ds,
       .rate_unit = "GB/s",
       .make_inputs = RowInputs,
       .output_size = RowsOut,
       .run_cpu = SumRun,
       .truth = SumTruth,
       .flops = ZeroFlops,
       .bytes = ReduceBytes,
       .reduction_length = ColsRed});
  add({.name = "reduce_max",
       .description = "row-wise max",
       .shape_meaning = "rows x cols",
       .dtypes = f32,
       .quick = dq,
       .standard = ds,
       .full = ds,
       .rate_unit = "GB/s",
       .make_inputs = RowInputs,
       .output_size = RowsOut,
       .run_cpu = MaxRun,
       .truth = MaxTruth,
       .flops = ZeroFlops,
       .bytes = ReduceBytes,
       .reduction_length = OneRed});
  const std::vector<std::vector<int64_t>> eq = {{1 << 22}}, es = {{1 << 26}};
  add({.name = "gelu",
       .description = "GELU, erf form",
       .shape_meaning = "n",
       .dtypes = f32,
       .quick = eq,
       .standard = es,
       .full = es,
       .rate_unit = "GB/s",
       .make_inputs = ActInputs,
       .output_size = SameOut,
       .run_cpu = GeluRun,
       .truth = GeluTruth,
       .flops = ZeroFlops,
       .bytes = ActBytes,
       .reduction_length = OneRed});
  add({.name = "silu",
       .description = "SiLU x * sigmoid(x)",
       .shape_meaning = "n",
       .dtypes = f32,
       .quick = eq,
       .standard = es,
       .full = es,
       .rate_unit = "GB/s",
       .make_inputs = ActInputs,
       .output_size = SameOut,
       .run_cpu = SiluRun,
       .truth = SiluTruth,
       .flops = ZeroFlops,
       .bytes = ActBytes,
       .reduction_length = OneRed});
  const std::vector<std::vector<int64_t>> bq = {{1 << 23}}, bs = {{1 << 27}};
  add({.name = "copy",
       .description = "device memory copy y = x",
       .shape_meaning = "n",
       .dtypes = f32,
       .quick = bq,
       .standard = bs,
       .full = bs,
       .rate_unit = "GB/s",
       .make_inputs = CopyInputs,
       .output_size = SameOut,
       .run_cpu = CopyRun,
       .truth = CopyTruth,
       .flops = ZeroFlops,
       .bytes = CopyBytes,
       .reduction_length = OneRed});
  add({.name = "triad",
       .description = "STREAM triad a = b + 3 * c",
       .shape_meaning = "n",
       .dtypes = f32,
       .quick = bq,
       .standard = bs,
       .full = bs,
       .rate_unit = "GB/s",
       .make_inputs = TriadInputs,
       .output_size = SameOut,
       .run_cpu = TriadRun,
       .truth = TriadTruth,
       .flops = TriadFlops,
       .bytes = TriadBytes,
       .reduction_length = [](const CaseSpec&) -> int64_t { return 2; }});
  add({.name = "h2d_copy",
       .description = "host-to-device copy, pinned memory (GPU only)",
       .shape_meaning = "bytes",
       .dtypes = {"u8"},
       .quick = {{1 << 26}},
       .standard = {{1 << 28}},
       .full = {{1 << 30}},
       .on_cpu = false,
       .rate_unit = "GB/s",
       .make_inputs = CopyInputs,
       .output_size = SameOut,
       .flops = ZeroFlops,
       .bytes = [](const CaseSpec& c) -> double { return static_cast<double>(Prod(c.shape)); },
       .reduction_length = OneRed});
  return r;
}

}  // namespace

Result<Suite> ParseSuite(std::string_view name) {
  if (name == "quick") return Suite::kQuick;
  if (name == "standard") return Suite::kStandard;
  if (name == "full") return Suite::kFull;
  return Status::InvalidArgument("unknown suite '" + std::string(name) +
                                 "' (use quick, standard, full)");
}

std::string_view SuiteName(Suite s) {
  switch (s) {
    case Suite::kQuick:
      return "quick";
    case Suite::kStandard:
      return "standard";
    case Suite::kFull:
      return "full";
  }
  return "?";
}

std::string CaseSpec::Id() const {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "x" : "") + std::to_string(shape[i]);
  return op + "/" + dtype + "/" + dims + "/" + layout + "/seed=" + std::to_string(seed);
}

const std::vector<OpDescriptor>& OpRegistry() {
  static const std::vector<OpDescriptor> registry = BuildRegistry();
  return registry;
}

const OpDescriptor* FindOp(std::string_view name) {
  for (const OpDescriptor& d : OpRegistry()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Result<std::vector<CaseSpec>> SuiteCases(Suite suite, const std::vector<std::string>& ops) {
  for (const std::string& o : ops) {
    if (FindOp(o) == nullptr) {
      return Status::InvalidArgument("unknown op '" + o + "' (see cutover compat list)");
    }
  }
  std::vector<CaseSpec> cases;
  for (const OpDescriptor& d : OpRegistry()) {
    if (!ops.empty() && std::find(ops.begin(), ops.end(), d.name) == ops.end()) continue;
    const auto& shapes = suite == Suite::kQuick      ? d.quick
                         : suite == Suite::kStandard ? d.standard
                                                     : d.full;
    for (const std::string& dt : d.dtypes) {
      for (const auto& s : shapes) cases.push_back({d.name, dt, s, "row-major", 1});
    }
  }
  return cases;
}

Tolerance ToleranceFor(std::string_view dtype, int64_t reduction_length) {
  double rtol = 1.3e-6, u = 0x1p-24;  // fp32 (and the default)
  if (dtype == "fp16") rtol = 1e-3, u = 0x1p-11;
  if (dtype == "bf16") rtol = 1.6e-2, u = 0x1p-8;
  if (dtype == "tf32") rtol = 1e-3, u = 0x1p-11;
  if (dtype == "fp64") rtol = 1e-7, u = 0x1p-53;
  if (dtype == "u8") rtol = 0, u = 0;
  const double n = static_cast<double>(std::max<int64_t>(reduction_length, 1));
  if (n > 1) rtol = std::max(rtol, 8.0 * u * std::sqrt(n));
  return {rtol, dtype == "u8" ? 0.0 : 1e-5};
}

}  // namespace cutover
