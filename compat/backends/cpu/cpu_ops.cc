#include "compat/backends/cpu/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

namespace cutover::cpu {

void ParallelRows(int64_t n, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<int64_t>(n, 1))));
  if (threads == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t per = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    if (begin < end) pool.emplace_back(fn, begin, end);
  }
  for (auto& th : pool) th.join();
}

namespace {

constexpr int64_t kRowBlock = 32;
constexpr int64_t kKBlock = 256;
constexpr int64_t kColBlock = 512;

// Accumulates into acc[rows, cols] (Acc = float or double) the product A * B of one row block.
template <typename Acc>
void GemmRows(int64_t r0, int64_t r1, int64_t n, int64_t k, const float* a, const float* b,
              float* c) {
  std::vector<Acc> acc(static_cast<size_t>(kRowBlock * kColBlock));
  for (int64_t i0 = r0; i0 < r1; i0 += kRowBlock) {
    const int64_t i1 = std::min(r1, i0 + kRowBlock);
    for (int64_t j0 = 0; j0 < n; j0 += kColBlock) {
      const int64_t j1 = std::min(n, j0 + kColBlock), w = j1 - j0;
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t p0 = 0; p0 < k; p0 += kKBlock) {
        const int64_t p1 = std::min(k, p0 + kKBlock);
        for (int64_t i = i0; i < i1; ++i) {
          Acc* row = acc.data() + (i - i0) * kColBlock;
          for (int64_t p = p0; p < p1; ++p) {
            const Acc av = a[i * k + p];
            const float* brow = b + p * n + j0;
            for (int64_t j = 0; j < w; ++j) row[j] += av * static_cast<Acc>(brow[j]);
          }
        }
      }
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = 0; j < w; ++j) {
          c[i * n + j0 + j] = static_cast<float>(acc[(i - i0) * kColBlock + j]);
        }
      }
    }
  }
}

template <typename Acc>
Acc RowSum(const float* x, int64_t n) {
  Acc s = 0;
  for (int64_t j = 0; j < n; ++j) s += x[j];
  return s;
}

}  // namespace

void Gemm(const CpuConfig& cfg, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          float* c) {
  ParallelRows(m, cfg.threads, [&](int64_t r0, int64_t r1) {
    if (cfg.fp64_accumulate) {
      GemmRows<double>(r0, r1, n, k, a, b, c);
    } else {
      GemmRows<float>(r0, r1, n, k, a, b, c);
    }
  });
}

void Softmax(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y) {
  ParallelRows(rows, cfg.threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const float* xr = x + i * cols;
      float* yr = y + i * cols;
      float mx = -INFINITY;
      for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, xr[j]);
      double sum_d = 0;
      float sum_f = 0;
      for (int64_t j = 0; j < cols; ++j) {
        yr[j] = std::exp(xr[j] - mx);
        if (cfg.fp64_accumulate)
          sum_d += yr[j];
        else
          sum_f += yr[j];
      }
      const float inv = cfg.fp64_accumulate ? static_cast<float>(1.0 / sum_d) : 1.0f / sum_f;
      for (int64_t j = 0; j < cols; ++j) yr[j] *= inv;
    }
  });
}

void LayerNorm(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, const float* gamma,
               const float* beta, float* y) {
  ParallelRows(rows, cfg.threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const float* xr = x + i * cols;
      double mean, var;
      if (cfg.fp64_accumulate) {
        mean = RowSum<double>(xr, cols) / cols;
        double s = 0;
        for (int64_t j = 0; j < cols; ++j) s += (xr[j] - mean) * (xr[j] - mean);
        var = s / cols;
      } else {
        float mf = RowSum<float>(xr, cols) / cols, s = 0;
        for (int64_t j = 0; j < cols; ++j) s += (xr[j] - mf) * (xr[j] - mf);
        mean = mf;
        var = s / cols;
      }
      const float m = static_cast<float>(mean);
      const float rstd = static_cast<float>(1.0 / std::sqrt(var + 1e-5));
      for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = (xr[j] - m) * rstd * gamma[j] + beta[j];
    }
  });
}

void RmsNorm(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, const float* gamma,
             float* y) {
  ParallelRows(rows, cfg.threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const float* xr = x + i * cols;
      double ms;
      if (cfg.fp64_accumulate) {
        double s = 0;
        for (int64_t j = 0; j < cols; ++j) s += static_cast<double>(xr[j]) * xr[j];
        ms = s / cols;
      } else {
        float s = 0;
        for (int64_t j = 0; j < cols; ++j) s += xr[j] * xr[j];
        ms = s / cols;
      }
      const float r = static_cast<float>(1.0 / std::sqrt(ms + 1e-6));
      for (int64_t j = 0; j < cols; ++j) y[i * cols + j] = xr[j] * r * gamma[j];
    }
  });
}

void ReduceSum(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y) {
  ParallelRows(rows, cfg.threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      y[i] = cfg.fp64_accumulate ? static_cast<float>(RowSum<double>(x + i * cols, cols))
                                 : RowSum<float>(x + i * cols, cols);
    }
  });
}

void ReduceMax(const CpuConfig& cfg, int64_t rows, int64_t cols, const float* x, float* y) {
  ParallelRows(rows, cfg.threads, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float mx = -INFINITY;
      for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, x[i * cols + j]);
      y[i] = mx;
    }
  });
}

void Gelu(const CpuConfig& cfg, int64_t n, const float* x, float* y) {
  ParallelRows(n, cfg.threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118f));
  });
}

void Silu(const CpuConfig& cfg, int64_t n, const float* x, float* y) {
  ParallelRows(n, cfg.threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
  });
}

void Copy(const CpuConfig& cfg, int64_t n, const float* x, float* y) {
  ParallelRows(n, cfg.threads, [&](int64_t b, int64_t e) {
    std::memcpy(y + b, x + b, static_cast<size_t>(e - b) * sizeof(float));
  });
}

void Triad(const CpuConfig& cfg, int64_t n, const float* b, const float* c, float s, float* a) {
  ParallelRows(n, cfg.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
  });
}

void GemmInt8(const CpuConfig& cfg, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
              float* c) {
  std::vector<int32_t> bi(static_cast<size_t>(k * n));
  for (size_t i = 0; i < bi.size(); ++i) bi[i] = static_cast<int32_t>(b[i]);
  ParallelRows(m, cfg.threads, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> acc(static_cast<size_t>(n));
    for (int64_t i = r0; i < r1; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t p = 0; p < k; ++p) {
        const int32_t av = static_cast<int32_t>(a[i * k + p]);
        const int32_t* brow = bi.data() + p * n;
        for (int64_t j = 0; j < n; ++j) acc[j] += av * brow[j];
      }
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = static_cast<float>(acc[j]);
    }
  });
}

int64_t ConvXIndex(const ConvShape& g, ConvLayout l, int64_t n, int64_t c, int64_t h, int64_t w) {
  return l == ConvLayout::kNchw ? ((n * g.c + c) * g.h + h) * g.w + w
                                : ((n * g.h + h) * g.w + w) * g.c + c;
}
int64_t ConvWIndex(const ConvShape& g, ConvLayout l, int64_t k, int64_t c, int64_t r, int64_t s) {
  return l == ConvLayout::kNchw ? ((k * g.c + c) * g.r + r) * g.s + s
                                : ((k * g.r + r) * g.s + s) * g.c + c;
}
int64_t ConvYIndex(const ConvShape& g, ConvLayout l, int64_t n, int64_t k, int64_t p, int64_t q) {
  return l == ConvLayout::kNchw ? ((n * g.k + k) * g.P() + p) * g.Q() + q
                                : ((n * g.P() + p) * g.Q() + q) * g.k + k;
}

namespace {

// The output positions o in [0, out) that read input position o * stride - pad + f inside
// [0, in): [*lo, *hi).
void ValidRange(int64_t out, int64_t in, int64_t stride, int64_t pad, int64_t f, int64_t* lo,
                int64_t* hi) {
  // o * stride >= pad - f  and  o * stride <= in - 1 + pad - f
  const int64_t a = pad - f, b = in - 1 + pad - f;
  *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
  *hi = b < 0 ? 0 : std::min(out, b / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

template <typename Acc>
void ConvFwdUnits(const ConvShape& g, ConvLayout l, const float* x, const float* w, float* y,
                  int64_t u0, int64_t u1) {
  const int64_t P = g.P(), Q = g.Q();
  // Element strides of x along w and of y along q in this layout.
  const int64_t xsw = l == ConvLayout::kNchw ? 1 : g.c;
  std::vector<Acc> acc(static_cast<size_t>(P * Q));
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t n = u / g.k, k = u % g.k;
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t c = 0; c < g.c; ++c) {
      for (int64_t r = 0; r < g.r; ++r) {
        int64_t p0, p1;
        ValidRange(P, g.h, g.stride, g.pad, r, &p0, &p1);
        for (int64_t s = 0; s < g.s; ++s) {
          int64_t q0, q1;
          ValidRange(Q, g.w, g.stride, g.pad, s, &q0, &q1);
          const Acc wv = w[ConvWIndex(g, l, k, c, r, s)];
          for (int64_t p = p0; p < p1; ++p) {
            const float* xr = x + ConvXIndex(g, l, n, c, p * g.stride - g.pad + r, 0);
            Acc* ar = acc.data() + p * Q;
            const int64_t step = g.stride * xsw, off = (s - g.pad) * xsw;
            for (int64_t q = q0; q < q1; ++q) ar[q] += wv * static_cast<Acc>(xr[q * step + off]);
          }
        }
      }
    }
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t q = 0; q < Q; ++q) {
        y[ConvYIndex(g, l, n, k, p, q)] = static_cast<float>(acc[p * Q + q]);
      }
    }
  }
}

template <typename Acc>
void ConvBwdDataUnits(const ConvShape& g, ConvLayout l, const float* dy, const float* w, float* dx,
                      int64_t u0, int64_t u1) {
  const int64_t P = g.P(), Q = g.Q();
  const int64_t ysq = l == ConvLayout::kNchw ? 1 : g.k;  // dy's element stride along q
  std::vector<Acc> acc(static_cast<size_t>(g.h * g.w));
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t n = u / g.c, c = u % g.c;
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t k = 0; k < g.k; ++k) {
      for (int64_t r = 0; r < g.r; ++r) {
        int64_t p0, p1;
        ValidRange(P, g.h, g.stride, g.pad, r, &p0, &p1);
        for (int64_t s = 0; s < g.s; ++s) {
          int64_t q0, q1;
          ValidRange(Q, g.w, g.stride, g.pad, s, &q0, &q1);
          const Acc wv = w[ConvWIndex(g, l, k, c, r, s)];
          for (int64_t p = p0; p < p1; ++p) {
            Acc* ar = acc.data() + (p * g.stride - g.pad + r) * g.w + (s - g.pad);
            const float* dyr = dy + ConvYIndex(g, l, n, k, p, 0);
            for (int64_t q = q0; q < q1; ++q) {
              ar[q * g.stride] += wv * static_cast<Acc>(dyr[q * ysq]);
            }
          }
        }
      }
    }
    for (int64_t h = 0; h < g.h; ++h) {
      for (int64_t x = 0; x < g.w; ++x) {
        dx[ConvXIndex(g, l, n, c, h, x)] = static_cast<float>(acc[h * g.w + x]);
      }
    }
  }
}

template <typename Acc>
void ConvBwdFilterUnits(const ConvShape& g, ConvLayout l, const float* x, const float* dy,
                        float* dw, int64_t u0, int64_t u1) {
  const int64_t P = g.P(), Q = g.Q();
  // Element strides along q of dy, and along w of x (times the stride: one q step).
  const int64_t ysq = l == ConvLayout::kNchw ? 1 : g.k, xsw = l == ConvLayout::kNchw ? 1 : g.c;
  const int64_t xstep = g.stride * xsw;
  std::vector<Acc> acc(static_cast<size_t>(g.r * g.s));
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t k = u / g.c, c = u % g.c;
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t r = 0; r < g.r; ++r) {
        int64_t p0, p1;
        ValidRange(P, g.h, g.stride, g.pad, r, &p0, &p1);
        for (int64_t s = 0; s < g.s; ++s) {
          int64_t q0, q1;
          ValidRange(Q, g.w, g.stride, g.pad, s, &q0, &q1);
          Acc a = acc[r * g.s + s];
          for (int64_t p = p0; p < p1; ++p) {
            const int64_t h = p * g.stride - g.pad + r;
            const float* dyr = dy + ConvYIndex(g, l, n, k, p, 0);
            const float* xr = x + ConvXIndex(g, l, n, c, h, 0) + (s - g.pad) * xsw;
            for (int64_t q = q0; q < q1; ++q) {
              a += static_cast<Acc>(dyr[q * ysq]) * static_cast<Acc>(xr[q * xstep]);
            }
          }
          acc[r * g.s + s] = a;
        }
      }
    }
    for (int64_t r = 0; r < g.r; ++r) {
      for (int64_t s = 0; s < g.s; ++s) {
        dw[ConvWIndex(g, l, k, c, r, s)] = static_cast<float>(acc[r * g.s + s]);
      }
    }
  }
}

template <typename Acc>
void SdpaRows(int64_t S, int64_t D, bool causal, const float* q, const float* k, const float* v,
              float* o, int64_t row0, int64_t row1) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  std::vector<float> kt(static_cast<size_t>(S * D));  // K^T of the current head: [D, S]
  std::vector<Acc> sc(static_cast<size_t>(S)), acc(static_cast<size_t>(D));
  std::vector<float> pr(static_cast<size_t>(S));
  int64_t head = -1;
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t bh = row / S, i = row % S;
    const float* kh = k + bh * S * D;
    const float* vh = v + bh * S * D;
    if (bh != head) {
      head = bh;
      for (int64_t j = 0; j < S; ++j) {
        for (int64_t d = 0; d < D; ++d) kt[d * S + j] = kh[j * D + d];
      }
    }
    const int64_t len = causal ? i + 1 : S;
    const float* qi = q + row * D;
    std::fill(sc.begin(), sc.begin() + len, Acc(0));
    for (int64_t d = 0; d < D; ++d) {
      const Acc qd = qi[d];
      const float* kd = kt.data() + d * S;
      for (int64_t j = 0; j < len; ++j) sc[j] += qd * static_cast<Acc>(kd[j]);
    }
    float mx = -INFINITY;
    for (int64_t j = 0; j < len; ++j) {
      pr[j] = static_cast<float>(sc[j]) * scale;
      mx = std::max(mx, pr[j]);
    }
    Acc sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      pr[j] = std::exp(pr[j] - mx);
      sum += pr[j];
    }
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (int64_t j = 0; j < len; ++j) {
      const Acc pj = pr[j];
      const float* vj = vh + j * D;
      for (int64_t d = 0; d < D; ++d) acc[d] += pj * static_cast<Acc>(vj[d]);
    }
    for (int64_t d = 0; d < D; ++d) o[row * D + d] = static_cast<float>(acc[d] / sum);
  }
}

}  // namespace

void Conv2dFwd(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* x,
               const float* w, float* y) {
  ParallelRows(g.n * g.k, cfg.threads, [&](int64_t u0, int64_t u1) {
    if (cfg.fp64_accumulate) {
      ConvFwdUnits<double>(g, l, x, w, y, u0, u1);
    } else {
      ConvFwdUnits<float>(g, l, x, w, y, u0, u1);
    }
  });
}

void Conv2dBwdData(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* dy,
                   const float* w, float* dx) {
  ParallelRows(g.n * g.c, cfg.threads, [&](int64_t u0, int64_t u1) {
    if (cfg.fp64_accumulate) {
      ConvBwdDataUnits<double>(g, l, dy, w, dx, u0, u1);
    } else {
      ConvBwdDataUnits<float>(g, l, dy, w, dx, u0, u1);
    }
  });
}

void Conv2dBwdFilter(const CpuConfig& cfg, const ConvShape& g, ConvLayout l, const float* x,
                     const float* dy, float* dw) {
  ParallelRows(g.k * g.c, cfg.threads, [&](int64_t u0, int64_t u1) {
    if (cfg.fp64_accumulate) {
      ConvBwdFilterUnits<double>(g, l, x, dy, dw, u0, u1);
    } else {
      ConvBwdFilterUnits<float>(g, l, x, dy, dw, u0, u1);
    }
  });
}

void Sdpa(const CpuConfig& cfg, int64_t b, int64_t h, int64_t s, int64_t d, bool causal,
          const float* q, const float* k, const float* v, float* o) {
  ParallelRows(b * h * s, cfg.threads, [&](int64_t r0, int64_t r1) {
    if (cfg.fp64_accumulate) {
      SdpaRows<double>(s, d, causal, q, k, v, o, r0, r1);
    } else {
      SdpaRows<float>(s, d, causal, q, k, v, o, r0, r1);
    }
  });
}

}  // namespace cutover::cpu
