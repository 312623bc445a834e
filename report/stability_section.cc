#include "report/stability_section.h"

#include <algorithm>
#include <cmath>

#include "core/junit.h"
#include "report/render_util.h"

namespace cutover::report {
namespace {

using nlohmann::json;

std::string Pct(double v) { return Num(100 * v, 3) + "%"; }

std::string Tail(const Spread& s) { return s.assessed ? Num(s.Tail(), 3) : "-"; }

int CountVerdict(const Assessment& a, StabilityVerdict v) {
  return static_cast<int>(std::count_if(a.compat.begin(), a.compat.end(), [v](const CompatRow& r) {
    return r.cmp.stability.verdict == v && r.cmp.stability.source.reps > 0;
  }));
}

std::string Summary(const Assessment& a) {
  const StabilityVerdict overall = a.comparison->Stability();
  const int assessed =
      static_cast<int>(a.compat.size()) - CountVerdict(a, StabilityVerdict::kNotAssessed);
  if (overall == StabilityVerdict::kNotAssessed) {
    return "Stability not assessed: a verdict needs at least " + std::to_string(kStabilityMinReps) +
           " repetitions of a case on each side (record both sides with compat run --soak).";
  }
  std::string s = "Target " + std::string(StabilityVerdictName(overall)) +
                  " overall: " + std::to_string(CountVerdict(a, StabilityVerdict::kNoisier)) +
                  " noisier, " + std::to_string(CountVerdict(a, StabilityVerdict::kSteadier)) +
                  " steadier, " + std::to_string(CountVerdict(a, StabilityVerdict::kSame)) +
                  " the same, of " + std::to_string(assessed) + " cases assessed.";
  if (CountVerdict(a, StabilityVerdict::kNotAssessed) > 0) {
    s += " " + std::to_string(CountVerdict(a, StabilityVerdict::kNotAssessed)) +
         " cases not assessed (under " + std::to_string(kStabilityMinReps) + " repetitions).";
  }
  return s;
}

// Paired bars on a log axis: each assessed case's CV, source and target.
std::string CvChart(const Assessment& a) {
  std::vector<const CompatRow*> use;
  for (const CompatRow& r : a.compat) {
    const StabilityComparison& s = r.cmp.stability;
    if (s.verdict != StabilityVerdict::kNotAssessed) use.push_back(&r);
  }
  if (use.empty()) return "";
  const double label_w = 300, plot_w = 420, row_h = 22, top = 24;
  const double lo = -4, hi = 0;  // CV 0.01% .. 100%
  const double h = top + row_h * static_cast<double>(use.size()) + 24;
  auto x_of = [&](double cv) {
    const double l = cv > 0 ? std::log10(cv) : lo;
    return label_w + (std::clamp(l, lo, hi) - lo) / (hi - lo) * plot_w;
  };
  std::string s = "<svg class=\"chart\" width=\"" + Num(label_w + plot_w + 120, 6) +
                  "\" height=\"" + Num(h, 6) +
                  "\" role=\"img\" aria-label=\"coefficient of variation per case\">";
  for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); ++e) {
    const double x = x_of(std::pow(10.0, e));
    s += "<line x1=\"" + Num(x, 6) + "\" y1=\"" + Num(top - 6, 6) + "\" x2=\"" + Num(x, 6) +
         "\" y2=\"" + Num(h - 20, 6) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Num(x, 6) + "\" y=\"" +
         Num(h - 6, 6) + "\" text-anchor=\"middle\">" + Pct(std::pow(10.0, e)) + "</text>";
  }
  s += "<text x=\"" + Num(label_w, 6) +
       "\" y=\"12\">coefficient of variation of the repetitions (log scale; blue source, orange "
       "target)</text>";
  double y = top;
  for (const CompatRow* r : use) {
    const StabilityComparison& st = r->cmp.stability;
    const bool noisier = st.verdict == StabilityVerdict::kNoisier;
    s += "<text x=\"" + Num(label_w - 6, 6) + "\" y=\"" + Num(y + 14, 6) +
         "\" text-anchor=\"end\"" + (noisier ? " fill=\"#b3261e\"" : "") + ">" +
         XmlEscape(r->cmp.id.substr(0, 48)) + "</text>";
    s += "<rect x=\"" + Num(label_w, 6) + "\" y=\"" + Num(y + 3, 6) + "\" width=\"" +
         Num(std::max(1.0, x_of(st.source.cv) - label_w), 6) +
         "\" height=\"7\" fill=\"#2f6db5\"><title>source CV " + Pct(st.source.cv) +
         "</title></rect>";
    s += "<rect x=\"" + Num(label_w, 6) + "\" y=\"" + Num(y + 11, 6) + "\" width=\"" +
         Num(std::max(1.0, x_of(st.target.cv) - label_w), 6) +
         "\" height=\"7\" fill=\"#e07b00\"><title>target CV " + Pct(st.target.cv) +
         "</title></rect>";
    s += "<text x=\"" + Num(std::max(x_of(st.source.cv), x_of(st.target.cv)) + 4, 6) + "\" y=\"" +
         Num(y + 14, 6) + "\">" + std::string(StabilityVerdictName(st.verdict)) + "</text>";
    y += row_h;
  }
  return s + "</svg>";
}

}  // namespace

json StabilityJson(const Assessment& a) {
  return {{"verdict", std::string(StabilityVerdictName(a.comparison->Stability()))},
          {"min_reps", kStabilityMinReps},
          {"summary", Summary(a)}};
}

std::string StabilityMarkdown(const Assessment& a) {
  std::string md = "## Stability\n\n" + Summary(a) + "\n\n";
  bool any = false;
  for (const CompatRow& r : a.compat) {
    const StabilityComparison& s = r.cmp.stability;
    if (s.verdict == StabilityVerdict::kNotAssessed) continue;
    if (!any) {
      md +=
          "| case | verdict | CV source / target | p99/p50 source / target | longest slow run "
          "source / target | likely cause |\n|---|---|---|---|---|---|\n";
      any = true;
    }
    md += "| " + r.cmp.id + " | " + std::string(StabilityVerdictName(s.verdict)) + " | " +
          Pct(s.source.cv) + " / " + Pct(s.target.cv) + " | " + Tail(s.source) + " / " +
          Tail(s.target) + " | " + std::to_string(s.source.longest_slow_run) + " / " +
          std::to_string(s.target.longest_slow_run) + " | " + (s.cause.empty() ? "-" : s.cause) +
          " |\n";
  }
  return md + "\n";
}

std::string StabilityHtml(const Assessment& a) {
  std::string h =
      "<section id=\"stability\"><h2>Stability</h2><p>" + XmlEscape(Summary(a)) + "</p>\n";
  const std::string chart = CvChart(a);
  if (!chart.empty()) {
    h += "<figure id=\"chart-stability\">" + chart +
         "<figcaption>Per case: the spread of its repetitions on each side. A noisier target "
         "needs the CV ratio's 95% interval above 1, a ratio of at least 1.75 and 2 points of "
         "CV (or the same for p99/p50).</figcaption></figure>\n";
    h += "<table><tr><th>case</th><th>verdict</th><th>reps</th><th>CV</th><th>p99/p50</th>"
         "<th>max/min</th><th>longest slow run</th><th>likely cause</th></tr>\n";
    for (const CompatRow& r : a.compat) {
      const StabilityComparison& s = r.cmp.stability;
      if (s.verdict == StabilityVerdict::kNotAssessed) continue;
      const char* css = s.verdict == StabilityVerdict::kNoisier ? "warn" : "ok";
      h += "<tr><td>" + XmlEscape(r.cmp.id) + "</td><td class=\"" + css + "\">" +
           std::string(StabilityVerdictName(s.verdict)) + "</td><td>" +
           std::to_string(s.source.reps) + " / " + std::to_string(s.target.reps) + "</td><td>" +
           Pct(s.source.cv) + " / " + Pct(s.target.cv) + "</td><td>" + Tail(s.source) + " / " +
           Tail(s.target) + "</td><td>" + Num(s.source.max_over_min, 3) + " / " +
           Num(s.target.max_over_min, 3) + "</td><td>" + std::to_string(s.source.longest_slow_run) +
           " / " + std::to_string(s.target.longest_slow_run) + "</td><td>" +
           XmlEscape(s.cause.empty() ? "-" : s.cause) + "</td></tr>\n";
    }
    h += "</table>\n";
  }
  return h + "</section>\n";
}

}  // namespace cutover::report
