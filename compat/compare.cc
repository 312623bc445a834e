#include "compat/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include "compat/dtype.h"
#include "compat/philox.h"
#include "compat/runner.h"
#include "core/json.h"

namespace cutover {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

double Rms(const std::vector<double>& v) {
  double s = 0;
  size_t n = 0;
  for (double x : v) {
    if (std::isfinite(x)) s += x * x, ++n;
  }
  return n ? std::sqrt(s / n) : 0;
}

// max_i |x_i - r_i| / (atol + rtol * max(|r_i|, floor)); infinity on a NaN mismatch.
double Excess(const std::vector<double>& x, const std::vector<double>& r, const Tolerance& t,
              double floor) {
  double q = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(r[i])) {
      if (std::isnan(x[i]) != std::isnan(r[i])) return INFINITY;
      continue;
    }
    const double d = std::fabs(x[i] - r[i]);
    if (d == 0) continue;
    q = std::max(q, d / (t.atol + t.rtol * std::max(std::fabs(r[i]), floor)));
  }
  return q;
}

// Maps a float's bits to integers that order like the values, +0 and -0 both to 0.
int64_t OrderedFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  const int64_t mag = u & 0x7fffffffu;
  return (u >> 31) ? -mag : mag;
}

// The same for doubles, as a long double (the span of two 63-bit magnitudes).
long double OrderedDouble(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof(u));
  const long double mag = static_cast<long double>(u & 0x7fffffffffffffffull);
  return (u >> 63) ? -mag : mag;
}

// ULP distance in `dtype` between x and r rounded to it; NaN for dtypes not measured here.
double UlpDistance(double x, double r, std::string_view dtype) {
  if (dtype == "fp32") {
    const float xf = static_cast<float>(x), rf = static_cast<float>(r);
    return static_cast<double>(std::llabs(OrderedFloat(xf) - OrderedFloat(rf)));
  }
  if (dtype == "fp64") return static_cast<double>(std::fabs(OrderedDouble(x) - OrderedDouble(r)));
  if (dtype == "u8" || dtype == "int32") return std::fabs(x - std::nearbyint(r));
  if (dtype == "fp16" || dtype == "bf16") {
    const FloatFormat f = FormatOf(dtype);
    const float xf = RoundToFormat(static_cast<float>(x), f);
    const float rf = RoundToFormat(static_cast<float>(r), f);
    return std::fabs(FormatPosition(xf, f) - FormatPosition(rf, f));
  }
  return std::numeric_limits<double>::quiet_NaN();
}

void CompareSpeed(const CaseResult& s, const CaseResult& t, CaseComparison* c) {
  if (s.timing.reps_s.empty() || t.timing.reps_s.empty() || s.timing.median_s <= 0 ||
      t.timing.median_s <= 0) {
    return;
  }
  c->speed_ratio = s.timing.median_s / t.timing.median_s;
  // The interval of the time ratio (target / source), turned into the speed ratio's.
  double time_lo = 0, time_hi = 0;
  BootstrapRatio(s.timing.reps_s, t.timing.reps_s, PhiloxKeyForId(c->id), &time_lo, &time_hi);
  c->speed_lo = time_hi > 0 ? 1 / time_hi : 0;
  c->speed_hi = time_lo > 0 ? 1 / time_lo : INFINITY;
  c->speed = c->speed_lo > 1 && c->speed_ratio > 1 + kSpeedMinEffect       ? SpeedVerdict::kFaster
             : c->speed_hi < 1 && c->speed_ratio < 1 / (1 + kSpeedMinEffect) ? SpeedVerdict::kSlower
                                                                            : SpeedVerdict::kSame;
  auto spread = [](const CaseTiming& x) {
    return x.median_s > 0 ? (x.p90_s - x.p10_s) / x.median_s : 0.0;
  };
  c->unstable_timing = spread(s.timing) > kUnstableSpread || spread(t.timing) > kUnstableSpread;
}

// The stability verdict of a case both sides ran (compat/stability.h), with the likely cause of
// a noisier target.
void AddStability(const CaseResult& s, const CaseResult& t, const CompatRecord& source,
                  const CompatRecord& target, CaseComparison* c) {
  if (s.status != "ok" || t.status != "ok") return;
  c->stability = CompareStability(s.timing.reps_s, t.timing.reps_s, PhiloxKeyForId(c->id) ^ 0x57ab);
  if (c->stability.verdict == StabilityVerdict::kNoisier) {
    c->stability.cause = StabilityCause(s, t, source, target);
  }
}

CaseComparison CompareCase(const CaseResult& s, const CaseResult& t) {
  CaseComparison c;
  c.id = s.id;
  c.op = s.spec.op;
  if (s.status == "missing" || t.status == "missing") {
    c.verdict = Verdict::kMissing;
    c.reason = s.status == "missing" ? "source: " + s.error : "target: " + t.error;
    return c;
  }
  if (s.status == "n/a" || t.status == "n/a") {
    c.verdict = Verdict::kNotApplicable;
    c.reason = s.status == "n/a" ? "source: " + s.error : "target: " + t.error;
    return c;
  }
  if (s.status != "ok" || t.status != "ok") {
    c.verdict = Verdict::kBroken;
    c.reason = s.status != "ok" ? "source failed: " + s.error : "target failed: " + t.error;
    return c;
  }
  c.source_nan = s.nan_count;
  c.source_inf = s.inf_count;
  c.target_nan = t.nan_count;
  c.target_inf = t.inf_count;
  if (t.nan_count > s.nan_count || t.inf_count > s.inf_count) {
    c.verdict = Verdict::kBroken;
    c.reason = "target has " + std::to_string(t.nan_count) + " NaN and " +
               std::to_string(t.inf_count) + " Inf outputs, source " + std::to_string(s.nan_count) +
               " and " + std::to_string(s.inf_count);
    return c;
  }
  CompareSpeed(s, t, &c);
  c.source_fraction = s.timing.fraction_of_ceiling;
  c.target_fraction = t.timing.fraction_of_ceiling;
  if (s.sample_index == t.sample_index && s.sample_value.size() == s.sample_index.size() &&
      t.sample_value.size() == t.sample_index.size() &&
      t.sample_truth.size() == t.sample_index.size() &&
      s.sample_truth.size() == s.sample_index.size()) {
    c.has_error_stats = true;
    // ULPs of the output's dtype (a fp8 gemm's bf16, an int8 gemm's int32).
    const std::string od(OutputDtype(s.spec.dtype));
    c.target_vs_source = MeasureError(t.sample_value, s.sample_value, od);
    c.target_vs_truth = MeasureError(t.sample_value, t.sample_truth, od);
    c.source_vs_truth = MeasureError(s.sample_value, s.sample_truth, od);
  }
  for (size_t i = 0; i < std::min(s.tiles.size(), t.tiles.size()); ++i) {
    if (s.tiles[i] != t.tiles[i]) ++c.differing_tiles;
  }
  if (s.digest == t.digest && s.sample_value.size() == t.sample_value.size() &&
      std::equal(s.sample_value.begin(), s.sample_value.end(), t.sample_value.begin(),
                 [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); })) {
    c.verdict = Verdict::kIdentical;
    c.reason = "same output bits";
    if (!t.deterministic) c.reason += " (but the target was not deterministic run to run)";
    return c;
  }
  if (s.sample_index != t.sample_index || s.output_count != t.output_count) {
    c.verdict = Verdict::kBroken;
    c.reason = "the sampled positions do not line up (different output size or sampling)";
    return c;
  }
  const Tolerance tol = ToleranceFor(s.spec.dtype, s.reduction_length);
  c.rtol = tol.rtol;
  c.atol = tol.atol;
  const double floor = Rms(s.sample_truth);
  c.q_target_source = Excess(t.sample_value, s.sample_value, tol, floor);
  c.q_source_truth = Excess(s.sample_value, s.sample_truth, tol, floor);
  c.q_target_truth = Excess(t.sample_value, t.sample_truth, tol, floor);
  const std::string where =
      std::to_string(c.differing_tiles) + " of " + std::to_string(s.tiles.size()) + " tiles differ";
  if (c.q_target_source <= 1) {
    c.verdict = Verdict::kEquivalent;
    c.reason =
        "within tolerance of the source (" + Fmt("%.3g", c.q_target_source) + " of it); " + where;
  } else if (c.q_target_truth <= 1) {
    c.verdict = Verdict::kDrift;
    c.reason = "differs from the source (" + Fmt("%.3g", c.q_target_source) +
               " x tolerance) but within tolerance of float64 truth (" +
               Fmt("%.3g", c.q_target_truth) + "); " + where;
  } else if (c.q_target_truth > c.q_source_truth) {
    c.verdict = Verdict::kRegression;
    c.reason = "target is " + Fmt("%.3g", c.q_target_truth) +
               " x tolerance from float64 truth, source " + Fmt("%.3g", c.q_source_truth) + "; " +
               where;
  } else {
    c.verdict = Verdict::kDrift;
    c.reason = "both sides beyond tolerance of truth, target no further (" +
               Fmt("%.3g", c.q_target_truth) + " vs " + Fmt("%.3g", c.q_source_truth) + ")";
  }
  if (!t.deterministic) c.reason += "; target not deterministic run to run";
  return c;
}

}  // namespace

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kIdentical:
      return "identical";
    case Verdict::kEquivalent:
      return "equivalent";
    case Verdict::kDrift:
      return "drift";
    case Verdict::kRegression:
      return "regression";
    case Verdict::kBroken:
      return "broken";
    case Verdict::kMissing:
      return "missing";
    case Verdict::kNotApplicable:
      return "n/a";
  }
  return "?";
}

std::string_view SpeedVerdictName(SpeedVerdict v) {
  switch (v) {
    case SpeedVerdict::kFaster:
      return "faster";
    case SpeedVerdict::kSame:
      return "same";
    case SpeedVerdict::kSlower:
      return "slower";
    case SpeedVerdict::kUnknown:
      return "unknown";
  }
  return "?";
}

bool Comparison::failed() const {
  return Count(Verdict::kRegression) > 0 || Count(Verdict::kBroken) > 0 ||
         (fail_on_slower && CountSpeed(SpeedVerdict::kSlower) > 0);
}

int Comparison::CountSpeed(SpeedVerdict v) const {
  return static_cast<int>(std::count_if(cases.begin(), cases.end(),
                                        [v](const CaseComparison& c) { return c.speed == v; }));
}

ErrorStats MeasureError(const std::vector<double>& x, const std::vector<double>& r,
                        std::string_view dtype) {
  ErrorStats e;
  const bool has_ulp = !std::isnan(UlpDistance(0, 0, dtype));
  if (!has_ulp) e.max_ulp = std::numeric_limits<double>::quiet_NaN();
  double sum_rel = 0, diff2 = 0, ref2 = 0;
  for (size_t i = 0; i < x.size() && i < r.size(); ++i) {
    if (std::isnan(x[i])) ++e.nan;
    if (std::isinf(x[i])) ++e.inf;
    if (!std::isfinite(x[i]) || !std::isfinite(r[i])) continue;
    ++e.compared;
    const double d = std::fabs(x[i] - r[i]);
    const double rel = d == 0 ? 0 : r[i] == 0 ? INFINITY : d / std::fabs(r[i]);
    e.max_rel = std::max(e.max_rel, rel);
    sum_rel += rel;
    if (has_ulp) e.max_ulp = std::max(e.max_ulp, UlpDistance(x[i], r[i], dtype));
    diff2 += d * d;
    ref2 += r[i] * r[i];
  }
  if (e.compared > 0) e.mean_rel = sum_rel / static_cast<double>(e.compared);
  e.normwise = diff2 == 0 ? 0 : ref2 == 0 ? INFINITY : std::sqrt(diff2) / std::sqrt(ref2);
  return e;
}

Status CheckComparable(const CompatRecord& source, const CompatRecord& target,
                       const std::string& source_name, const std::string& target_name) {
  if (source.op_table_version != target.op_table_version) {
    return Status::FailedPrecondition(
        "compat compare: " + source_name + " has op table version " +
        std::to_string(source.op_table_version) + ", " + target_name + " " +
        std::to_string(target.op_table_version) +
        ": cases of different op tables are not comparable (record both with the same cutover)");
  }
  std::map<std::string, const CaseResult*> in_target;
  for (const CaseResult& t : target.cases) in_target[t.id] = &t;
  for (const CaseResult& s : source.cases) {
    auto it = in_target.find(s.id);
    if (it == in_target.end() || s.status != "ok" || it->second->status != "ok") continue;
    const CaseResult& t = *it->second;
    auto num = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      return std::string(buf);
    };
    std::string what;
    if (s.output_count != t.output_count) {
      what = "output count " + std::to_string(s.output_count) + " vs " +
             std::to_string(t.output_count);
    } else if (s.reduction_length != t.reduction_length) {
      what = "reduction length " + std::to_string(s.reduction_length) + " vs " +
             std::to_string(t.reduction_length);
    } else if (s.flops != t.flops) {
      what = "flops " + num(s.flops) + " vs " + num(t.flops);
    } else if (s.bytes != t.bytes) {
      what = "bytes " + num(s.bytes) + " vs " + num(t.bytes);
    }
    if (!what.empty()) {
      return Status::FailedPrecondition("compat compare: case " + s.id +
                                        " is defined differently in " + source_name + " and " +
                                        target_name + " (" + what + ")");
    }
  }
  return Status::Ok();
}

bool SetupDifference::Explains(const std::string& op, const std::string& dtype) const {
  if (!cases.empty()) return std::find(cases.begin(), cases.end(), op + "/" + dtype) != cases.end();
  if (fp32_only && dtype != "fp32") return false;
  if (ops.empty()) return true;
  for (const std::string& p : ops) {
    if (op.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

// The host differences the fingerprints embedded in two records show (CPU, glibc, GPUs, driver,
// CUDA toolkit, cuBLAS, cuDNN, NCCL, TF32 and cuBLAS environment), each through `differ` (see
// SetupDifferences). The GPU model is named here only when the records hold no device.
template <typename Differ>
void FingerprintDifferences(const nlohmann::json& fs, const nlohmann::json& ft, bool both_devices,
                            bool run_time_override, Differ& differ) {
  // A scalar at `ptr` as text, "" when absent or not a scalar.
  auto text = [](const nlohmann::json& fp, const std::string& ptr) -> std::string {
    const nlohmann::json* v = FindJson(fp, ptr);
    if (v == nullptr) return "";
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number() || v->is_boolean()) return v->dump();
    return "";
  };
  // The values at `field` of every element of the array at `ptr`, joined with ", ".
  auto each = [](const nlohmann::json& fp, const std::string& ptr, const std::string& field) {
    std::string out;
    const nlohmann::json* a = FindJson(fp, ptr);
    if (a == nullptr || !a->is_array()) return out;
    for (const nlohmann::json& e : *a) {
      if (!e.is_object() || !e.contains(field)) continue;
      const nlohmann::json& v = e[field];
      out += (out.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
    }
    return out;
  };
  // The architecture generations ("sm_8x") of the compute capabilities, joined.
  auto generations = [&each](const nlohmann::json& fp) {
    std::string caps = each(fp, "/gpus", "compute_capability"), out;
    size_t at = 0;
    while (at < caps.size()) {
      size_t end = caps.find(", ", at);
      if (end == std::string::npos) end = caps.size();
      const std::string cc = caps.substr(at, end - at);
      const std::string major = cc.substr(0, cc.find('.'));
      if (!major.empty()) out += (out.empty() ? "sm_" : ", sm_") + major + "x";
      at = end + 2;
    }
    return out;
  };
  // The versions of the libraries named `name` (exactly), joined.
  auto library = [](const nlohmann::json& fp, const std::string& name) {
    std::string out;
    const nlohmann::json* a = FindJson(fp, "/libraries");
    if (a == nullptr || !a->is_array()) return out;
    std::set<std::string> versions;
    for (const nlohmann::json& e : *a) {
      if (!e.is_object() || e.value("name", nlohmann::json()) != name) continue;
      const nlohmann::json v = e.value("version", nlohmann::json());
      versions.insert(v.is_string() ? v.get<std::string>() : "unknown");
    }
    for (const std::string& v : versions) out += (out.empty() ? "" : ", ") + v;
    return out;
  };
  const std::string arch_why =
      "another GPU architecture runs other kernels (tile shapes, summation order, tensor-core "
      "accumulation)";
  differ("CPU", text(fs, "/cpu/model"), text(ft, "/cpu/model"));
  differ("glibc", text(fs, "/os/glibc"), text(ft, "/os/glibc"),
         "another libm may round exp and erf differently", {"softmax", "gelu", "silu", "sdpa"});
  if (!both_devices) {  // else the "device" line names the GPU each run used
    differ("GPU", each(fs, "/gpus", "name"), each(ft, "/gpus", "name"),
           "another GPU model may have another SM count or architecture");
  }
  differ("compute capability", each(fs, "/gpus", "compute_capability"),
         each(ft, "/gpus", "compute_capability"), arch_why);
  differ("GPU generation", generations(fs), generations(ft), arch_why);
  differ("driver", text(fs, "/driver/version"), text(ft, "/driver/version"));
  differ("driver CUDA", text(fs, "/driver/cuda_version"), text(ft, "/driver/cuda_version"));
  differ("CUDA toolkit", each(fs, "/cuda/toolkits", "version"),
         each(ft, "/cuda/toolkits", "version"));
  for (const char* lib : {"cublas", "cublasLt"}) {
    differ(lib, library(fs, lib), library(ft, lib),
           "another cuBLAS may pick other GEMM kernels (summation order, split-K)", {"gemm"});
  }
  differ("cudnn", library(fs, "cudnn"), library(ft, "cudnn"),
         "another cuDNN may pick other convolution and attention engines", {"conv2d", "sdpa"});
  differ("nccl", library(fs, "nccl"), library(ft, "nccl"),
         "another NCCL may reduce in another order",
         {"all_reduce", "reduce_scatter", "all_gather", "broadcast"});
  for (const char* var : {"NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"}) {
    if (run_time_override && std::string_view(var) == "NVIDIA_TF32_OVERRIDE") continue;
    differ(var, text(fs, std::string("/env/") + var), text(ft, std::string("/env/") + var),
           "it switches TF32 math for fp32 GEMM and convolution", {"gemm", "conv2d", "sdpa"}, true);
  }
  differ("CUBLAS_WORKSPACE_CONFIG", text(fs, "/env/CUBLAS_WORKSPACE_CONFIG"),
         text(ft, "/env/CUBLAS_WORKSPACE_CONFIG"),
         "the cuBLAS workspace size limits which GEMM kernels may run", {"gemm"});
}

std::vector<SetupDifference> SetupDifferences(const CompatRecord& source,
                                              const CompatRecord& target,
                                              std::vector<std::string>* notes) {
  std::vector<SetupDifference> out;
  const std::vector<std::string> kGpuKernels = {"gemm", "conv2d", "sdpa"};
  auto differ = [&](const std::string& what, const std::string& a, const std::string& b,
                    const std::string& why = "", std::vector<std::string> ops = {},
                    bool fp32_only = false) {
    if (a != b) {
      out.push_back(
          {what + " " + (a.empty() ? "unknown" : a) + " vs " + (b.empty() ? "unknown" : b), why,
           std::move(ops), fp32_only});
    }
  };
  differ("backend", source.backend, target.backend,
         "another backend runs other kernels (summation order, fused multiply-add, libm)");
  differ("accumulate", source.accumulate, target.accumulate,
         "sums are rounded at another precision");
  for (SetupDifference& d : ImplementationDifferences(source, target)) out.push_back(std::move(d));
  if (!source.build_type.empty() && !target.build_type.empty()) {
    differ("build type", source.build_type, target.build_type,
           "another optimisation level may contract multiply-adds differently");
  }
  // The device a cuda run recorded (compat/record.h "device"): name, SM count, loaded libraries
  // and the TF32 setting at run time. Older cuda records have the device but not the top-level
  // sm_count and tf32_allowed, so those fall back to it.
  auto device = [](const CompatRecord& r, const char* key) -> std::string {
    if (!r.device.is_object() || !r.device.contains(key)) return "";
    const nlohmann::json& v = r.device[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  auto device_libs = [](const CompatRecord& r) -> std::string {
    const nlohmann::json* v = FindJson(r.device, "/libraries/summary");
    return v != nullptr && v->is_string() ? v->get<std::string>() : "";
  };
  auto sm_count = [](const CompatRecord& r) -> int {
    if (r.sm_count >= 0) return r.sm_count;
    const nlohmann::json* v = FindJson(r.device, "/sm_count");
    return v != nullptr && v->is_number_integer() ? v->get<int>() : -1;
  };
  // The plugin runs fp32 with TF32 off whenever it records its device's tf32 object.
  auto tf32_allowed = [](const CompatRecord& r) -> int {
    if (r.tf32_allowed >= 0) return r.tf32_allowed;
    return FindJson(r.device, "/tf32") != nullptr ? 0 : -1;
  };
  const std::string tf32_why =
      "with TF32 allowed, fp32 GEMM and convolution round their inputs to 10 mantissa bits";
  const bool both_devices = source.device.is_object() && target.device.is_object();
  if (both_devices) {
    differ("device", device(source, "name"), device(target, "name"),
           "another GPU model may have another SM count or architecture");
  }
  auto yes_no = [](int v) { return v < 0 ? std::string() : v ? "allowed" : "disabled"; };
  if (tf32_allowed(source) >= 0 && tf32_allowed(target) >= 0) {
    differ("TF32", yes_no(tf32_allowed(source)), yes_no(tf32_allowed(target)), tf32_why,
           kGpuKernels, true);
  }
  if (sm_count(source) >= 0 && sm_count(target) >= 0) {
    differ("SM count", std::to_string(sm_count(source)), std::to_string(sm_count(target)),
           "cuBLAS and cuDNN choose kernels and split-K by SM count, which changes the "
           "summation order",
           kGpuKernels);
  }
  const std::vector<std::string> kLibraryOps = {
      "gemm", "conv2d", "sdpa", "all_reduce", "all_gather", "reduce_scatter", "broadcast"};
  // The run-time TF32 override of the device object, when both records have it, replaces the
  // fingerprint's (collected by probe, perhaps in another environment).
  bool run_time_override = false;
  if (both_devices) {
    differ("device libraries", device_libs(source), device_libs(target),
           "other loaded cuBLAS, cuDNN or NCCL versions may pick other kernels", kLibraryOps);
    const nlohmann::json* so = FindJson(source.device, "/tf32/NVIDIA_TF32_OVERRIDE");
    const nlohmann::json* to = FindJson(target.device, "/tf32/NVIDIA_TF32_OVERRIDE");
    run_time_override = so != nullptr && to != nullptr;
    differ("NVIDIA_TF32_OVERRIDE at run time", so != nullptr ? so->dump() : "",
           to != nullptr ? to->dump() : "", "it switches TF32 math for fp32 GEMM and convolution",
           kGpuKernels, true);
  }
  auto lacks = [&](const CompatRecord& r) {
    return r.backend == "cuda" && (sm_count(r) < 0 || tf32_allowed(r) < 0);
  };
  if (lacks(source) || lacks(target)) {
    notes->push_back(
        "the records do not hold the SM count or whether TF32 was allowed; cuBLAS results are "
        "bitwise reproducible only on the same architecture and SM count");
  }
  const nlohmann::json &fs = source.fingerprint, &ft = target.fingerprint;
  if (!fs.is_object() || !ft.is_object()) {
    notes->push_back("a record embeds no fingerprint: host differences are unknown");
    return out;
  }
  FingerprintDifferences(fs, ft, both_devices, run_time_override, differ);
  return out;
}

void DescribeSetupDifferences(const CompatRecord& source, const CompatRecord& target,
                              std::vector<std::string>* differences,
                              std::vector<std::string>* notes) {
  for (const SetupDifference& d : SetupDifferences(source, target, notes)) {
    differences->push_back(d.text);
  }
}

int Comparison::Count(Verdict v) const {
  return static_cast<int>(std::count_if(cases.begin(), cases.end(),
                                        [v](const CaseComparison& c) { return c.verdict == v; }));
}

void BootstrapRatio(const std::vector<double>& a, const std::vector<double>& b, uint64_t seed,
                    double* lo, double* hi) {
  constexpr int kResamples = 2000;
  std::vector<double> ratios, ra(a.size()), rb(b.size());
  ratios.reserve(kResamples);
  uint64_t word = 0;
  auto next = [&](size_t n) { return PhiloxWord(seed, 0xB007, word++) % n; };
  for (int r = 0; r < kResamples; ++r) {
    for (double& x : ra) x = a[next(a.size())];
    for (double& x : rb) x = b[next(b.size())];
    const double ma = Quantile(ra, 0.5);
    ratios.push_back(ma > 0 ? Quantile(rb, 0.5) / ma : INFINITY);
  }
  *lo = Quantile(ratios, 0.025);
  *hi = Quantile(ratios, 0.975);
}

Comparison CompareRecords(const CompatRecord& source, const CompatRecord& target) {
  Comparison out;
  const std::vector<SetupDifference> setup = SetupDifferences(source, target, &out.notes);
  for (const SetupDifference& d : setup) out.setup_differences.push_back(d.text);
  out.source_calibration = source.calibration;
  out.target_calibration = target.calibration;
  std::map<std::string, const CaseResult*> in_target;
  for (const CaseResult& t : target.cases) in_target[t.id] = &t;
  std::map<std::string, bool> seen;
  for (const CaseResult& s : source.cases) {
    seen[s.id] = true;
    auto it = in_target.find(s.id);
    if (it == in_target.end()) {
      out.cases.push_back({.id = s.id,
                           .op = s.spec.op,
                           .verdict = Verdict::kMissing,
                           .reason = "not in the target record"});
      continue;
    }
    out.cases.push_back(CompareCase(s, *it->second));
    CaseComparison& c = out.cases.back();
    AddStability(s, *it->second, source, target, &c);
    if (c.verdict == Verdict::kDrift || c.verdict == Verdict::kRegression) {
      std::string likely;
      for (const SetupDifference& d : setup) {
        if (d.why.empty() || !d.Explains(s.spec.op, s.spec.dtype)) continue;
        c.likely_causes.push_back(d.text + " (" + d.why + ")");
        likely += (likely.empty() ? "" : "; ") + c.likely_causes.back();
      }
      if (!likely.empty()) c.reason += "; likely cause: " + likely;
      std::string why;
      for (const std::string& d : out.setup_differences) why += (why.empty() ? "" : ", ") + d;
      c.reason +=
          why.empty() ? "; the records show no setup difference" : "; setups differ: " + why;
    }
  }
  for (const CaseResult& t : target.cases) {
    if (!seen.count(t.id)) {
      out.cases.push_back({.id = t.id,
                           .op = t.spec.op,
                           .verdict = Verdict::kMissing,
                           .reason = "not in the source record"});
    }
  }
  return out;
}

StabilityVerdict Comparison::Stability() const {
  std::vector<StabilityVerdict> v;
  for (const CaseComparison& k : cases) v.push_back(k.stability.verdict);
  return OverallStability(v);
}

nlohmann::json StabilityToJson(const StabilityComparison& s) {
  auto ratio = [](double v, double lo, double hi) {
    return v > 0 ? nlohmann::json{{"ratio", v}, {"ci95", {lo, hi}}} : nlohmann::json();
  };
  return {{"verdict", StabilityVerdictName(s.verdict)},
          {"source", SpreadToJson(s.source)},
          {"target", SpreadToJson(s.target)},
          {"cv_ratio", ratio(s.cv_ratio, s.cv_lo, s.cv_hi)},
          {"tail_ratio", ratio(s.tail_ratio, s.tail_lo, s.tail_hi)},
          {"cause", s.cause.empty() ? nlohmann::json() : nlohmann::json(s.cause)}};
}

std::string StabilityLines(const Comparison& c) {
  std::string out;
  int assessed = 0, few = 0;
  for (const CaseComparison& k : c.cases) {
    const StabilityComparison& s = k.stability;
    if (s.source.reps == 0 || s.target.reps == 0) continue;
    if (s.verdict == StabilityVerdict::kNotAssessed) {
      ++few;
      continue;
    }
    ++assessed;
    if (s.verdict != StabilityVerdict::kNoisier && s.verdict != StabilityVerdict::kSteadier) {
      continue;
    }
    out += "stability: " + std::string(StabilityVerdictName(s.verdict)) + " " + k.id +
           Fmt(": CV %.1f%%", 100 * s.source.cv) + Fmt(" -> %.1f%%", 100 * s.target.cv) +
           Fmt(", p99/p50 %.2f", s.source.Tail()) + Fmt(" -> %.2f", s.target.Tail()) +
           ", longest slow run " + std::to_string(s.source.longest_slow_run) + " -> " +
           std::to_string(s.target.longest_slow_run) +
           (s.cause.empty() ? "" : "; likely cause: " + s.cause) + "\n";
  }
  if (assessed == 0 && few == 0) return out;
  out += "stability: " + std::string(StabilityVerdictName(c.Stability()));
  if (assessed > 0) out += " (" + std::to_string(assessed) + " cases assessed)";
  if (few > 0) {
    out += "; " + std::to_string(few) + " cases not assessed (under " +
           std::to_string(kStabilityMinReps) + " repetitions a side: run compat run --soak)";
  }
  return out + "\n";
}

nlohmann::json ComparisonToJson(const Comparison& c) {
  nlohmann::json cases = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::object();
  for (Verdict v :
       {Verdict::kIdentical, Verdict::kEquivalent, Verdict::kDrift, Verdict::kRegression,
        Verdict::kBroken, Verdict::kMissing, Verdict::kNotApplicable}) {
    summary[std::string(VerdictName(v))] = c.Count(v);
  }
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
  auto stats = [&num](const ErrorStats& e) {
    return nlohmann::json{{"compared", e.compared},
                          {"max_rel", num(e.max_rel)},
                          {"mean_rel", num(e.mean_rel)},
                          {"max_ulp", num(e.max_ulp)},
                          {"normwise", num(e.normwise)},
                          {"nan", e.nan},
                          {"inf", e.inf}};
  };
  for (const CaseComparison& k : c.cases) {
    nlohmann::json errors;
    if (k.has_error_stats) {
      errors = {{"target_vs_source", stats(k.target_vs_source)},
                {"target_vs_truth", stats(k.target_vs_truth)},
                {"source_vs_truth", stats(k.source_vs_truth)}};
    }
    cases.push_back(
        {{"id", k.id},
         {"op", k.op},
         {"verdict", VerdictName(k.verdict)},
         {"reason", k.reason},
         {"q_target_source", num(k.q_target_source)},
         {"q_source_truth", num(k.q_source_truth)},
         {"q_target_truth", num(k.q_target_truth)},
         {"rtol", k.rtol},
         {"atol", k.atol},
         {"differing_tiles", k.differing_tiles},
         {"errors", errors},
         {"nan_count", {{"source", k.source_nan}, {"target", k.target_nan}}},
         {"inf_count", {{"source", k.source_inf}, {"target", k.target_inf}}},
         {"speed", SpeedVerdictName(k.speed)},
         {"speed_ratio", num(k.speed_ratio)},
         {"speed_ratio_ci95", {num(k.speed_lo), num(k.speed_hi)}},
         {"unstable_timing", k.unstable_timing},
         {"fraction_of_ceiling", {{"source", k.source_fraction}, {"target", k.target_fraction}}},
         {"likely_causes", k.likely_causes},
         {"stability", StabilityToJson(k.stability)}});
  }
  summary["stability"] = StabilityVerdictName(c.Stability());
  summary["slower"] = c.CountSpeed(SpeedVerdict::kSlower);
  summary["faster"] = c.CountSpeed(SpeedVerdict::kFaster);
  auto calibration = [](const Calibration& k) {
    return k.measured ? nlohmann::json{{"copy_gbps", k.copy_gbps}, {"gemm_gflops", k.gemm_gflops}}
                      : nlohmann::json();
  };
  return {{"schema", kCompatCompareSchema},
          {"failed", c.failed()},
          {"calibration",
           {{"source", calibration(c.source_calibration)},
            {"target", calibration(c.target_calibration)}}},
          {"fail_on_slower", c.fail_on_slower},
          {"speed_min_effect", kSpeedMinEffect},
          {"summary", summary},
          {"setup_differences", c.setup_differences},
          {"notes", c.notes},
          {"cases", cases}};
}

std::string ComparisonTable(const Comparison& c) {
  std::string out;
  char line[1024];
  // "max rel/max ULP", compact: "1.2e-06/9".
  auto err = [](const ErrorStats& e) {
    std::string ulp = std::isnan(e.max_ulp) ? "-" : Fmt("%.0f", e.max_ulp);
    return Fmt("%.1e", e.max_rel) + "/" + ulp;
  };
  std::snprintf(line, sizeof(line), "%-10s %-52s %-34s %-13s %-16s %-18s %s\n", "verdict", "case",
                "speed (target/source, 95% CI)", "of ceiling", "vs source", "vs float64", "reason");
  out += line;
  for (const CaseComparison& k : c.cases) {
    std::string speed = std::string(SpeedVerdictName(k.speed));
    if (k.speed != SpeedVerdict::kUnknown) {
      speed += Fmt(" x%.2f", k.speed_ratio) + Fmt(" [%.2f,", k.speed_lo) +
               Fmt(" %.2f]", k.speed_hi) + (k.unstable_timing ? " unstable" : "");
    }
    const std::string vs_source = k.has_error_stats ? err(k.target_vs_source) : "-";
    const std::string vs_truth = k.has_error_stats ? err(k.target_vs_truth) : "-";
    // Each side's rate as a share of its own calibrated ceiling: "41%/38%".
    const std::string ceiling =
        k.source_fraction > 0 || k.target_fraction > 0
            ? Fmt("%.0f%%", k.source_fraction * 100) + "/" + Fmt("%.0f%%", k.target_fraction * 100)
            : "-";
    std::snprintf(line, sizeof(line), "%-10s %-52s %-34s %-13s %-16s %-18s %s\n",
                  std::string(VerdictName(k.verdict)).c_str(), k.id.c_str(), speed.c_str(),
                  ceiling.c_str(), vs_source.c_str(), vs_truth.c_str(), k.reason.c_str());
    out += line;
  }
  out += std::to_string(c.cases.size()) + " cases:";
  for (Verdict v :
       {Verdict::kIdentical, Verdict::kEquivalent, Verdict::kDrift, Verdict::kRegression,
        Verdict::kBroken, Verdict::kMissing, Verdict::kNotApplicable}) {
    if (int n = c.Count(v)) out += " " + std::to_string(n) + " " + std::string(VerdictName(v));
  }
  if (int n = c.CountSpeed(SpeedVerdict::kSlower)) {
    out += "; " + std::to_string(n) + " slower" + (c.fail_on_slower ? " (failing)" : "");
  }
  out += "\n" + StabilityLines(c);
  auto calibration = [](const Calibration& k) {
    return k.measured
               ? Fmt("copy %.1f GB/s, ", k.copy_gbps) + Fmt("GEMM %.1f GFLOP/s", k.gemm_gflops)
               : std::string("not calibrated");
  };
  if (c.source_calibration.measured || c.target_calibration.measured) {
    out += "ceilings: source " + calibration(c.source_calibration) + "; target " +
           calibration(c.target_calibration) + "\n";
  }
  for (const std::string& d : c.setup_differences) out += "setups differ: " + d + "\n";
  for (const std::string& n : c.notes) out += "note: " + n + "\n";
  out += "errors: max relative error/max ULP distance of the target at the sampled positions\n";
  out += "of ceiling: each side's rate as a share of its own calibrated copy or GEMM rate\n";
  return out;
}

JunitReport ComparisonJunit(const Comparison& c) {
  JunitReport r{.name = "cutover compat compare"};
  std::map<std::string, size_t> suite_of;
  for (const CaseComparison& k : c.cases) {
    auto [it, added] = suite_of.emplace(k.op, r.suites.size());
    if (added) r.suites.push_back(JunitSuite{.name = k.op});
    JunitCase jc{.classname = "compat." + k.op, .name = k.id};
    jc.message = std::string(VerdictName(k.verdict)) + ": " + k.reason;
    if (c.fail_on_slower && k.speed == SpeedVerdict::kSlower) {
      jc.message += Fmt("; slower: speed x%.2f of the source", k.speed_ratio);
    }
    if (k.verdict == Verdict::kRegression || k.verdict == Verdict::kBroken ||
        (c.fail_on_slower && k.speed == SpeedVerdict::kSlower)) {
      jc.outcome = JunitOutcome::kFailed;
      jc.text = jc.message;
    } else if (k.verdict == Verdict::kMissing || k.verdict == Verdict::kNotApplicable) {
      jc.outcome = JunitOutcome::kSkipped;
    }
    r.suites[it->second].cases.push_back(std::move(jc));
  }
  return r;
}

}  // namespace cutover
