// report.html: one self-contained page (inline CSS and SVG, no script, no external load).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/time_util.h"
#include "core/units.h"
#include "report/assess.h"
#include "report/render_util.h"
#include "report/stability_section.h"

namespace cutover::report {
namespace {

using nlohmann::json;

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string Px(double v) { return Num(v, 6); }

constexpr char kStyle[] = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2228;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:30px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 10px;border-bottom:1px solid #d8dce2;padding-bottom:4px}
.verdict{padding:20px 24px;border-radius:8px;color:#fff}
.v-go{background:#1f7a3a}.v-risk{background:#a86400}.v-nogo{background:#b3261e}
.verdict p{margin:4px 0;font-size:16px}
.finding{background:#fff;border-left:5px solid #888;padding:8px 12px;margin:8px 0;border-radius:4px}
.finding.blocker{border-color:#b3261e}.finding.warning{border-color:#d08700}.finding.info{border-color:#5a7fa8}
.finding code{font-size:12px;color:#555}.fix{color:#1f5130}.vals{font-family:ui-monospace,monospace;font-size:12px;color:#444}
table{border-collapse:collapse;background:#fff;width:100%;font-size:13px}
th,td{border:1px solid #d8dce2;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eceff3}tr.differs td{background:#fff6e0}
.bad{color:#b3261e;font-weight:600}.warn{color:#a86400;font-weight:600}.ok{color:#1f7a3a}.na{color:#6b6b6b}
figure{background:#fff;margin:12px 0;padding:10px;border:1px solid #d8dce2;border-radius:6px}
figcaption{font-size:12px;color:#555;margin-top:4px}
svg text{font:11px system-ui,sans-serif;fill:#333}
footer{margin-top:32px;font-size:12px;color:#666}
)";

const char* VerdictClass(const std::string& v) {
  return v == "go" ? "v-go" : v == "no-go" ? "v-nogo" : "v-risk";
}

std::string VerdictWord(const std::string& v) {
  return v == "go" ? "GO" : v == "no-go" ? "NO-GO" : "GO WITH RISKS";
}

const char* VerdictCss(Verdict v) {
  switch (v) {
    case Verdict::kRegression:
    case Verdict::kBroken: return "bad";
    case Verdict::kDrift:
    case Verdict::kMissing: return "warn";
    case Verdict::kNotApplicable:
      return "na";  // not judged: never shown as passing
    default: return "ok";
  }
}

// Horizontal bars on a log2 axis centred on 1.0: the target's speed relative to the source per
// op (geometric mean over its cases of source time / target time).
std::string SpeedChart(const std::vector<CompatRow>& rows) {
  std::map<std::string, std::vector<double>> by_op;
  std::vector<std::string> order;
  for (const CompatRow& r : rows) {
    if (!(r.cmp.speed_ratio > 0) || !std::isfinite(r.cmp.speed_ratio)) continue;
    if (by_op.find(r.cmp.op) == by_op.end()) order.push_back(r.cmp.op);
    by_op[r.cmp.op].push_back(std::log2(r.cmp.speed_ratio));
  }
  if (order.empty()) return "";
  const double label_w = 110, plot_w = 520, row_h = 22, top = 24;
  const double range = 2;  // 0.25x .. 4x
  double h = top + row_h * static_cast<double>(order.size()) + 24;
  double cx = label_w + plot_w / 2;
  auto x_of = [&](double l2) {
    return cx + std::clamp(l2, -range, range) / range * (plot_w / 2);
  };
  std::string s = "<svg class=\"chart\" width=\"" +
                  Px(label_w + plot_w + 60) + "\" height=\"" + Px(h) +
                  "\" role=\"img\" aria-label=\"speed ratio per op\">";
  for (int t = -2; t <= 2; ++t) {
    double x = x_of(t);
    s += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(top - 6) + "\" x2=\"" + Px(x) + "\" y2=\"" +
         Px(h - 20) + "\" stroke=\"" + (t == 0 ? "#333" : "#ddd") + "\"/>";
    s += "<text x=\"" + Px(x) + "\" y=\"" + Px(h - 6) + "\" text-anchor=\"middle\">" +
         Num(std::exp2(t)) + "x</text>";
  }
  s += "<text x=\"" + Px(cx) + "\" y=\"12\" text-anchor=\"middle\">target speed / source speed "
       "(log scale; right = target faster)</text>";
  double y = top;
  for (const std::string& op : order) {
    std::vector<double>& v = by_op[op];
    double mean = 0;
    for (double l : v) mean += l;
    mean /= static_cast<double>(v.size());
    double x0 = std::min(cx, x_of(mean)), x1 = std::max(cx, x_of(mean));
    s += "<text x=\"" + Px(label_w - 6) + "\" y=\"" + Px(y + 15) + "\" text-anchor=\"end\">" +
         Esc(op) + "</text>";
    s += "<rect x=\"" + Px(x0) + "\" y=\"" + Px(y + 4) + "\" width=\"" +
         Px(std::max(1.0, x1 - x0)) + "\" height=\"" + Px(row_h - 8) + "\" fill=\"" +
         (mean >= 0 ? "#2e8b57" : "#c0392b") + "\"><title>" + Esc(op) + ": x" +
         Num(std::exp2(mean)) + "</title></rect>";
    s += "<text x=\"" + Px(x1 + 4) + "\" y=\"" + Px(y + 15) + "\">x" + Num(std::exp2(mean)) +
         "</text>";
    y += row_h;
  }
  return s + "</svg>";
}

// Dots on a log10 axis: each case's error measure q against the float64 truth, source and
// target, with the tolerance (q = 1) marked.
std::string ErrorChart(const std::vector<CompatRow>& rows) {
  std::vector<const CompatRow*> use;
  for (const CompatRow& r : rows) {
    if (r.cmp.verdict == Verdict::kMissing || r.cmp.verdict == Verdict::kNotApplicable) continue;
    if (!std::isfinite(r.cmp.q_source_truth) || !std::isfinite(r.cmp.q_target_truth)) continue;
    use.push_back(&r);
  }
  if (use.empty()) return "";
  const double lo = -8, hi = 2;  // 1e-8 .. 1e2
  // Every case at the left edge (exact, or within 1e-8 of its tolerance on both sides): a line
  // says so instead of a column of dots that shows nothing.
  const double edge = std::pow(10.0, lo);
  if (std::all_of(use.begin(), use.end(), [&](const CompatRow* r) {
        return r->cmp.q_source_truth <= edge && r->cmp.q_target_truth <= edge;
      })) {
    return "<p class=\"chart-summary\">All " + std::to_string(use.size()) +
           " cases are exact or within 1e-8 of their tolerance against float64 truth, on both "
           "sides.</p>";
  }
  // Labels are as wide as the longest case id (about 6.6 px a character at the chart's font),
  // so none is clipped; the plot starts after them.
  size_t longest = 0;
  for (const CompatRow* r : use) longest = std::max(longest, r->cmp.id.size());
  const double label_w = std::max(120.0, 6.6 * static_cast<double>(longest) + 12);
  const double plot_w = 460, row_h = 18, top = 40;
  double h = top + row_h * static_cast<double>(use.size()) + 24;
  auto x_of = [&](double q) {
    double l = q > 0 ? std::log10(q) : lo;
    return label_w + (std::clamp(l, lo, hi) - lo) / (hi - lo) * plot_w;
  };
  std::string s = "<svg class=\"chart\" width=\"" +
                  Px(label_w + plot_w + 20) + "\" height=\"" + Px(h) +
                  "\" role=\"img\" aria-label=\"error against float64 truth\">";
  for (int e = static_cast<int>(lo); e <= static_cast<int>(hi); e += 2) {
    double x = x_of(std::pow(10.0, e));
    s += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(top - 6) + "\" x2=\"" + Px(x) + "\" y2=\"" +
         Px(h - 20) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Px(x) + "\" y=\"" + Px(h - 6) +
         "\" text-anchor=\"middle\">1e" + std::to_string(e) + "</text>";
  }
  double tol = x_of(1.0);
  s += "<line x1=\"" + Px(tol) + "\" y1=\"" + Px(top - 6) + "\" x2=\"" + Px(tol) + "\" y2=\"" +
       Px(h - 20) + "\" stroke=\"#b3261e\" stroke-dasharray=\"4 3\"/>";
  s += "<text x=\"" + Px(label_w) + "\" y=\"12\">error / tolerance against float64 truth (log "
       "scale; dashed line = tolerance)</text><circle cx=\"" +
       Px(label_w + 4) + "\" cy=\"24\" r=\"4\" fill=\"#2f6db5\"/><text x=\"" +
       Px(label_w + 12) + "\" y=\"28\">source</text><rect x=\"" + Px(label_w + 62) +
       "\" y=\"20\" width=\"8\" height=\"8\" fill=\"#e07b00\"/><text x=\"" + Px(label_w + 74) +
       "\" y=\"28\">target</text>";
  double y = top;
  for (const CompatRow* r : use) {
    s += "<text x=\"" + Px(label_w - 6) + "\" y=\"" + Px(y + 12) + "\" text-anchor=\"end\">" +
         Esc(r->cmp.id) + "</text>";
    s += "<circle cx=\"" + Px(x_of(r->cmp.q_source_truth)) + "\" cy=\"" + Px(y + 8) +
         "\" r=\"4\" fill=\"#2f6db5\"><title>source q=" + Num(r->cmp.q_source_truth) +
         "</title></circle>";
    s += "<rect x=\"" + Px(x_of(r->cmp.q_target_truth) - 4) + "\" y=\"" + Px(y + 4) +
         "\" width=\"8\" height=\"8\" fill=\"#e07b00\"><title>target q=" +
         Num(r->cmp.q_target_truth) + "</title></rect>";
    y += row_h;
  }
  return s + "</svg>";
}

// Paired bars: each case's rate as a fraction of its side's measured ceiling of that unit.
std::string CeilingChart(const std::vector<CompatRow>& rows) {
  std::vector<const CompatRow*> use;
  for (const CompatRow& r : rows) {
    if (r.source_fraction > 0 || r.target_fraction > 0) use.push_back(&r);
  }
  if (use.empty()) return "";
  const double label_w = 300, plot_w = 400, row_h = 22, top = 24;
  double h = top + row_h * static_cast<double>(use.size()) + 24;
  std::string s = "<svg class=\"chart\" width=\"" +
                  Px(label_w + plot_w + 60) + "\" height=\"" + Px(h) +
                  "\" role=\"img\" aria-label=\"fraction of measured ceilings\">";
  for (int p = 0; p <= 100; p += 25) {
    double x = label_w + plot_w * p / 100.0;
    s += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(top - 6) + "\" x2=\"" + Px(x) + "\" y2=\"" +
         Px(h - 20) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Px(x) + "\" y=\"" + Px(h - 6) +
         "\" text-anchor=\"middle\">" + std::to_string(p) + "%</text>";
  }
  s += "<text x=\"" + Px(label_w) + "\" y=\"12\">fraction of the side's measured ceiling "
       "(blue source, orange target)</text>";
  double y = top;
  for (const CompatRow* r : use) {
    s += "<text x=\"" + Px(label_w - 6) + "\" y=\"" + Px(y + 14) + "\" text-anchor=\"end\">" +
         Esc(r->cmp.id.substr(0, 48)) + "</text>";
    double ws = plot_w * std::clamp(r->source_fraction, 0.0, 1.0);
    double wt = plot_w * std::clamp(r->target_fraction, 0.0, 1.0);
    s += "<rect x=\"" + Px(label_w) + "\" y=\"" + Px(y + 3) + "\" width=\"" + Px(ws) +
         "\" height=\"7\" fill=\"#2f6db5\"><title>source " + Num(100 * r->source_fraction) +
         "%</title></rect>";
    s += "<rect x=\"" + Px(label_w) + "\" y=\"" + Px(y + 11) + "\" width=\"" + Px(wt) +
         "\" height=\"7\" fill=\"#e07b00\"><title>target " + Num(100 * r->target_fraction) +
         "%</title></rect>";
    y += row_h;
  }
  return s + "</svg>";
}

// The canary's percentage per step, as a step line.
std::string CanaryChart(const json& steps) {
  std::vector<double> pct;
  std::vector<std::string> outcome;
  for (const json& s : steps) {
    pct.push_back(std::clamp(NumAt(s, "canary_percent"), 0.0, 100.0));
    outcome.push_back(StrAt(s, "outcome"));
  }
  if (pct.empty()) return "";
  const double left = 40, plot_w = 560, plot_h = 120, top = 14;
  double step_w = plot_w / static_cast<double>(pct.size());
  std::string s = "<svg class=\"chart\" width=\"" +
                  Px(left + plot_w + 20) + "\" height=\"" + Px(top + plot_h + 30) +
                  "\" role=\"img\" aria-label=\"canary weight per step\">";
  for (int p = 0; p <= 100; p += 50) {
    double y = top + plot_h * (1 - p / 100.0);
    s += "<line x1=\"" + Px(left) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(left + plot_w) +
         "\" y2=\"" + Px(y) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Px(left - 4) + "\" y=\"" +
         Px(y + 4) + "\" text-anchor=\"end\">" + std::to_string(p) + "%</text>";
  }
  for (size_t i = 0; i < pct.size(); ++i) {
    double x = left + step_w * static_cast<double>(i);
    double y = top + plot_h * (1 - pct[i] / 100.0);
    const char* fill = outcome[i] == "rolled-back" ? "#c0392b" : "#2f6db5";
    s += "<rect x=\"" + Px(x + 2) + "\" y=\"" + Px(y) + "\" width=\"" + Px(step_w - 4) +
         "\" height=\"" + Px(top + plot_h - y) + "\" fill=\"" + fill + "\" opacity=\"0.8\"><title>step " +
         std::to_string(i) + ": " + Num(pct[i]) + "% " + Esc(outcome[i]) + "</title></rect>";
    s += "<text x=\"" + Px(x + step_w / 2) + "\" y=\"" + Px(top + plot_h + 14) +
         "\" text-anchor=\"middle\">" + std::to_string(i) + "</text>";
  }
  return s + "</svg>";
}

std::string Figure(const std::string& id, const std::string& svg, const std::string& caption) {
  if (svg.empty()) return "";
  return "<figure id=\"" + id + "\">" + svg + "<figcaption>" + Esc(caption) +
         "</figcaption></figure>\n";
}

// The document's head and the verdict banner.
std::string HeadHtml(const Assessment& a) {
  std::string h;
  h += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src "
       "'unsafe-inline'; img-src data:\">"
       "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
       "<title>cutover assessment: " +
       VerdictWord(a.verdict) + "</title><style>" + kStyle + "</style></head><body><main>\n";
  h += "<header class=\"verdict " + std::string(VerdictClass(a.verdict)) +
       "\"><h1 id=\"verdict\" data-verdict=\"" + a.verdict + "\">" + VerdictWord(a.verdict) +
       "</h1><p>" + Esc(a.headline) + "</p><p>" + std::to_string(a.Count("blocker")) +
       " blockers, " + std::to_string(a.Count("warning")) + " warnings, " +
       std::to_string(a.Count("info")) + " notes &middot; mode " +
       std::string(probe::DiffModeName(a.inputs.mode)) + (a.inputs.redacted ? " &middot; redacted" : "") +
       "</p></header>\n";
  return h;
}

// What was assessed, and with what input.
std::string CoverageHtml(const Assessment& a) {
  std::string h;
  h += "<section id=\"coverage\"><h2>Coverage</h2><table><tr><th>area</th><th>assessed</th>"
       "<th>with</th></tr>\n";
  for (const CoverageRow& c : a.coverage) {
    h += "<tr><td>" + Esc(c.area) + "</td><td class=\"" + (c.assessed ? "ok\">yes" : "warn\">no") +
         "</td><td>" + Esc(c.input) + "</td></tr>\n";
  }
  h += "</table></section>\n";
  return h;
}

// Blockers, warnings and notes, each with its fix.
std::string FindingsHtml(const Assessment& a) {
  std::string h;
  h += "<section id=\"findings\">";
  for (const char* sev : {"blocker", "warning", "info"}) {
    if (a.Count(sev) == 0) continue;
    std::string title = std::string(sev) == "blocker"   ? "Blockers"
                        : std::string(sev) == "warning" ? "Warnings"
                                                        : "Notes";
    h += "<h2>" + title + "</h2>\n";
    for (const ReportFinding& f : a.findings) {
      if (f.severity != sev) continue;
      h += "<div class=\"finding " + f.severity + "\"><code>" + Esc(f.code) + " &middot; " +
           Esc(f.component) + "</code><div>" + Esc(f.message) + "</div>";
      if (!f.source.empty() || !f.target.empty()) {
        h += "<div class=\"vals\">" + Esc(f.source.empty() ? "-" : f.source) + " &rarr; " +
             Esc(f.target.empty() ? "-" : f.target) + "</div>";
      }
      if (!f.fix.empty()) h += "<div class=\"fix\">fix: " + Esc(f.fix) + "</div>";
      h += "</div>\n";
    }
  }
  if (a.findings.empty()) h += "<h2>Findings</h2><p>None.</p>";
  h += "</section>\n";
  return h;
}

// The two hosts side by side, differing rows marked.
std::string HostsHtml(const Assessment& a) {
  std::string h;
  h += "<section id=\"hosts\"><h2>Hosts</h2><table><tr><th></th><th>source</th><th>target</th>"
       "</tr>\n";
  for (const HostRow& r : a.hosts) {
    h += std::string("<tr") + (r.differs ? " class=\"differs\"" : "") + "><th>" + Esc(r.field) +
         "</th><td>" + Esc(r.source) + "</td><td>" + Esc(r.target) + "</td></tr>\n";
  }
  h += "</table></section>\n";
  return h;
}

// The compat section: the three charts, the case table and the stability section.
std::string CompatHtml(const Assessment& a) {
  if (!a.comparison) return "";
  std::string h;
  h += "<section id=\"compat\"><h2>Compat: " + Esc(a.inputs.compat_source->backend) + " vs " +
       Esc(a.inputs.compat_target->backend) + "</h2>\n";
  h += Figure("chart-speed", SpeedChart(a.compat),
              "Per op: geometric mean over its cases of source median time / target median time.");
  h += Figure("chart-error", ErrorChart(a.compat),
              "Per case: q = max |output - truth| / (atol + rtol * |truth|) at the sampled "
              "positions; q <= 1 is within tolerance. A dot at the left edge is exact.");
  h += Figure("chart-ceiling", CeilingChart(a.compat),
              "Per case: its rate as a fraction of the same side's best measured rate of that "
              "unit (GB/s: copy and triad; GFLOP/s: the fastest GEMM).");
  h += "<table><tr><th>case</th><th>numerics</th><th>speed</th><th>target/source speed (95% CI)</th>"
       "<th>q source</th><th>q target</th><th>rate source</th><th>rate target</th><th>reason</th></tr>\n";
  for (const CompatRow& r : a.compat) {
    const CaseComparison& k = r.cmp;
    const bool na = k.verdict == Verdict::kNotApplicable;
    std::string speed_css = na ? "na" : k.speed == SpeedVerdict::kSlower ? "warn" : "ok";
    h += "<tr><td>" + Esc(k.id) + "</td><td class=\"" + VerdictCss(k.verdict) + "\">" +
         std::string(VerdictName(k.verdict)) + "</td><td class=\"" + speed_css + "\">" +
         std::string(SpeedVerdictName(k.speed)) + "</td><td>" +
         (k.speed_ratio > 0
              ? "x" + Num(k.speed_ratio) + " [" + Num(k.speed_lo) + ", " + Num(k.speed_hi) + "]"
              : "-") +
         "</td><td>" + (na ? std::string("n/a") : Num(k.q_source_truth)) + "</td><td>" +
         (na ? std::string("n/a") : Num(k.q_target_truth)) + "</td><td>" +
         (r.source_rate > 0 ? Num(r.source_rate) + " " + Esc(r.rate_unit) : "-") + "</td><td>" +
         (r.target_rate > 0 ? Num(r.target_rate) + " " + Esc(r.rate_unit) : "-") + "</td><td>" +
         Esc(k.reason) + "</td></tr>\n";
  }
  h += "</table></section>\n";
  h += StabilityHtml(a);
  return h;
}

// --price: work per price unit on each side.
std::string PriceHtml(const Assessment& a) {
  if (a.cost.empty()) return "";
  std::string h;
  h += "<section id=\"cost\"><h2>Performance per cost</h2><p>Prices per GPU-hour: source " +
       Num(*a.inputs.price_source, 4) + ", target " + Num(*a.inputs.price_target, 4) +
       ". Rates are geometric means over the cases measured on both sides.</p><table><tr>"
       "<th>unit</th><th>cases</th><th>source rate</th><th>target rate</th><th>source work per "
       "price unit</th><th>target work per price unit</th><th>target / source</th></tr>\n";
  for (const CostRow& c : a.cost) {
    std::string work = c.rate_unit == "GB/s" ? " GB" : " GFLOP";
    h += "<tr><td>" + Esc(c.rate_unit) + "</td><td>" + std::to_string(c.cases) + "</td><td>" +
         Num(c.source_rate) + "</td><td>" + Num(c.target_rate) + "</td><td>" +
         Num(c.source_per_price) + work + "</td><td>" + Num(c.target_per_price) + work +
         "</td><td>" + Num(c.target_per_price / c.source_per_price) + "</td></tr>\n";
  }
  h += "</table></section>\n";
  return h;
}

// The datasync plan in a few lines.
std::string DatasyncHtml(const Assessment& a) {
  if (!a.inputs.datasync_plan) return "";
  std::string h;
  const json& p = *a.inputs.datasync_plan;
  h += "<section id=\"datasync\"><h2>Data migration</h2><p>" + Esc(StrAt(p, "source", "?")) +
       " &rarr; " + Esc(StrAt(p, "store", "?")) + "</p><ul>";
  for (const std::string& line : DatasyncSummary(p)) h += "<li>" + Esc(line) + "</li>";
  h += "</ul></section>\n";
  return h;
}

// The rollout: its outcome, the failing checks' figures and the applied weights per step.
std::string CanaryHtml(const Assessment& a) {
  if (!a.inputs.canary_history) return "";
  std::string h;
  const json& hist = *a.inputs.canary_history;
  const json r = hist.contains("rollout") ? hist["rollout"] : json();
  h += "<section id=\"canary\"><h2>Canary</h2><p>rollout " + Esc(StrAt(r, "name", "?")) + ": <b>" +
       Esc(StrAt(r, "status", "?")) + "</b> " + Esc(StrAt(r, "reason")) + "</p>\n";
  json steps = hist.contains("steps") && hist["steps"].is_array() ? hist["steps"] : json::array();
  h += Figure("chart-canary", CanaryChart(steps), "Canary traffic percentage per step.");
  // The failing checks with their figures, as the canary finding states them.
  for (const ReportFinding& f : a.findings) {
    if (f.component == "canary")
      h += "<p class=\"" + std::string(f.severity == "blocker" ? "bad" : "warn") + "\">" +
           Esc(f.message) + "</p>\n";
  }
  h += "<table><tr><th>step</th><th>kind</th><th>canary %</th><th>outcome</th>"
       "<th>applied (weights read back)</th></tr>\n";
  for (const json& s : steps) {
    // The weights the load balancer reported after the step was applied, and when.
    std::string applied = "-";
    if (s.contains("applied_at") && s["applied_at"].is_number()) {
      applied = Rfc3339Utc(s["applied_at"].get<double>());
      if (s.contains("readback") && s["readback"].is_object()) {
        std::string w;
        for (auto it = s["readback"].begin(); it != s["readback"].end(); ++it) {
          w += (w.empty() ? "" : ", ") + it.key() + " " + it.value().dump();
        }
        applied += " (" + w + ")";
      }
    }
    h += "<tr><td>" + Num(NumAt(s, "index"), 6) + "</td><td>" + Esc(StrAt(s, "kind")) +
         "</td><td>" + Num(NumAt(s, "canary_percent"), 6) + "</td><td>" +
         Esc(StrAt(s, "outcome", "-")) + "</td><td>" + Esc(applied) + "</td></tr>\n";
  }
  h += "</table></section>\n";
  return h;
}

// When and from which inputs the report was generated.
std::string FooterHtml(const Assessment& a) {
  std::string h;
  h += "<footer>Generated " + Esc(a.inputs.generated_at) + " by cutover. Inputs:";
  for (const auto& [k, v] : a.inputs.input_paths) h += " " + Esc(k) + " = " + Esc(v) + ";";
  h += "</footer>\n</main></body></html>\n";
  return h;
}

}  // namespace

std::string RenderHtml(const Assessment& a) {
  std::string h = HeadHtml(a) + CoverageHtml(a) + FindingsHtml(a) + HostsHtml(a) + CompatHtml(a) +
                  PriceHtml(a);
  if (a.cost_model) h += CostHtml(*a.cost_model, a.inputs.redacted);
  if (a.cluster) h += ClusterHtml(*a.cluster);
  return h + DatasyncHtml(a) + CanaryHtml(a) + FooterHtml(a);
}

}  // namespace cutover::report
