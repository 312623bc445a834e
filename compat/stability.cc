#include "compat/stability.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "compat/runner.h"

namespace cutover {
namespace {

constexpr int kResamples = 1000;

double Cv(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
  return mean > 0 ? sd / mean : 0;
}

// Quantile q of sorted v (linear interpolation, as compat/runner.h Quantile).
double SortedQuantile(const std::vector<double>& v, double q) {
  const double x = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(x));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (x - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// p99 / p50. Sorts v (a resample the caller owns).
double TailOfInPlace(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const double p50 = SortedQuantile(v, 0.5);
  return p50 > 0 ? SortedQuantile(v, 0.99) / p50 : 0;
}

// The 95% percentile-bootstrap interval of stat(b) / stat(a).
// `stat` may reorder the resample it is given.
template <typename Stat>
void Interval(const std::vector<double>& a, const std::vector<double>& b, std::mt19937_64& rng,
              Stat stat, double* lo, double* hi) {
  std::vector<double> ratios, ra(a.size()), rb(b.size());
  std::uniform_int_distribution<size_t> pa(0, a.size() - 1), pb(0, b.size() - 1);
  ratios.reserve(kResamples);
  for (int i = 0; i < kResamples; ++i) {
    for (double& x : ra) x = a[pa(rng)];
    for (double& x : rb) x = b[pb(rng)];
    const double sa = stat(ra);
    ratios.push_back(sa > 0 ? stat(rb) / sa : 1e9);
  }
  *lo = Quantile(ratios, 0.025);
  *hi = Quantile(ratios, 0.975);
}

// +1 when b is reliably larger than a (interval above 1, ratio at least kStabilityMinRatio and
// the values `min_delta` apart), -1 for the mirror image, else 0.
int Judge(double a, double b, double lo, double hi, double min_delta) {
  if (a <= 0 || b <= 0) return 0;
  const double ratio = b / a;
  if (lo > 1 && ratio >= kStabilityMinRatio && b - a >= min_delta) return 1;
  if (hi < 1 && ratio <= 1 / kStabilityMinRatio && a - b >= min_delta) return -1;
  return 0;
}

std::string Pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

// The fingerprint's sharing hints of a record ("mig", "vgpu_guest", "mps_control_daemon", ...).
std::vector<std::string> SharingHints(const CompatRecord& rec) {
  std::vector<std::string> out;
  const nlohmann::json* h = nullptr;
  if (rec.fingerprint.is_object()) {
    auto d = rec.fingerprint.find("driver");
    if (d != rec.fingerprint.end() && d->is_object()) {
      auto s = d->find("sharing");
      if (s != d->end() && s->is_object()) {
        auto it = s->find("hints");
        if (it != s->end() && it->is_array()) h = &*it;
      }
    }
  }
  if (h == nullptr) return out;
  for (const nlohmann::json& x : *h) {
    if (x.is_string()) out.push_back(x.get<std::string>());
  }
  return out;
}

}  // namespace

Spread ComputeSpread(const std::vector<double>& reps_s) {
  Spread s;
  s.reps = static_cast<int>(reps_s.size());
  if (reps_s.empty()) return s;
  s.assessed = s.reps >= kStabilityMinReps;
  for (double x : reps_s) s.mean_s += x;
  s.mean_s /= static_cast<double>(s.reps);
  s.cv = Cv(reps_s);
  s.p50_s = Quantile(reps_s, 0.5);
  if (s.assessed) s.p99_s = Quantile(reps_s, 0.99);
  const auto [mn, mx] = std::minmax_element(reps_s.begin(), reps_s.end());
  s.max_over_min = *mn > 0 ? *mx / *mn : 0;
  int run = 0;
  for (double x : reps_s) {
    run = x > kSlowFactor * s.p50_s ? run + 1 : 0;
    s.longest_slow_run = std::max(s.longest_slow_run, run);
  }
  return s;
}

std::string_view StabilityVerdictName(StabilityVerdict v) {
  switch (v) {
    case StabilityVerdict::kSteadier:
      return "steadier";
    case StabilityVerdict::kSame:
      return "same";
    case StabilityVerdict::kNoisier:
      return "noisier";
    case StabilityVerdict::kNotAssessed:
      return "not assessed";
  }
  return "?";
}

StabilityComparison CompareStability(const std::vector<double>& source_reps,
                                     const std::vector<double>& target_reps, uint64_t seed) {
  StabilityComparison c;
  c.source = ComputeSpread(source_reps);
  c.target = ComputeSpread(target_reps);
  if (!c.source.assessed || !c.target.assessed) return c;
  std::mt19937_64 rng(seed);
  c.cv_ratio = c.source.cv > 0 ? c.target.cv / c.source.cv : 0;
  Interval(
      source_reps, target_reps, rng, [](std::vector<double>& v) { return Cv(v); }, &c.cv_lo,
      &c.cv_hi);
  c.tail_ratio = c.source.Tail() > 0 ? c.target.Tail() / c.source.Tail() : 0;
  Interval(source_reps, target_reps, rng, TailOfInPlace, &c.tail_lo, &c.tail_hi);
  const int cv = Judge(c.source.cv, c.target.cv, c.cv_lo, c.cv_hi, kStabilityMinCvDelta);
  const int tail =
      Judge(c.source.Tail(), c.target.Tail(), c.tail_lo, c.tail_hi, kStabilityMinTailDelta);
  if (cv > 0 || tail > 0) {
    c.verdict = StabilityVerdict::kNoisier;
  } else if (cv < 0 || tail < 0) {
    c.verdict = StabilityVerdict::kSteadier;
  } else {
    c.verdict = StabilityVerdict::kSame;
  }
  return c;
}

std::string StabilityCause(const CaseResult& source, const CaseResult& target,
                           const CompatRecord& source_rec, const CompatRecord& target_rec) {
  std::vector<std::string> causes;
  const Interference& s = source.timing.interference;
  const Interference& t = target.timing.interference;
  if (t.measured) {
    const double s_steal = s.measured ? std::max(0.0, s.steal_share) : 0;
    if (t.steal_share >= 0.01 && t.steal_share >= 2 * s_steal) {
      causes.push_back("steal time " + Pct(t.steal_share) + " of CPU time on the target (" +
                       Pct(s_steal) + " on the source): another VM on the same host");
    }
    // Involuntary switches per second of the sampled period: another runnable task on our CPUs.
    auto rate = [](const Interference& f) {
      return f.measured && f.involuntary_switches >= 0 && f.wall_s > 0
                 ? static_cast<double>(f.involuntary_switches) / f.wall_s
                 : 0.0;
    };
    if (rate(t) >= 20 && rate(t) >= 4 * rate(s)) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%.0f involuntary context switches/s on the target (%.0f on the source): "
                    "another process competes for its CPUs",
                    rate(t), rate(s));
      causes.push_back(buf);
    }
    if (t.throttle_reasons > 0 && (!s.measured || s.throttle_reasons <= 0)) {
      causes.push_back("GPU clocks throttled on the target (clock-event reasons 0x" + [&] {
        char b[24];
        std::snprintf(b, sizeof b, "%llx", static_cast<unsigned long long>(t.throttle_reasons));
        return std::string(b);
      }() + ")");
    }
    if (t.sm_clock_min_mhz > 0 && t.sm_clock_max_mhz > 1.1 * t.sm_clock_min_mhz &&
        !(s.sm_clock_min_mhz > 0 && s.sm_clock_max_mhz > 1.1 * s.sm_clock_min_mhz)) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "GPU SM clock varied %.0f-%.0f MHz on the target",
                    t.sm_clock_min_mhz, t.sm_clock_max_mhz);
      causes.push_back(buf);
    }
    if (t.other_processes > 0) {
      causes.push_back(std::to_string(t.other_processes) +
                       " other process(es) on the target's GPU");
    }
    if (t.cpu_mhz_min > 0 && t.cpu_mhz_max > 0 && t.cpu_mhz_max > 1.2 * t.cpu_mhz_min) {
      char buf[120];
      std::snprintf(buf, sizeof buf, "CPU frequency varied %.0f-%.0f MHz on the target",
                    t.cpu_mhz_min, t.cpu_mhz_max);
      causes.push_back(buf);
    }
  }
  const std::vector<std::string> hints = SharingHints(target_rec);
  const std::vector<std::string> src_hints = SharingHints(source_rec);
  for (const std::string& h : hints) {
    const bool shared = h == "mig" || h == "vgpu_guest" || h.rfind("mps", 0) == 0;
    if (shared && std::find(src_hints.begin(), src_hints.end(), h) == src_hints.end()) {
      causes.push_back("the target GPU is shared (" + h + ")");
    }
  }
  std::string out;
  for (const std::string& c : causes) out += (out.empty() ? "" : "; ") + c;
  return out;
}

StabilityVerdict OverallStability(const std::vector<StabilityVerdict>& cases) {
  bool any_assessed = false, steadier = false;
  for (StabilityVerdict v : cases) {
    if (v == StabilityVerdict::kNoisier) return v;
    any_assessed |= v != StabilityVerdict::kNotAssessed;
    steadier |= v == StabilityVerdict::kSteadier;
  }
  if (!any_assessed) return StabilityVerdict::kNotAssessed;
  return steadier ? StabilityVerdict::kSteadier : StabilityVerdict::kSame;
}

nlohmann::json SpreadToJson(const Spread& s) {
  using nlohmann::json;
  return {{"reps", s.reps},
          {"assessed", s.assessed},
          {"cv", s.cv},
          {"p50_s", s.p50_s},
          {"p99_s", s.assessed ? json(s.p99_s) : json(nullptr)},
          {"max_over_min", s.max_over_min},
          {"longest_slow_run", s.longest_slow_run}};
}

}  // namespace cutover
