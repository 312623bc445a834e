#include "canary/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>

namespace cutover::canary {
namespace {

// The exact null distribution is used when there are no ties and both sides are at most this.
constexpr int kExactMaxPerSide = 50;

std::string FmtP(double p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out;
}

size_t CountNonFinite(const std::vector<double>& v) {
  return static_cast<size_t>(
      std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// REQUIRES: v non-empty.
double AggregateOf(const std::vector<double>& v, Aggregate a) {
  switch (a) {
    case Aggregate::kMean:
      return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    case Aggregate::kMedian:
      return Median(v);
    case Aggregate::kMax:
      return *std::max_element(v.begin(), v.end());
    case Aggregate::kMin:
      return *std::min_element(v.begin(), v.end());
    case Aggregate::kLast:
      return v.back();
  }
  return v.back();
}

// P(U >= u) (upper) or P(U <= u) under H0 with n and m untied samples, by counting the
// arrangements: f[i][j](u) = f[i-1][j](u - j) + f[i][j-1](u) (split on whether the largest of
// the i + j values is an x, which then beats all j y's). Additions only, so no cancellation.
double ExactTail(int n, int m, double u_obs, bool upper) {
  std::vector<std::vector<double>> prev(m + 1), cur(m + 1);
  for (int j = 0; j <= m; ++j) prev[j] = {1.0};  // i = 0: U is 0
  for (int i = 1; i <= n; ++i) {
    cur[0] = {1.0};
    for (int j = 1; j <= m; ++j) {
      std::vector<double> f(static_cast<size_t>(i) * j + 1, 0.0);
      for (size_t u = 0; u < prev[j].size(); ++u) f[u + j] += prev[j][u];
      for (size_t u = 0; u < cur[j - 1].size(); ++u) f[u] += cur[j - 1][u];
      cur[j] = std::move(f);
    }
    std::swap(prev, cur);
  }
  const std::vector<double>& dist = prev[m];
  double total = 0, tail = 0;
  long long k = std::llround(u_obs);
  for (size_t u = 0; u < dist.size(); ++u) {
    total += dist[u];
    long long uu = static_cast<long long>(u);
    if (upper ? uu >= k : uu <= k) tail += dist[u];
  }
  return tail / total;
}

}  // namespace

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInconclusive:
      return "inconclusive";
    case Verdict::kError:
      return "error";
  }
  return "?";
}

std::string_view AggregateName(Aggregate a) {
  switch (a) {
    case Aggregate::kMean:
      return "mean";
    case Aggregate::kMedian:
      return "median";
    case Aggregate::kMax:
      return "max";
    case Aggregate::kMin:
      return "min";
    case Aggregate::kLast:
      return "last";
  }
  return "?";
}

std::string_view EffectName(Effect e) {
  switch (e) {
    case Effect::kNone:
      return "none";
    case Effect::kHigher:
      return "higher";
    case Effect::kLower:
      return "lower";
  }
  return "?";
}

std::string_view DecisionName(Decision d) {
  switch (d) {
    case Decision::kHold:
      return "hold";
    case Decision::kAdvance:
      return "advance";
    case Decision::kRollback:
      return "rollback";
    case Decision::kPause:
      return "pause";
  }
  return "?";
}

MannWhitneyResult MannWhitney(const std::vector<double>& x, const std::vector<double>& y,
                              Worse worse) {
  const size_t n = x.size(), m = y.size(), total = n + m;
  // Pool the values (side 0 = x, 1 = y), sort, and give tied runs their mid-rank.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(total);
  for (double v : x) pooled.emplace_back(v, 0);
  for (double v : y) pooled.emplace_back(v, 1);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0;
  double tie_term = 0;  // sum over tied runs of t^3 - t
  for (size_t i = 0; i < total;) {
    size_t j = i;
    while (j < total && pooled[j].first == pooled[i].first) ++j;
    double t = static_cast<double>(j - i);
    double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_x += mid_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double dn = static_cast<double>(n), dm = static_cast<double>(m);
  const double dt = static_cast<double>(total);
  MannWhitneyResult r;
  r.u = rank_sum_x - dn * (dn + 1) / 2;
  const double mu = dn * dm / 2;
  r.effect = r.u > mu ? Effect::kHigher : (r.u < mu ? Effect::kLower : Effect::kNone);
  double var = dn * dm / 12.0 * ((dt + 1) - (total > 1 ? tie_term / (dt * (dt - 1)) : 0.0));
  if (var <= 0) {  // every value tied: no evidence either way
    r.z = 0;
    r.p_value = 1;
    return r;
  }
  const double diff = worse == Worse::kHigher ? r.u - mu : mu - r.u;
  r.z = (diff - 0.5) / std::sqrt(var);
  r.p_value = 0.5 * std::erfc(r.z / std::sqrt(2.0));
  if (tie_term == 0 && n <= kExactMaxPerSide && m <= kExactMaxPerSide) {
    r.p_value = ExactTail(static_cast<int>(n), static_cast<int>(m), r.u, worse == Worse::kHigher);
    r.exact = true;
  }
  return r;
}

double MinAttainablePValue(int n, int m) {
  // C(n+m, n) = prod_{k=1..n} (m + k) / k.
  double c = 1;
  for (int k = 1; k <= n; ++k) c = c * (m + k) / k;
  return 1.0 / c;
}

CheckResult ApplyNoiseFloor(const CheckBounds& bounds, const CheckInput& input, CheckResult canary,
                            const CheckResult& pair) {
  if (canary.verdict != Verdict::kFail || pair.verdict != Verdict::kFail) return canary;
  if (bounds.max || bounds.min) {
    CheckBounds absolute;
    absolute.max = bounds.max;
    absolute.min = bounds.min;
    absolute.worse = bounds.worse;
    absolute.aggregate = bounds.aggregate;
    absolute.min_requests = bounds.min_requests;
    if (JudgeCheck(absolute, input).verdict == Verdict::kFail) return canary;
  }
  canary.verdict = Verdict::kInconclusive;
  canary.reason = "noise floor: the A/A pair fails the same band (" + pair.reason +
                  "); canary: " + canary.reason;
  return canary;
}

CheckResult ErrorResult(std::string reason) {
  CheckResult r;
  r.verdict = Verdict::kError;
  r.reason = std::move(reason);
  return r;
}

// The fails, pending reasons and passes a check's bounds give, each as one line of its reason.
struct Findings {
  std::vector<std::string> fails, pending, passes;
};

// The Mann-Whitney test of a check: the canary against the (scaled) baseline on the worse side.
void JudgeMannWhitney(const CheckBounds& b, const CheckInput& in, CheckResult& r, Findings& f) {
  const double scale = (b.worse == Worse::kHigher ? b.max_ratio : b.min_ratio).value_or(1.0);
  const size_t n = in.canary.size(), m = in.baseline.size();
  // One tail of a two-sided test at `confidence`: 0.98 acts at p <= 0.01 on the worse side.
  const double alpha = (1.0 - b.confidence) / 2.0;
  const bool any_negative =
      std::any_of(in.canary.begin(), in.canary.end(), [](double v) { return v < 0; }) ||
      std::any_of(in.baseline.begin(), in.baseline.end(), [](double v) { return v < 0; });
  if (scale != 1.0 && any_negative) {
    f.pending.push_back("mann-whitney against a scaled baseline needs non-negative samples");
  } else if (n < static_cast<size_t>(b.min_samples) || m < static_cast<size_t>(b.min_samples)) {
    f.pending.push_back("mann-whitney needs " + std::to_string(b.min_samples) +
                        " samples per side, got canary " + std::to_string(n) + ", baseline " +
                        std::to_string(m));
  } else if (MinAttainablePValue(static_cast<int>(n), static_cast<int>(m)) > alpha) {
    // With 4 samples per side the smallest one-sided p is 1/C(8,4) = 1/70 = 0.014, above
    // 0.01: no two-sided test at 98% can ever fail there, so such a test must not pass.
    f.pending.push_back("mann-whitney with " + std::to_string(n) + " and " + std::to_string(m) +
                        " samples can never reach p <= " + FmtP(alpha));
  } else {
    std::vector<double> scaled = in.baseline;
    for (double& v : scaled) v *= scale;
    MannWhitneyResult t = MannWhitney(in.canary, scaled, b.worse);
    r.figures.test = t;
    const std::string what =
        std::string("mann-whitney: canary ") + (b.worse == Worse::kHigher ? "higher" : "lower") +
        " than " + (scale == 1.0 ? std::string("baseline") : FormatNumber(scale) + " x baseline") +
        ", p=" + FmtP(t.p_value) + " (U=" + FormatNumber(t.u) + ", n=" + std::to_string(n) + "/" +
        std::to_string(m) + ")";
    if (t.p_value <= alpha) {
      f.fails.push_back(what + " <= " + FmtP(alpha));
    } else {
      f.passes.push_back("mann-whitney p=" + FmtP(t.p_value) + " > " + FmtP(alpha));
    }
  }
}

CheckResult JudgeCheck(const CheckBounds& b, const CheckInput& in) {
  CheckResult r;
  r.figures.canary_samples = in.canary.size();
  r.figures.baseline_samples = in.baseline.size();
  auto inconclusive = [&r](std::string why) {
    r.verdict = Verdict::kInconclusive;
    r.reason = std::move(why);
    return r;
  };

  // Gate 1: enough requests on both sides. A handful of requests proves nothing either way.
  if (b.min_requests > 0) {
    const double need = static_cast<double>(b.min_requests);
    const std::pair<const char*, const std::optional<double>*> sides[] = {
        {"canary", &in.canary_requests}, {"baseline", &in.baseline_requests}};
    for (const auto& [name, count] : sides) {
      if (!count->has_value() || !std::isfinite(**count)) {
        return inconclusive(std::string(name) + " request count unknown (min_requests " +
                            std::to_string(b.min_requests) + ")");
      }
      if (**count < need) {
        return inconclusive(std::string(name) + " served " + FormatNumber(**count) +
                            " requests, fewer than min_requests " + std::to_string(b.min_requests));
      }
    }
  }

  const bool has_ratio = b.max_ratio.has_value() || b.min_ratio.has_value();
  const bool needs_baseline = has_ratio || b.test != StatTest::kNone;
  if (!b.max && !b.min && !needs_baseline) return inconclusive("check has no bounds");

  // Gate 2: samples present and finite on every side the check reads.
  auto sample_problem = [](const char* name, const std::vector<double>& v) -> std::string {
    if (v.empty()) return std::string("no ") + name + " samples (empty result)";
    size_t bad = CountNonFinite(v);
    if (bad > 0) {
      return std::string(name) + " samples contain NaN or Inf (" + std::to_string(bad) + " of " +
             std::to_string(v.size()) + ")";
    }
    return "";
  };
  if (std::string why = sample_problem("canary", in.canary); !why.empty()) {
    return inconclusive(why);
  }
  if (needs_baseline) {
    if (std::string why = sample_problem("baseline", in.baseline); !why.empty()) {
      return inconclusive(why);
    }
  }

  const double cv = AggregateOf(in.canary, b.aggregate);
  r.figures.canary_value = cv;
  Findings found;
  const std::string agg(AggregateName(b.aggregate));

  if (b.max) {
    if (cv > *b.max) {
      found.fails.push_back("canary " + agg + " " + FormatNumber(cv) + " > max " +
                            FormatNumber(*b.max));
    } else {
      found.passes.push_back("canary " + agg + " " + FormatNumber(cv) + " <= max " +
                             FormatNumber(*b.max));
    }
  }
  if (b.min) {
    if (cv < *b.min) {
      found.fails.push_back("canary " + agg + " " + FormatNumber(cv) + " < min " +
                            FormatNumber(*b.min));
    } else {
      found.passes.push_back("canary " + agg + " " + FormatNumber(cv) + " >= min " +
                             FormatNumber(*b.min));
    }
  }

  if (needs_baseline) {
    const double bv = AggregateOf(in.baseline, b.aggregate);
    r.figures.baseline_value = bv;
    // The ratio: 0/0 is 1 (both clean), x/0 with x > 0 is +Inf (worse than a clean baseline).
    std::optional<double> ratio;
    if (bv > 0) {
      ratio = cv / bv;
    } else if (bv == 0 && cv >= 0) {
      ratio = cv == 0 ? 1.0 : INFINITY;
    }
    r.figures.ratio = ratio;
    const std::string sides =
        " (canary " + FormatNumber(cv) + ", baseline " + FormatNumber(bv) + ")";
    const bool test_owns_max = b.test != StatTest::kNone && b.worse == Worse::kHigher;
    const bool test_owns_min = b.test != StatTest::kNone && b.worse == Worse::kLower;
    auto point_ratio = [&](const std::optional<double>& bound, bool is_max) {
      if (!bound) return;
      const char* name = is_max ? "max_ratio" : "min_ratio";
      if (!ratio) {
        found.pending.push_back(std::string("ratio undefined for a negative baseline") + sides);
      } else if (is_max ? *ratio > *bound : *ratio < *bound) {
        found.fails.push_back("ratio " + FormatNumber(*ratio) + (is_max ? " > " : " < ") + name +
                              " " + FormatNumber(*bound) + sides);
      } else {
        found.passes.push_back("ratio " + FormatNumber(*ratio) + (is_max ? " <= " : " >= ") + name +
                               " " + FormatNumber(*bound));
      }
    };
    if (!test_owns_max) point_ratio(b.max_ratio, true);
    if (!test_owns_min) point_ratio(b.min_ratio, false);

    if (b.test == StatTest::kMannWhitney) JudgeMannWhitney(b, in, r, found);
  }

  if (!found.fails.empty()) {
    r.verdict = Verdict::kFail;
    r.reason = Join(found.fails);
  } else if (!found.pending.empty()) {
    r.verdict = Verdict::kInconclusive;
    r.reason = Join(found.pending);
  } else {
    r.verdict = Verdict::kPass;
    r.reason = Join(found.passes);
  }
  return r;
}

Verdict CombineChecks(const std::vector<CheckResult>& checks) {
  if (checks.empty()) return Verdict::kInconclusive;
  auto any = [&checks](Verdict v) {
    return std::any_of(checks.begin(), checks.end(),
                       [v](const CheckResult& c) { return c.verdict == v; });
  };
  if (any(Verdict::kFail)) return Verdict::kFail;
  if (any(Verdict::kError)) return Verdict::kError;
  if (any(Verdict::kInconclusive)) return Verdict::kInconclusive;
  return Verdict::kPass;
}

AnalysisState BeginStep(const AnalysisState& state) {
  AnalysisState s = state;
  s.step_intervals = 0;
  s.step_passes = 0;
  s.step_inconclusives = 0;
  s.last.reset();
  return s;
}

AnalysisState RecordInterval(const AnalysisState& state, Verdict interval) {
  AnalysisState s = state;
  ++s.intervals;
  ++s.step_intervals;
  switch (interval) {
    case Verdict::kPass:
      ++s.step_passes;
      s.consecutive_errors = 0;
      break;
    case Verdict::kFail:
      ++s.failures;
      s.consecutive_errors = 0;
      break;
    case Verdict::kInconclusive:
      ++s.step_inconclusives;
      s.consecutive_errors = 0;
      break;
    case Verdict::kError:
      ++s.errors;
      ++s.consecutive_errors;
      break;
  }
  s.last = interval;
  return s;
}

StepDecision Decide(const AnalysisState& s, const AnalysisPolicy& p, bool hold_elapsed) {
  const int failure_limit = std::max(1, p.failure_limit);
  const int error_limit = std::max(1, p.consecutive_error_limit);
  const int inconclusive_limit = std::max(1, p.inconclusive_limit);
  if (s.failures >= failure_limit) {
    return {Decision::kRollback, "failure limit reached: " + std::to_string(s.failures) +
                                     " failed intervals (failure_limit " +
                                     std::to_string(failure_limit) + ")"};
  }
  if (s.consecutive_errors >= error_limit) {
    return {Decision::kRollback,
            "consecutive error limit reached: " + std::to_string(s.consecutive_errors) +
                " errored intervals in a row (consecutive_error_limit " +
                std::to_string(error_limit) + ")"};
  }
  if (s.step_inconclusives >= inconclusive_limit) {
    return {p.on_inconclusive == OnInconclusive::kPause ? Decision::kPause : Decision::kRollback,
            "inconclusive limit reached: " + std::to_string(s.step_inconclusives) +
                " inconclusive intervals in this step (inconclusive_limit " +
                std::to_string(inconclusive_limit) + ")"};
  }
  if (s.step_passes == 0) return {Decision::kHold, "no passing interval in this step yet"};
  if (s.last != Verdict::kPass) {
    return {Decision::kHold,
            "latest interval was " + std::string(VerdictName(*s.last)) + ", not pass"};
  }
  if (!hold_elapsed) return {Decision::kHold, "hold time not over"};
  return {Decision::kAdvance, std::to_string(s.step_passes) + " of " +
                                  std::to_string(s.step_intervals) +
                                  " intervals passed in this step"};
}

}  // namespace cutover::canary
