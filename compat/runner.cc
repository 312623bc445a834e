#include "compat/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "compat/case_dump.h"
#include "compat/cpu_kernels.h"
#include "compat/philox.h"
#include "core/sha256.h"

namespace cutover {
namespace {

constexpr uint32_t kSampleStream = 0x53414d50;  // "SAMP"

}  // namespace

std::vector<uint64_t> SamplePositions(const CaseSpec& spec, uint64_t n, size_t count) {
  std::vector<uint64_t> pos;
  if (n <= count) {
    for (uint64_t i = 0; i < n; ++i) pos.push_back(i);
    return pos;
  }
  const uint64_t key = PhiloxKeyForId(spec.Id());
  for (size_t j = 0; j < count; ++j) {
    uint64_t w = (static_cast<uint64_t>(PhiloxWord(key, kSampleStream, 2 * j)) << 32) |
                 PhiloxWord(key, kSampleStream, 2 * j + 1);
    pos.push_back(w % n);
  }
  return pos;
}

Calibration CalibrateCpu(const cpu::CpuConfig& cfg, bool reference_only) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Calibration cal;
  cal.measured = true;
  cpu::CpuConfig c = cfg;
  c.fp64_accumulate = false;
  const int64_t n = int64_t{1} << 24;  // 64 MiB of floats
  std::vector<float> src(static_cast<size_t>(n), 1.0f), dst(static_cast<size_t>(n), 0.0f);
  cal.copy_bytes = 8.0 * static_cast<double>(n);
  double best = 0;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    cpu::Copy(c, n, src.data(), dst.data());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, cal.copy_bytes / s / 1e9);
  }
  cal.copy_gbps = best;
  const int64_t m = 768;
  cal.gemm_shape = {m, m, m};
  std::vector<float> a(static_cast<size_t>(m * m)), b(a.size()), out(a.size());
  FillNormal(PhiloxKeyForId("calibration/gemm"), 0, 0, 1, a.data(), a.size());
  FillNormal(PhiloxKeyForId("calibration/gemm"), 1, 0, 1, b.data(), b.size());
  const CalibrationGemm gemm = SelectCalibrationGemm(c, reference_only);
  cal.gemm_implementation = gemm.implementation;
  gemm.run(m, m, m, a.data(), b.data(), out.data());  // warm the library's threads and buffers
  best = 0;
  for (int i = 0; i < 3; ++i) {
    auto t0 = Clock::now();
    gemm.run(m, m, m, a.data(), b.data(), out.data());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, 2.0 * m * m * m / s / 1e9);
  }
  cal.gemm_gflops = best;
  cal.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return cal;
}

double FractionOfCeiling(const Calibration& cal, const CaseTiming& timing, std::string_view dtype) {
  if (!cal.measured || timing.rate <= 0) return 0;
  const bool tensor_core = dtype != "fp32" && dtype != "u8";
  double gemm = cal.gemm_gflops;
  if (tensor_core && cal.gemm_bf16_gflops > 0) gemm = cal.gemm_bf16_gflops;
  const double ceiling = timing.rate_unit == "GB/s"      ? cal.copy_gbps
                         : timing.rate_unit == "GFLOP/s" ? gemm
                                                         : 0;
  return ceiling > 0 ? timing.rate / ceiling : 0;
}

std::string BuildType() {
#ifdef CUTOVER_BUILD_TYPE
  const std::string t = CUTOVER_BUILD_TYPE;
  return t.empty() ? "unspecified" : t;
#else
  return "unspecified";
#endif
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double x = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(x));
  size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (x - lo) * (v[hi] - v[lo]);
}

void SummarizeOutput(const CaseSpec& spec, const float* out, size_t n, size_t samples,
                     const std::function<double(size_t)>& truth, CaseResult* r) {
  r->output_count = n;
  r->digest = HexEncode(Sha256Digest(out, n * sizeof(float)));
  r->tiles.clear();
  const size_t per = (n + kRecordTiles - 1) / kRecordTiles;
  for (int t = 0; t < kRecordTiles; ++t) {
    size_t b = std::min(n, t * per), e = std::min(n, b + per);
    r->tiles.push_back(HexEncode(Sha256Digest(out + b, (e - b) * sizeof(float))).substr(0, 16));
  }
  r->nan_count = r->inf_count = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(out[i])) ++r->nan_count;
    if (std::isinf(out[i])) ++r->inf_count;
  }
  r->sample_index = SamplePositions(spec, n, samples);
  r->sample_value.clear();
  r->sample_truth.clear();
  for (uint64_t i : r->sample_index) {
    r->sample_value.push_back(out[i]);
    r->sample_truth.push_back(truth(i));
  }
}

void SummarizeTiming(const OpDescriptor& op, CaseResult* r) {
  r->timing.median_s = Quantile(r->timing.reps_s, 0.5);
  r->timing.p10_s = Quantile(r->timing.reps_s, 0.1);
  r->timing.p90_s = Quantile(r->timing.reps_s, 0.9);
  r->timing.rate_unit = op.rate_unit;
  const double work = op.rate_unit == "GFLOP/s" ? r->flops : r->bytes;
  r->timing.rate = r->timing.median_s > 0 ? work / r->timing.median_s / 1e9 : 0;
}

CaseResult RunCpuCase(const OpDescriptor& op, const CaseSpec& spec, const RunConfig& cfg) {
  CaseResult r;
  r.spec = spec;
  r.id = spec.Id();
  if (!op.on_cpu || op.run_cpu == nullptr) {
    r.status = "n/a";
    r.error = op.name + " has no meaning on the cpu backend";
    return r;
  }
  r.status = "ok";
  r.reduction_length = op.reduction_length(spec);
  r.flops = op.flops(spec);
  r.bytes = op.bytes(spec);
  const CpuKernel kernel = SelectCpuKernel(op, spec, cfg.cpu, cfg.reference_only);
  r.implementation = kernel.implementation;
  const Tensors in = op.make_inputs(spec);
  const size_t n = op.output_size(spec);
  std::vector<float> first(n), out(n);
  auto fail = [&r](const Status& s) {
    r.status = "error";
    r.error = s.message();
    r.timing = {};
    return r;
  };
  if (Status s = kernel.run(in, first.data()); !s.ok()) return fail(s);
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < std::max(1, cfg.reps); ++i) {
    auto t0 = Clock::now();
    if (Status s = kernel.run(in, out.data()); !s.ok()) return fail(s);
    r.timing.reps_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  r.deterministic = std::memcmp(first.data(), out.data(), n * sizeof(float)) == 0;
  SummarizeOutput(
      spec, first.data(), n, cfg.samples, [&](size_t i) { return op.truth(spec, in, i); }, &r);
  SummarizeTiming(op, &r);
  if (!cfg.dump_dir.empty()) {
    CaseDump dump{&in, first.data(), n, r.sample_index, r.sample_truth, r.implementation};
    if (Status s = WriteCaseDump(cfg.dump_dir, op, spec, dump); !s.ok()) return fail(s);
  }
  return r;
}

}  // namespace cutover
