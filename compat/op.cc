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

// Bytes of one element of `dtype` (fp32/tf32/int32 4, fp16/bf16 2, fp8/int8/u8 1).
double ElemBytes(std::string_view dtype) {
  if (dtype == "fp16" || dtype == "bf16") return 2;
  if (dtype == "fp8_e4m3" || dtype == "int8" || dtype == "u8") return 1;
  return 4;
}

// The stress distribution (op.h ParseDist): `cap` bounds the magnitudes (clamped to the dtype's
// largest value). Built from Philox words with exact arithmetic only (no libm), so every host
// gets the same bits.
std::vector<float> Stress(const CaseSpec& c, uint32_t stream, size_t n, double cap) {
  const uint64_t key = PhiloxKeyForId(c.Id());
  std::vector<float> v(n);
  const FloatFormat f = FormatOf(c.dtype);
  cap = std::min(cap, f.max);
  int cap_exp = 0;
  std::frexp(cap, &cap_exp);
  const int hi = cap_exp - 1, lo = std::max(f.emin, hi - 80);  // binades [lo, hi)
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w0 = PhiloxWord(key, stream, 2 * i), w1 = PhiloxWord(key, stream, 2 * i + 1);
    const bool negative = w0 & 1u;
    const uint32_t kind = (w0 >> 1) & 31u;
    double a;
    if (c.dtype == "int8") {
      a = kind == 0 ? 0 : kind <= 8 ? 127 : static_cast<double>(w1 % 128u);
    } else if (kind == 0) {
      a = 0;
    } else if (kind <= 4) {  // a subnormal of the dtype
      a = std::ldexp(1.0 + static_cast<double>(w1 % ((1u << f.mant) - 1)), f.emin - f.mant);
    } else if (kind <= 6) {
      a = cap;
    } else {  // log-uniform: a whole binade from the top bits, the mantissa from the rest
      const int e = lo + static_cast<int>((w1 >> 24) % static_cast<uint32_t>(std::max(1, hi - lo)));
      a = std::ldexp(1.0 + static_cast<double>(w1 & 0xffffffu) * 0x1p-24, e);
    }
    v[i] = RoundInput(static_cast<float>(negative ? -a : a), c.dtype);
  }
  return v;
}

// n inputs of stream `stream` from the case's distribution: normal N(mean, sd), uniform with
// the same mean and variance, or stress capped at `cap`; rounded to the case's dtype.
std::vector<float> Input(const CaseSpec& c, uint32_t stream, size_t n, float mean, float sd,
                         double cap) {
  std::vector<float> v;
  if (c.dist == "stress") return Stress(c, stream, n, cap);
  if (c.dist == "uniform") {
    const float half = sd * 1.7320508f;
    v = Uniform(c, stream, n, mean - half, mean + half);
  } else {
    v = Normal(c, stream, n, mean, sd);
  }
  if (c.dtype != "fp32") {
    for (float& x : v) x = RoundInput(x, c.dtype);
  }
  return v;
}

// Rounds a float32 result to the case's output dtype (fp16 and bf16; others are float already).
void RoundOutputs(const CaseSpec& c, float* out, size_t n) {
  const std::string_view od = OutputDtype(c.dtype);
  if (od != "fp16" && od != "bf16") return;
  for (size_t i = 0; i < n; ++i) out[i] = RoundOutput(out[i], od);
}

// The largest magnitude a gemm input may have in a stress case so that K products stay below
// the output dtype's largest value.
double GemmStressCap(const CaseSpec& c, int64_t k) {
  const double out_max = FormatOf(OutputDtype(c.dtype)).max;
  return std::sqrt(out_max / (4.0 * static_cast<double>(std::max<int64_t>(k, 1))));
}

// ---- gemm: shape {M, N, K}; inputs A[M,K], B[K,N]. gemm_batched: {batch, M, N, K}.
Tensors GemmInputs(const CaseSpec& c) {
  const bool batched = c.shape.size() == 4;
  const int64_t bt = batched ? c.shape[0] : 1, o = batched ? 1 : 0;
  const int64_t m = c.shape[o], n = c.shape[o + 1], k = c.shape[o + 2];
  const float sd = c.dtype == "int8" ? 32.0f : 1.0f;
  const double cap = GemmStressCap(c, k);
  return {Input(c, 0, bt * m * k, 0, sd, cap), Input(c, 1, bt * k * n, 0, sd, cap)};
}
size_t GemmOut(const CaseSpec& c) { return c.shape[0] * c.shape[1]; }
void GemmRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  if (c.dtype == "int8") {
    cpu::GemmInt8(cfg, c.shape[0], c.shape[1], c.shape[2], in[0].data(), in[1].data(), out);
  } else {
    cpu::Gemm(cfg, c.shape[0], c.shape[1], c.shape[2], in[0].data(), in[1].data(), out);
  }
  RoundOutputs(c, out, GemmOut(c));
}
double GemmTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t n = c.shape[1], k = c.shape[2], i = idx / n, j = idx % n;
  double s = 0;
  for (int64_t p = 0; p < k; ++p) s += static_cast<double>(in[0][i * k + p]) * in[1][p * n + j];
  return s;
}
double GemmFlops(const CaseSpec& c) { return 2.0 * c.shape[0] * c.shape[1] * c.shape[2]; }
double GemmBytes(const CaseSpec& c) {
  return ElemBytes(c.dtype) * (c.shape[0] * c.shape[2] + c.shape[2] * c.shape[1]) +
         ElemBytes(OutputDtype(c.dtype)) * c.shape[0] * c.shape[1];
}
int64_t GemmRed(const CaseSpec& c) { return c.shape[2]; }
// The quick suite runs the dtypes other than fp32 at its first shape only (gemm, conv, sdpa).
bool OthersAtFirstQuickShape(Suite s, const CaseSpec& c) {
  return s != Suite::kQuick || c.dtype == "fp32" || c.shape == FindOp(c.op)->quick[0];
}

size_t BatchedOut(const CaseSpec& c) { return c.shape[0] * c.shape[1] * c.shape[2]; }
void BatchedRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  const int64_t m = c.shape[1], n = c.shape[2], k = c.shape[3];
  for (int64_t b = 0; b < c.shape[0]; ++b) {
    cpu::Gemm(cfg, m, n, k, in[0].data() + b * m * k, in[1].data() + b * k * n, out + b * m * n);
  }
  RoundOutputs(c, out, BatchedOut(c));
}
double BatchedTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t m = c.shape[1], n = c.shape[2], k = c.shape[3];
  const int64_t b = idx / (m * n), i = idx % (m * n) / n, j = idx % n;
  const float* a = in[0].data() + b * m * k;
  const float* bb = in[1].data() + b * k * n;
  double s = 0;
  for (int64_t p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * bb[p * n + j];
  return s;
}
double BatchedFlops(const CaseSpec& c) { return 2.0 * Prod(c.shape); }
double BatchedBytes(const CaseSpec& c) {
  const int64_t b = c.shape[0], m = c.shape[1], n = c.shape[2], k = c.shape[3];
  return ElemBytes(c.dtype) * b * (m * k + k * n) + ElemBytes(OutputDtype(c.dtype)) * b * m * n;
}
int64_t BatchedRed(const CaseSpec& c) { return c.shape[3]; }

// ---- conv2d: shape {N, C, H, W, K, R, S, stride, pad}; layout NCHW or NHWC.
cpu::ConvShape Conv(const CaseSpec& c) {
  const auto& v = c.shape;
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
}
cpu::ConvLayout ConvLayoutOf(const CaseSpec& c) {
  return c.layout == "NHWC" ? cpu::ConvLayout::kNhwc : cpu::ConvLayout::kNchw;
}
int64_t ConvX(const cpu::ConvShape& g) { return g.n * g.c * g.h * g.w; }
int64_t ConvW(const cpu::ConvShape& g) { return g.k * g.c * g.r * g.s; }
int64_t ConvY(const cpu::ConvShape& g) { return g.n * g.k * g.P() * g.Q(); }
// Inputs: fwd [x, w], bwd_data [dy, w], bwd_filter [x, dy].
Tensors ConvInputs(const CaseSpec& c) {
  const cpu::ConvShape g = Conv(c);
  const double cap = 8;
  if (c.op == "conv2d_fwd")
    return {Input(c, 0, ConvX(g), 0, 1, cap), Input(c, 1, ConvW(g), 0, 1, cap)};
  if (c.op == "conv2d_bwd_data") {
    return {Input(c, 0, ConvY(g), 0, 1, cap), Input(c, 1, ConvW(g), 0, 1, cap)};
  }
  return {Input(c, 0, ConvX(g), 0, 1, cap), Input(c, 1, ConvY(g), 0, 1, cap)};
}
size_t ConvOut(const CaseSpec& c) {
  const cpu::ConvShape g = Conv(c);
  return c.op == "conv2d_fwd" ? ConvY(g) : c.op == "conv2d_bwd_data" ? ConvX(g) : ConvW(g);
}
void ConvRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  const cpu::ConvShape g = Conv(c);
  const cpu::ConvLayout l = ConvLayoutOf(c);
  if (c.op == "conv2d_fwd") {
    cpu::Conv2dFwd(cfg, g, l, in[0].data(), in[1].data(), out);
  } else if (c.op == "conv2d_bwd_data") {
    cpu::Conv2dBwdData(cfg, g, l, in[0].data(), in[1].data(), out);
  } else {
    cpu::Conv2dBwdFilter(cfg, g, l, in[0].data(), in[1].data(), out);
  }
  RoundOutputs(c, out, ConvOut(c));
}
// The logical coordinates (a, b, c, d) of flat position `idx` of a tensor with logical dims
// {d0, d1, d2, d3} stored in NCHW order (a, b, c, d) or NHWC order (a, c, d, b).
void Unflatten(int64_t idx, bool nhwc, int64_t d1, int64_t d2, int64_t d3, int64_t* a, int64_t* b,
               int64_t* cc, int64_t* d) {
  if (!nhwc) {
    *d = idx % d3, idx /= d3;
    *cc = idx % d2, idx /= d2;
    *b = idx % d1, *a = idx / d1;
  } else {
    *b = idx % d1, idx /= d1;
    *d = idx % d3, idx /= d3;
    *cc = idx % d2, *a = idx / d2;
  }
}
double ConvTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const cpu::ConvShape g = Conv(c);
  const cpu::ConvLayout l = ConvLayoutOf(c);
  const bool nhwc = l == cpu::ConvLayout::kNhwc;
  const int64_t P = g.P(), Q = g.Q();
  double sum = 0;
  if (c.op == "conv2d_fwd") {
    int64_t n, k, p, q;
    Unflatten(static_cast<int64_t>(idx), nhwc, g.k, P, Q, &n, &k, &p, &q);
    for (int64_t ch = 0; ch < g.c; ++ch) {
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t h = p * g.stride - g.pad + r;
        if (h < 0 || h >= g.h) continue;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t w = q * g.stride - g.pad + s;
          if (w < 0 || w >= g.w) continue;
          sum += static_cast<double>(in[0][cpu::ConvXIndex(g, l, n, ch, h, w)]) *
                 in[1][cpu::ConvWIndex(g, l, k, ch, r, s)];
        }
      }
    }
  } else if (c.op == "conv2d_bwd_data") {
    int64_t n, ch, h, w;
    Unflatten(static_cast<int64_t>(idx), nhwc, g.c, g.h, g.w, &n, &ch, &h, &w);
    for (int64_t k = 0; k < g.k; ++k) {
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t ph = h + g.pad - r;
        if (ph < 0 || ph % g.stride != 0 || ph / g.stride >= P) continue;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t qw = w + g.pad - s;
          if (qw < 0 || qw % g.stride != 0 || qw / g.stride >= Q) continue;
          sum += static_cast<double>(
                     in[0][cpu::ConvYIndex(g, l, n, k, ph / g.stride, qw / g.stride)]) *
                 in[1][cpu::ConvWIndex(g, l, k, ch, r, s)];
        }
      }
    }
  } else {
    int64_t k, ch, r, s;
    // dw has logical dims {K, C, R, S}: NCHW order k,c,r,s; NHWC order k,r,s,c.
    Unflatten(static_cast<int64_t>(idx), nhwc, g.c, g.r, g.s, &k, &ch, &r, &s);
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t p = 0; p < P; ++p) {
        const int64_t h = p * g.stride - g.pad + r;
        if (h < 0 || h >= g.h) continue;
        for (int64_t q = 0; q < Q; ++q) {
          const int64_t w = q * g.stride - g.pad + s;
          if (w < 0 || w >= g.w) continue;
          sum += static_cast<double>(in[0][cpu::ConvXIndex(g, l, n, ch, h, w)]) *
                 in[1][cpu::ConvYIndex(g, l, n, k, p, q)];
        }
      }
    }
  }
  return sum;
}
double ConvFlops(const CaseSpec& c) {
  const cpu::ConvShape g = Conv(c);
  return 2.0 * ConvY(g) * g.c * g.r * g.s;
}
double ConvBytes(const CaseSpec& c) {
  const cpu::ConvShape g = Conv(c);
  return ElemBytes(c.dtype) * static_cast<double>(ConvX(g) + ConvW(g) + ConvY(g));
}
// fwd: C*R*S; bwd_data: the taps that reach one input, K * ceil(R/stride) * ceil(S/stride);
// bwd_filter: N*P*Q.
int64_t ConvRed(const CaseSpec& c) {
  const cpu::ConvShape g = Conv(c);
  if (c.op == "conv2d_fwd") return g.c * g.r * g.s;
  if (c.op == "conv2d_bwd_data") {
    return g.k * ((g.r + g.stride - 1) / g.stride) * ((g.s + g.stride - 1) / g.stride);
  }
  return g.n * g.P() * g.Q();
}

// ---- sdpa: shape {B, H, S, D}; layout causal or full; inputs q, k, v [B, H, S, D].
Tensors SdpaInputs(const CaseSpec& c) {
  const int64_t n = Prod(c.shape);
  return {Input(c, 0, n, 0, 1, 4), Input(c, 1, n, 0, 1, 4), Input(c, 2, n, 0, 1, 4)};
}
void SdpaRun(const CaseSpec& c, const CpuConfig& cfg, const Tensors& in, float* out) {
  cpu::Sdpa(cfg, c.shape[0], c.shape[1], c.shape[2], c.shape[3], c.layout == "causal", in[0].data(),
            in[1].data(), in[2].data(), out);
  RoundOutputs(c, out, Prod(c.shape));
}
double SdpaTruth(const CaseSpec& c, const Tensors& in, size_t idx) {
  const int64_t S = c.shape[2], D = c.shape[3];
  const int64_t d = idx % D, row = idx / D, i = row % S, bh = row / S;
  const int64_t len = c.layout == "causal" ? i + 1 : S;
  const float* q = in[0].data() + row * D;
  const float* k = in[1].data() + bh * S * D;
  const float* v = in[2].data() + bh * S * D;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> sc(static_cast<size_t>(len));
  double mx = -INFINITY;
  for (int64_t j = 0; j < len; ++j) {
    double s = 0;
    for (int64_t e = 0; e < D; ++e) s += static_cast<double>(q[e]) * k[j * D + e];
    sc[j] = s * scale;
    mx = std::max(mx, sc[j]);
  }
  double num = 0, den = 0;
  for (int64_t j = 0; j < len; ++j) {
    const double p = std::exp(sc[j] - mx);
    den += p;
    num += p * v[j * D + d];
  }
  return num / den;
}
double SdpaFlops(const CaseSpec& c) {
  const double b = c.shape[0], h = c.shape[1], s = c.shape[2], d = c.shape[3];
  const double pairs = c.layout == "causal" ? s * (s + 1) / 2 : s * s;
  return 4.0 * b * h * pairs * d;
}
double SdpaBytes(const CaseSpec& c) { return 4.0 * ElemBytes(c.dtype) * Prod(c.shape); }
int64_t SdpaRed(const CaseSpec& c) { return c.shape[2] * c.shape[3]; }

// ---- collectives: shape {count}; one input x0 (op.h).
Tensors CollInputs(const CaseSpec& c) { return {Input(c, 0, c.shape[0], 0, 1, 1)}; }
size_t CollOut(const CaseSpec& c) { return CollectiveRecvCount(c.op, c.shape[0], 1); }
double CollTruth(const CaseSpec& c, const Tensors& in, size_t i) {
  return CollectiveTruth(c.op, c.dtype, in[0], 1, 0, static_cast<int64_t>(i));
}
double CollBytes(const CaseSpec& c) { return CollectiveAlgBytes(c.op, c.dtype, c.shape[0], 1); }
int64_t CollRed(const CaseSpec&) { return 1; }

// ---- row ops: shape {rows, cols}.
Tensors RowInputs(const CaseSpec& c) {
  const int64_t r = c.shape[0], n = c.shape[1];
  if (c.op == "layernorm") {
    return {Input(c, 0, r * n, 0.5f, 2.0f, 0x1p40), Normal(c, 1, n, 1.0f, 0.1f),
            Normal(c, 2, n, 0, 0.1f)};
  }
  if (c.op == "rmsnorm") {
    return {Input(c, 0, r * n, 0.5f, 2.0f, 0x1p40), Normal(c, 1, n, 1.0f, 0.1f)};
  }
  // softmax: differences up to 32 keep exp() well inside float; a sum: n terms stay finite.
  const double cap = c.op == "softmax" ? 16.0 : 0x1p127 / static_cast<double>(4 * n);
  return {Input(c, 0, r * n, 0.0f, 2.0f, cap)};
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
Tensors ActInputs(const CaseSpec& c) {
  return {Input(c, 0, Prod(c.shape), 0.0f, 3.0f, kFp32Format.max)};
}
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

using RunCpuFn = decltype(OpDescriptor::run_cpu);
using TruthFn = decltype(OpDescriptor::truth);
using Shapes = std::vector<std::vector<int64_t>>;
const std::vector<std::string> kF32 = {"fp32"};
const std::vector<std::string> kF32And16 = {"fp32", "fp16", "bf16"};

// One op of a family: the fields the family shares, with the op's own name, text and kernels.
OpDescriptor Member(const OpDescriptor& family, std::string name, std::string description,
                    RunCpuFn run, TruthFn truth) {
  OpDescriptor d = family;
  d.name = std::move(name);
  d.description = std::move(description);
  d.run_cpu = run;
  d.truth = truth;
  return d;
}

// The same op with `stress_dtypes` set (the dtypes its dist=stress cases run in).
OpDescriptor Stressed(OpDescriptor d, std::vector<std::string> dtypes) {
  d.stress_dtypes = std::move(dtypes);
  return d;
}

void AddGemmOps(std::vector<OpDescriptor>& r) {
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
  add({.name = "gemm",
       .description = "C = A * B, row-major",
       .shape_meaning = "M x N x K",
       .dtypes = {"fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8"},
       .quick = {{512, 512, 512}, {1024, 1024, 1024}, {16, 1024, 4096}},
       .standard = {{2048, 2048, 2048}, {16, 4096, 4096}, {4096, 4096, 4096}},
       .full = {{8192, 8192, 8192}, {4096, 11008, 4096}, {16, 11008, 4096}},
       .keep = OthersAtFirstQuickShape,
       .stress_dtypes = kF32And16,
       .rate_unit = "GFLOP/s",
       .make_inputs = GemmInputs,
       .output_size = GemmOut,
       .run_cpu = GemmRun,
       .truth = GemmTruth,
       .flops = GemmFlops,
       .bytes = GemmBytes,
       .reduction_length = GemmRed});
  add({.name = "gemm_batched",
       .description = "C[b] = A[b] * B[b], row-major",
       .shape_meaning = "batch x M x N x K",
       .dtypes = {"fp32", "tf32", "fp16", "bf16"},
       .quick = {{8, 128, 128, 256}},
       .standard = {{32, 512, 512, 512}},
       .full = {{64, 1024, 1024, 1024}},
       .rate_unit = "GFLOP/s",
       .make_inputs = GemmInputs,
       .output_size = BatchedOut,
       .run_cpu = BatchedRun,
       .truth = BatchedTruth,
       .flops = BatchedFlops,
       .bytes = BatchedBytes,
       .reduction_length = BatchedRed});
}

void AddConvOps(std::vector<OpDescriptor>& r) {
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
  // ResNet-50 layers {N, C, H, W, K, R, S, stride, pad}: conv1, a 3x3 and a 1x1 of res2, the
  // strided 3x3 of res3, 3x3 of res4, the 1x1 expansion of res5.
  auto resnet = [](int64_t n) -> std::vector<std::vector<int64_t>> {
    return {{n, 3, 224, 224, 64, 7, 7, 2, 3},  {n, 64, 56, 56, 64, 3, 3, 1, 1},
            {n, 64, 56, 56, 256, 1, 1, 1, 0},  {n, 128, 56, 56, 128, 3, 3, 2, 1},
            {n, 256, 14, 14, 256, 3, 3, 1, 1}, {n, 512, 7, 7, 2048, 1, 1, 1, 0}};
  };
  const std::vector<std::vector<int64_t>> cq = {{2, 32, 28, 28, 32, 3, 3, 1, 1},
                                                {2, 64, 14, 14, 64, 1, 1, 2, 0}};
  for (const char* name : {"conv2d_fwd", "conv2d_bwd_data", "conv2d_bwd_filter"}) {
    const std::string n = name;
    add({.name = n,
         .description = n == "conv2d_fwd"        ? "y = conv(x, w), cross-correlation"
                        : n == "conv2d_bwd_data" ? "dx from dy and w"
                                                 : "dw from x and dy",
         .shape_meaning = "N x C x H x W x K x R x S x stride x pad",
         .dtypes = kF32And16,
         .quick = cq,
         .standard = {resnet(8)[1], resnet(8)[3], resnet(8)[4], resnet(8)[5]},
         .full = resnet(32),
         .layouts = {"NCHW", "NHWC"},
         .keep = OthersAtFirstQuickShape,
         .rate_unit = "GFLOP/s",
         .make_inputs = ConvInputs,
         .output_size = ConvOut,
         .run_cpu = ConvRun,
         .truth = ConvTruth,
         .flops = ConvFlops,
         .bytes = ConvBytes,
         .reduction_length = ConvRed});
  }
}

void AddAttentionOps(std::vector<OpDescriptor>& r) {
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
  add({.name = "sdpa",
       .description = "softmax(q k^T / sqrt(D)) v, fp32 softmax",
       .shape_meaning = "B x H x S x D",
       .dtypes = kF32And16,
       .quick = {{1, 4, 512, 64}, {1, 2, 512, 128}},
       .standard = {{1, 8, 1024, 64}, {1, 8, 2048, 128}},
       .full = {{1, 16, 4096, 128}, {1, 16, 8192, 128}, {4, 16, 4096, 64}},
       .layouts = {"causal", "full"},
       .keep = OthersAtFirstQuickShape,
       .rate_unit = "GFLOP/s",
       .make_inputs = SdpaInputs,
       .output_size = SameOut,
       .run_cpu = SdpaRun,
       .truth = SdpaTruth,
       .flops = SdpaFlops,
       .bytes = SdpaBytes,
       .reduction_length = SdpaRed});
}

// Row-wise ops over rows x cols: the norms and softmax, and the reductions.
void AddRowOps(std::vector<OpDescriptor>& r) {
  const OpDescriptor norm{.shape_meaning = "rows x cols",
                          .dtypes = kF32,
                          .quick = Shapes{{1024, 1024}},
                          .standard = Shapes{{4096, 4096}},
                          .full = Shapes{{8192, 8192}},
                          .rate_unit = "GB/s",
                          .make_inputs = RowInputs,
                          .output_size = SameOut,
                          .flops = RowFlops,
                          .bytes = RowBytes,
                          .reduction_length = ColsRed};
  r.push_back(
      Stressed(Member(norm, "softmax", "row-wise softmax", SoftmaxRun, SoftmaxTruth), kF32));
  r.push_back(
      Member(norm, "layernorm", "row-wise layer norm, eps 1e-5", LayerNormRun, LayerNormTruth));
  r.push_back(Member(norm, "rmsnorm", "row-wise RMS norm, eps 1e-6", RmsNormRun, RmsNormTruth));
  const OpDescriptor reduce{.shape_meaning = "rows x cols",
                            .dtypes = kF32,
                            .quick = Shapes{{1024, 4096}},
                            .standard = Shapes{{8192, 8192}},
                            .full = Shapes{{8192, 8192}},
                            .rate_unit = "GB/s",
                            .make_inputs = RowInputs,
                            .output_size = RowsOut,
                            .flops = ZeroFlops,
                            .bytes = ReduceBytes};
  OpDescriptor sum = Stressed(Member(reduce, "reduce_sum", "row-wise sum", SumRun, SumTruth), kF32);
  sum.reduction_length = ColsRed;
  r.push_back(std::move(sum));
  OpDescriptor max = Member(reduce, "reduce_max", "row-wise max", MaxRun, MaxTruth);
  max.reduction_length = OneRed;
  r.push_back(std::move(max));
}

// Elementwise activations and the memory-bound copies.
void AddElementwiseOps(std::vector<OpDescriptor>& r) {
  const OpDescriptor act{.shape_meaning = "n",
                         .dtypes = kF32,
                         .quick = Shapes{{1 << 22}},
                         .standard = Shapes{{1 << 26}},
                         .full = Shapes{{1 << 26}},
                         .rate_unit = "GB/s",
                         .make_inputs = ActInputs,
                         .output_size = SameOut,
                         .flops = ZeroFlops,
                         .bytes = ActBytes,
                         .reduction_length = OneRed};
  r.push_back(Stressed(Member(act, "gelu", "GELU, erf form", GeluRun, GeluTruth), kF32));
  r.push_back(Member(act, "silu", "SiLU x * sigmoid(x)", SiluRun, SiluTruth));
  const OpDescriptor stream{.shape_meaning = "n",
                            .dtypes = kF32,
                            .quick = Shapes{{1 << 23}},
                            .standard = Shapes{{1 << 27}},
                            .full = Shapes{{1 << 27}},
                            .rate_unit = "GB/s",
                            .output_size = SameOut};
  OpDescriptor copy = Member(stream, "copy", "device memory copy y = x", CopyRun, CopyTruth);
  copy.make_inputs = CopyInputs;
  copy.flops = ZeroFlops;
  copy.bytes = CopyBytes;
  copy.reduction_length = OneRed;
  r.push_back(std::move(copy));
  OpDescriptor triad = Member(stream, "triad", "STREAM triad a = b + 3 * c", TriadRun, TriadTruth);
  triad.make_inputs = TriadInputs;
  triad.flops = TriadFlops;
  triad.bytes = TriadBytes;
  triad.reduction_length = [](const CaseSpec&) -> int64_t { return 2; };
  r.push_back(std::move(triad));
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
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
}

void AddCollectiveOps(std::vector<OpDescriptor>& r) {
  auto add = [&](OpDescriptor d) { r.push_back(std::move(d)); };
  const char* coll_desc[] = {"NCCL all-reduce (sum) over all local GPUs (GPU only)",
                             "NCCL all-gather over all local GPUs (GPU only)",
                             "NCCL reduce-scatter (sum) over all local GPUs (GPU only)",
                             "NCCL broadcast from rank 0 over all local GPUs (GPU only)"};
  int i = 0;
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter", "broadcast"}) {
    add({.name = name,
         .description = coll_desc[i++],
         .shape_meaning = "count per rank",
         .dtypes = {"fp32", "bf16"},
         .quick = {{1 << 20}},
         .standard = {{1 << 26}},
         .full = {{1 << 28}},
         .on_cpu = false,
         .rate_unit = "GB/s",
         .make_inputs = CollInputs,
         .output_size = CollOut,
         .truth = CollTruth,
         .flops = ZeroFlops,
         .bytes = CollBytes,
         .reduction_length = CollRed});
  }
}

// The op table, in the order cases are listed and run.
std::vector<OpDescriptor> BuildRegistry() {
  std::vector<OpDescriptor> r;
  AddGemmOps(r);
  AddConvOps(r);
  AddAttentionOps(r);
  AddRowOps(r);
  AddElementwiseOps(r);
  AddCollectiveOps(r);
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

Status ParseDist(std::string_view name) {
  if (name == "normal" || name == "uniform" || name == "stress") return Status::Ok();
  return Status::InvalidArgument("unknown input distribution '" + std::string(name) +
                                 "' (use normal, uniform, stress)");
}

std::string CaseSpec::Id() const {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "x" : "") + std::to_string(shape[i]);
  const std::string d = dist == "normal" || dist.empty() ? "" : "/dist=" + dist;
  return op + "/" + dtype + "/" + dims + "/" + layout + d + "/seed=" + std::to_string(seed);
}

double BusBandwidthFactor(std::string_view op, int nranks) {
  const double n = std::max(1, nranks);
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter") return (n - 1) / n;
  if (op == "broadcast") return 1.0;
  return 0.0;
}

int64_t CollectiveSendCount(std::string_view op, int64_t count, int nranks) {
  return op == "reduce_scatter" ? count * std::max(1, nranks) : count;
}

int64_t CollectiveRecvCount(std::string_view op, int64_t count, int nranks) {
  return op == "all_gather" ? count * std::max(1, nranks) : count;
}

float CollectiveSendValue(std::string_view dtype, const std::vector<float>& x0, int rank,
                          int64_t i) {
  const int64_t count = static_cast<int64_t>(x0.size());
  const double v = static_cast<double>(x0[i % count]) * (rank + 1) * (i / count + 1);
  return RoundInput(static_cast<float>(v), dtype);
}

double CollectiveTruth(std::string_view op, std::string_view dtype, const std::vector<float>& x0,
                       int nranks, int rank, int64_t i) {
  const int64_t count = static_cast<int64_t>(x0.size());
  nranks = std::max(1, nranks);
  if (op == "broadcast") return CollectiveSendValue(dtype, x0, 0, i);
  if (op == "all_gather")
    return CollectiveSendValue(dtype, x0, static_cast<int>(i / count), i % count);
  // all_reduce: element i of every rank's buffer; reduce_scatter: block `rank` of it.
  const int64_t at = op == "reduce_scatter" ? rank * count + i : i;
  double s = 0;
  for (int r = 0; r < nranks; ++r) s += CollectiveSendValue(dtype, x0, r, at);
  return s;
}

double CollectiveAlgBytes(std::string_view op, std::string_view dtype, int64_t count, int nranks) {
  const double size = dtype == "bf16" ? 2 : 4;
  const double n = std::max(1, nranks);
  if (op == "all_gather" || op == "reduce_scatter") return static_cast<double>(count) * n * size;
  return static_cast<double>(count) * size;
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
      for (const auto& s : shapes) {
        for (const std::string& l : d.layouts) {
          CaseSpec c{d.name, dt, s, l, 1};
          if (d.keep == nullptr || d.keep(suite, c)) cases.push_back(std::move(c));
        }
      }
    }
    for (const std::string& dt : d.stress_dtypes) {
      if (shapes.empty()) continue;
      cases.push_back({d.name, dt, shapes[0], d.layouts[0], 1, "stress"});
    }
  }
  return cases;
}

Tolerance ToleranceFor(std::string_view dtype, int64_t reduction_length) {
  // base: the output's rounding (PyTorch's assert_close defaults); u: the accumulation's unit
  // roundoff (fp32 accumulation for every reduced-precision dtype).
  double rtol = 1.3e-6, u = 0x1p-24;  // fp32 (and the default)
  if (dtype == "fp16") rtol = 1e-3;
  if (dtype == "bf16") rtol = 1.6e-2;
  if (dtype == "tf32") rtol = 1e-3;
  if (dtype == "fp8_e4m3") rtol = 1.6e-2, u = 0x1p-14;
  if (dtype == "fp64") rtol = 1e-7, u = 0x1p-53;
  if (dtype == "u8" || dtype == "int8") return {0, 0};
  const double n = static_cast<double>(std::max<int64_t>(reduction_length, 1));
  if (n > 1) rtol = std::max(rtol, 8.0 * u * std::sqrt(n));
  return {rtol, 1e-5};
}

}  // namespace cutover
