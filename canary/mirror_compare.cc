#include "canary/mirror_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/json.h"

namespace cutover::canary {
namespace {

using nlohmann::json;

std::string FormatNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool IsBareKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string KeySegment(const std::string& prefix, const std::string& key) {
  if (IsBareKey(key)) return prefix.empty() ? key : prefix + "." + key;
  // A JSON string literal keeps any key, dots and brackets included, unambiguous.
  return prefix + "[" + json(key).dump(-1, ' ', false, json::error_handler_t::replace) + "]";
}

void Flatten(const json& v, const std::string& path, FlatResponse* out) {
  if (v.is_object() && !v.empty()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      Flatten(it.value(), KeySegment(path, it.key()), out);
    }
  } else if (v.is_array() && !v.empty()) {
    for (size_t i = 0; i < v.size(); ++i) {
      Flatten(v[i], path + "[" + std::to_string(i) + "]", out);
    }
  } else {
    out->fields.emplace_back(path.empty() ? std::string(kValueField) : path, v);
  }
}

bool IsIntegerToken(const json& v) { return v.is_number_integer() || v.is_number_unsigned(); }

// Exact equality of two integer tokens. (nlohmann's operator== casts an unsigned to signed, so
// it finds -1 equal to 18446744073709551615.)
bool IntegersEqual(const json& a, const json& b) {
  if (a.is_number_unsigned() != b.is_number_unsigned()) {
    const json& s = a.is_number_unsigned() ? b : a;
    const json& u = a.is_number_unsigned() ? a : b;
    int64_t sv = s.get<int64_t>();
    return sv >= 0 && static_cast<uint64_t>(sv) == u.get<uint64_t>();
  }
  return a.is_number_unsigned() ? a.get<uint64_t>() == b.get<uint64_t>()
                                : a.get<int64_t>() == b.get<int64_t>();
}

// Whether a and b (both present) differ; sets *rel for two numbers.
bool ValuesDiffer(const json& a, const json& b, const MirrorCompareOptions& o,
                  std::optional<double>* rel) {
  if (a.is_number() && b.is_number()) {
    if (IsIntegerToken(a) && IsIntegerToken(b)) {
      // Relative difference from the doubles; equality exact on the integers themselves.
      double x = a.get<double>(), y = b.get<double>();
      double m = std::max(std::fabs(x), std::fabs(y));
      *rel = m == 0 ? 0.0 : std::fabs(x / m - y / m);
      return !IntegersEqual(a, b);
    }
    double x = a.get<double>(), y = b.get<double>();
    double m = std::max(std::fabs(x), std::fabs(y));
    // Scaled by m so that values near the double range do not overflow to inf.
    *rel = m == 0 ? 0.0 : std::fabs(x / m - y / m);
    return !(std::fabs(x - y) <= o.abs_tol + o.rel_tol * m);
  }
  if (a.type() != b.type()) return true;
  if (a.is_object() || a.is_array()) return false;  // both empty: leaves are empty containers
  return a != b;
}

bool Ignored(std::string_view path, const MirrorCompareOptions& o) {
  for (const std::string& p : o.ignore) {
    if (IgnorePatternMatches(p, path)) return true;
  }
  return false;
}

Status CheckNonNegative(double v, const char* flag) {
  if (!std::isfinite(v) || v < 0) {
    return Status::InvalidArgument(std::string("mirror: ") + flag +
                                   " must be a finite number >= 0, got " + FormatNumber(v));
  }
  return Status::Ok();
}

Status CheckRate(double v, const char* flag) {
  if (!(v >= 0 && v <= 1)) {
    return Status::InvalidArgument(std::string("mirror: ") + flag +
                                   " must be between 0 and 1, got " + FormatNumber(v));
  }
  return Status::Ok();
}

int VerdictRank(FieldVerdict v) {
  switch (v) {
    case FieldVerdict::kDiffers:
      return 0;
    case FieldVerdict::kNoisy:
      return 1;
    case FieldVerdict::kOk:
      return 2;
  }
  return 3;
}

json OptNumber(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string Percent(double rate) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", rate * 100);
  return buf;
}

}  // namespace

Status ValidateMirrorCompareOptions(const MirrorCompareOptions& o) {
  CUTOVER_RETURN_IF_ERROR(CheckNonNegative(o.rel_tol, "--rel-tol"));
  CUTOVER_RETURN_IF_ERROR(CheckNonNegative(o.abs_tol, "--abs-tol"));
  CUTOVER_RETURN_IF_ERROR(CheckRate(o.max_diff_rate, "--max-diff-rate"));
  CUTOVER_RETURN_IF_ERROR(CheckRate(o.noisy_rate, "--noisy-rate"));
  for (const std::string& p : o.ignore) {
    if (p.empty()) return Status::InvalidArgument("mirror: --ignore needs a field path, got ''");
  }
  if (o.max_fields == 0) return Status::InvalidArgument("mirror: --max-fields must be >= 1");
  return Status::Ok();
}

bool IgnorePatternMatches(std::string_view pattern, std::string_view path) {
  size_t i = 0, j = 0;
  while (i < pattern.size()) {
    if (pattern.compare(i, 3, "[*]") == 0 && j + 1 < path.size() && path[j] == '[' &&
        path[j + 1] >= '0' && path[j + 1] <= '9') {
      size_t k = j + 1;
      while (k < path.size() && path[k] >= '0' && path[k] <= '9') ++k;
      if (k >= path.size() || path[k] != ']') return false;
      i += 3;
      j = k + 1;
      continue;
    }
    if (j >= path.size() || pattern[i] != path[j]) return false;
    ++i;
    ++j;
  }
  // The field itself, or one under it.
  return j == path.size() || path[j] == '.' || path[j] == '[';
}

FlatResponse FlattenResponse(const MirrorResponse& response) {
  FlatResponse flat;
  flat.status = response.status;
  flat.body = response.body;
  if (response.body.empty()) return flat;
  Result<json> doc = ParseJson(response.body, "body");
  if (!doc.ok()) return flat;
  flat.is_json = true;
  Flatten(*doc, "", &flat);
  std::sort(flat.fields.begin(), flat.fields.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  return flat;
}

std::vector<FieldComparison> CompareFlat(const FlatResponse& a, const FlatResponse& b,
                                         const MirrorCompareOptions& o) {
  std::vector<FieldComparison> out;
  if (!Ignored(kStatusField, o)) {
    out.push_back({.path = kStatusField, .differs = a.status != b.status});
  }
  if (!a.is_json || !b.is_json) {
    if (!Ignored(kBodyField, o)) out.push_back({.path = kBodyField, .differs = a.body != b.body});
    return out;
  }
  // Merge the two sorted field lists.
  size_t i = 0, j = 0;
  while (i < a.fields.size() || j < b.fields.size()) {
    FieldComparison c;
    if (j >= b.fields.size() || (i < a.fields.size() && a.fields[i].first < b.fields[j].first)) {
      c.path = a.fields[i++].first;
      c.differs = true;
    } else if (i >= a.fields.size() || b.fields[j].first < a.fields[i].first) {
      c.path = b.fields[j++].first;
      c.differs = true;
    } else {
      c.path = a.fields[i].first;
      c.differs = ValuesDiffer(a.fields[i].second, b.fields[j].second, o, &c.rel_diff);
      ++i;
      ++j;
    }
    if (!Ignored(c.path, o)) out.push_back(std::move(c));
  }
  return out;
}

std::vector<FieldComparison> CompareResponses(const MirrorResponse& a, const MirrorResponse& b,
                                              const MirrorCompareOptions& options) {
  return CompareFlat(FlattenResponse(a), FlattenResponse(b), options);
}

std::string_view FieldVerdictName(FieldVerdict v) {
  switch (v) {
    case FieldVerdict::kOk:
      return "ok";
    case FieldVerdict::kDiffers:
      return "differs";
    case FieldVerdict::kNoisy:
      return "noisy";
  }
  return "?";
}

std::string_view MirrorVerdictName(MirrorVerdict v) {
  switch (v) {
    case MirrorVerdict::kPass:
      return "pass";
    case MirrorVerdict::kFail:
      return "fail";
    case MirrorVerdict::kInconclusive:
      return "inconclusive";
  }
  return "?";
}

MirrorAggregator::MirrorAggregator(MirrorCompareOptions options) : options_(std::move(options)) {}

void MirrorAggregator::Add(const MirrorResponse& primary, const MirrorResponse& secondary,
                           const MirrorResponse& candidate) {
  FlatResponse p = FlattenResponse(primary);
  std::vector<FieldComparison> noise = CompareFlat(p, FlattenResponse(secondary), options_);
  std::vector<FieldComparison> cand = CompareFlat(p, FlattenResponse(candidate), options_);
  ++compared_;
  // Both lists are sorted alike (`<status>` first, then by path); walk their union once.
  auto less = [](const FieldComparison& x, const FieldComparison& y) {
    bool xs = x.path == kStatusField, ys = y.path == kStatusField;
    if (xs != ys) return xs;
    return x.path < y.path;
  };
  size_t i = 0, j = 0;
  while (i < noise.size() || j < cand.size()) {
    const FieldComparison* n = nullptr;
    const FieldComparison* c = nullptr;
    if (j >= cand.size() || (i < noise.size() && less(noise[i], cand[j]))) {
      n = &noise[i++];
    } else if (i >= noise.size() || less(cand[j], noise[i])) {
      c = &cand[j++];
    } else {
      n = &noise[i++];
      c = &cand[j++];
    }
    const std::string& path = n != nullptr ? n->path : c->path;
    auto it = fields_.find(path);
    if (it == fields_.end()) {
      if (fields_.size() >= options_.max_fields) {
        ++untracked_;
        continue;
      }
      it = fields_.emplace(path, Counts{}).first;
    }
    Counts& k = it->second;
    ++k.comparisons;
    if (n != nullptr && n->differs) ++k.noise_diffs;
    if (c != nullptr && c->differs) ++k.candidate_diffs;
    if (c != nullptr && c->rel_diff) {
      k.max_rel_diff = std::max(k.max_rel_diff.value_or(0.0), *c->rel_diff);
    }
  }
}

MirrorSummary MirrorAggregator::Summarize() const {
  MirrorSummary s;
  s.compared = compared_;
  s.untracked_observations = untracked_;
  for (const auto& [path, k] : fields_) {
    MirrorFieldResult r;
    r.path = path;
    r.comparisons = k.comparisons;
    r.noise_diffs = k.noise_diffs;
    r.candidate_diffs = k.candidate_diffs;
    r.max_rel_diff = k.max_rel_diff;
    double n = static_cast<double>(k.comparisons);
    r.noise_rate = n > 0 ? k.noise_diffs / n : 0;
    r.candidate_rate = n > 0 ? k.candidate_diffs / n : 0;
    r.excess_rate = std::max(0.0, r.candidate_rate - r.noise_rate);
    if (r.noise_rate > options_.noisy_rate) {
      r.verdict = FieldVerdict::kNoisy;
      ++s.noisy_fields;
    } else if (r.excess_rate > options_.max_diff_rate) {
      r.verdict = FieldVerdict::kDiffers;
      ++s.failing_fields;
    }
    s.fields.push_back(std::move(r));
  }
  std::stable_sort(s.fields.begin(), s.fields.end(),
                   [](const MirrorFieldResult& x, const MirrorFieldResult& y) {
                     int rx = VerdictRank(x.verdict), ry = VerdictRank(y.verdict);
                     if (rx != ry) return rx < ry;
                     double kx = x.verdict == FieldVerdict::kNoisy ? x.noise_rate : x.excess_rate;
                     double ky = y.verdict == FieldVerdict::kNoisy ? y.noise_rate : y.excess_rate;
                     if (kx != ky) return kx > ky;
                     return x.path < y.path;
                   });
  if (compared_ == 0) {
    s.verdict = MirrorVerdict::kInconclusive;
  } else {
    s.verdict = s.failing_fields > 0 ? MirrorVerdict::kFail : MirrorVerdict::kPass;
  }
  return s;
}

json MirrorReportJson(const MirrorRunInfo& run, const MirrorCompareOptions& options,
                      const MirrorSummary& summary) {
  const MirrorTraffic& t = run.traffic;
  json fields = json::array();
  for (const MirrorFieldResult& f : summary.fields) {
    fields.push_back({{"field", f.path},
                      {"comparisons", f.comparisons},
                      {"noise_diffs", f.noise_diffs},
                      {"candidate_diffs", f.candidate_diffs},
                      {"noise_rate", f.noise_rate},
                      {"candidate_rate", f.candidate_rate},
                      {"excess_rate", f.excess_rate},
                      {"max_rel_diff", OptNumber(f.max_rel_diff)},
                      {"verdict", FieldVerdictName(f.verdict)}});
  }
  return {{"schema", "cutover.mirror-report/1"},
          {"primary", run.primary},
          {"secondary", run.secondary},
          {"candidate", run.candidate},
          {"started_at", run.started_at},
          {"finished_at", run.finished_at},
          {"options",
           {{"methods", run.methods},
            {"rel_tol", options.rel_tol},
            {"abs_tol", options.abs_tol},
            {"ignore", options.ignore},
            {"max_diff_rate", options.max_diff_rate},
            {"noisy_rate", options.noisy_rate},
            {"max_fields", options.max_fields},
            {"max_body", run.max_body}}},
          {"traffic",
           {{"received", t.received},
            {"not_mirrored", t.not_mirrored},
            {"mirrored", t.mirrored},
            {"dropped", t.dropped},
            {"primary_errors", t.primary_errors},
            {"copy_errors", t.copy_errors},
            {"compared", t.compared},
            {"too_large", t.too_large}}},
          {"fields_tracked", summary.fields.size()},
          {"untracked_observations", summary.untracked_observations},
          {"failing_fields", summary.failing_fields},
          {"noisy_fields", summary.noisy_fields},
          {"fields", std::move(fields)},
          {"verdict", MirrorVerdictName(summary.verdict)}};
}

std::string MirrorReportTable(const MirrorRunInfo& run, const MirrorSummary& summary,
                              size_t max_rows) {
  const MirrorTraffic& t = run.traffic;
  std::ostringstream out;
  out << "mirror " << run.primary << " (and " << run.secondary << ") vs candidate " << run.candidate
      << "\n";
  out << "  requests " << t.received << ", mirrored " << t.mirrored << ", compared " << t.compared
      << ", dropped " << t.dropped << ", not mirrored " << t.not_mirrored << ", primary errors "
      << t.primary_errors << ", copy errors " << t.copy_errors << ", too large to compare "
      << t.too_large << "\n";
  out << "  fields " << summary.fields.size();
  if (summary.untracked_observations > 0) {
    out << " (" << summary.untracked_observations << " observations of further fields untracked)";
  }
  out << ", " << summary.failing_fields << " differ, " << summary.noisy_fields << " noisy\n";
  size_t rows = 0, hidden = 0;
  for (const MirrorFieldResult& f : summary.fields) {
    if (f.verdict == FieldVerdict::kOk && f.candidate_diffs == 0) continue;
    if (rows == max_rows) {
      ++hidden;
      continue;
    }
    if (rows++ == 0) out << "  verdict  excess   candidate  noise    max rel   field\n";
    char line[128];
    std::snprintf(line, sizeof line, "  %-8s %-8s %-10s %-8s %-9s ",
                  std::string(FieldVerdictName(f.verdict)).c_str(), Percent(f.excess_rate).c_str(),
                  Percent(f.candidate_rate).c_str(), Percent(f.noise_rate).c_str(),
                  f.max_rel_diff ? FormatNumber(*f.max_rel_diff).c_str() : "-");
    out << line << f.path << "\n";
  }
  if (hidden > 0) out << "  ... and " << hidden << " more (see --json)\n";
  out << "verdict: " << MirrorVerdictName(summary.verdict);
  if (summary.verdict == MirrorVerdict::kInconclusive) out << " (no request was compared)";
  out << "\n";
  return out.str();
}

}  // namespace cutover::canary
