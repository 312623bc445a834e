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

}  // namespace cutover::cpu
