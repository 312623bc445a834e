// The cost section of the report: JSON, Markdown, HTML and the SVG chart (report/cost.h).
#include <algorithm>
#include <cmath>
#include <string>

#include "core/junit.h"
#include "report/cost.h"
#include "report/render_util.h"

namespace cutover::report {
namespace {

using nlohmann::json;

// The chart's range of utilization.
constexpr double kUMin = 0.05, kUMax = 1.0;

std::string Side(const CostSide& s, const std::string& which, bool redact) {
  if (redact || s.name.empty()) return which;
  return which + " (" + s.name + ")";
}

std::string Label(const CostOption& o, bool redact) { return redact ? o.kind : o.label; }

std::string Money(double v) { return Num(v, 4); }

std::string Months(double m) { return m < 0 ? "never" : Num(m, 3); }

std::string BreakEvenText(double u) { return u > 1 ? "never (" + Num(u, 3) + " > 1)" : Num(u, 3); }

json OwnedJson(const OwnedCost& o) {
  return {{"capital", o.capital}, {"financing", o.financing},
          {"power", o.power},     {"facility", o.facility},
          {"staff", o.staff},     {"network_storage", o.network_storage},
          {"total", o.total},     {"capital_per_gpu", o.capital_per_gpu}};
}

json SideJson(const CostSide& s, bool redact) {
  json j = {{"name", redact || s.name.empty() ? json(nullptr) : json(s.name)},
            {"supplier", redact || s.supplier.empty() ? json(nullptr) : json(s.supplier)}};
  if (s.self_built) {
    const SelfBuiltCost& b = *s.self_built;
    j["self_built"] = {{"capital_per_server", b.capital_per_server},
                       {"gpus_per_server", b.gpus_per_server},
                       {"depreciation_years", b.depreciation_years},
                       {"power_kw_per_server", b.power_kw_per_server},
                       {"pue", b.pue},
                       {"price_per_kwh", b.price_per_kwh},
                       {"facility_per_server_month", b.facility_per_server_month},
                       {"staff_per_person_month", b.staff_per_person_month},
                       {"servers_per_person", b.servers_per_person},
                       {"network_storage_per_server_month", b.network_storage_per_server_month},
                       {"financing_rate", b.financing_rate}};
    j["managed"] = nullptr;
  } else {
    j["self_built"] = nullptr;
    json list = json::array();
    for (const ManagedOption& o : s.managed) {
      list.push_back({{"name", redact || o.name.empty() ? json(nullptr) : json(o.name)},
                      {"kind", std::string(PriceKindName(o.kind))},
                      {"price_per_gpu_hour", o.price_per_gpu_hour},
                      {"interruption_share", o.interruption_share},
                      {"term_months", o.term_months}});
    }
    j["managed"] = list;
  }
  return j;
}

// The chart's y range: from 0 to a little above the largest flat line and the fixed lines at
// U = 0.25 (steeper curves leave the plot and are clipped).
double ChartTop(const CostReport& c) {
  double top = 0;
  for (const CostOption& o : c.options) {
    top = std::max(top, o.CostAt(o.fixed ? 0.25 : 1.0, c.model.goodput));
  }
  return top * 1.1;
}

// The section's first paragraph: what a unit of work is and the figures it rests on; the target's
// units per GPU-hour between `em` and `em_end` (HTML bold, nothing in Markdown). `cur` as the
// output escapes it.
std::string UnitOfWorkText(const CostReport& c, const std::string& cur, const char* em,
                           const char* em_end) {
  return "A unit of work is what one source GPU does in one busy, useful hour of the workload "
         "mix (" +
         std::to_string(c.mix.size()) + " compat cases); the target does " + em +
         Num(c.speed_ratio, 4) + em_end +
         " units per GPU-hour (target/source, above 1 = target faster). Utilization " +
         Num(c.model.utilization, 3) + ", goodput " + Num(c.model.goodput, 3) + ". Money in " +
         cur + ".";
}

}  // namespace

json CostReportToJson(const CostReport& c, bool redact) {
  json options = json::array();
  for (const CostOption& o : c.options) {
    options.push_back({{"side", o.side},
                       {"label", Label(o, redact)},
                       {"kind", o.kind},
                       {"fixed", o.fixed},
                       {"per_gpu_hour", o.per_gpu_hour},
                       {"effective_per_gpu_hour", o.effective_per_gpu_hour},
                       {"throughput", o.throughput},
                       {"cost_per_unit", o.cost_per_unit}});
  }
  json breaks = json::array();
  for (const BreakEven& b : c.break_evens) {
    breaks.push_back({{"owned", b.owned},
                      {"rented", b.rented},
                      {"utilization", b.utilization},
                      {"owning_ever_cheaper", b.utilization <= 1},
                      {"months_to_recover",
                       b.months_to_recover < 0 ? json(nullptr) : json(b.months_to_recover)}});
  }
  json mix = json::array();
  for (const MixCase& m : c.mix) {
    mix.push_back(
        {{"id", m.id}, {"share", m.share}, {"source_s", m.source_s}, {"target_s", m.target_s}});
  }
  json workload = json::object();
  for (const WorkloadShare& w : c.model.workload) workload[w.match] = w.share;
  return {{"currency", c.model.currency},
          {"unit_of_work", "what one source GPU does in one busy, useful hour of the mix"},
          {"utilization", c.model.utilization},
          {"goodput", c.model.goodput},
          {"workload", c.model.workload.empty() ? json(nullptr) : workload},
          {"source", SideJson(c.model.source, redact)},
          {"target", SideJson(c.model.target, redact)},
          {"speed_ratio", c.speed_ratio},
          {"mix", mix},
          {"source_owned", c.source_owned ? OwnedJson(*c.source_owned) : json(nullptr)},
          {"target_owned", c.target_owned ? OwnedJson(*c.target_owned) : json(nullptr)},
          {"options", options},
          {"break_evens", breaks},
          {"cheapest", c.cheapest}};
}

std::string CostMarkdown(const CostReport& c, bool redact, const std::string& chart_file) {
  const std::string cur = c.model.currency;
  std::string md = "## Cost per unit of work\n\n";
  md += UnitOfWorkText(c, cur, "", "") + "\n\n";
  md += "| side | option | kind | " + cur + " per GPU-hour | units per GPU-hour | " + cur +
        " per unit at U=" + Num(c.model.utilization, 3) + " |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < c.options.size(); ++i) {
    const CostOption& o = c.options[i];
    const CostSide& s = o.side == "source" ? c.model.source : c.model.target;
    md += "| " + Side(s, o.side, redact) + " | " + Label(o, redact) + " | " + o.kind +
          (o.fixed ? " (fixed)" : " (per use)") + " | " + Money(o.effective_per_gpu_hour) + " | " +
          Num(o.throughput, 4) + " | " + Money(o.cost_per_unit) +
          (i == c.cheapest ? " (cheapest)" : "") + " |\n";
  }
  md += "\n";
  for (const auto* owned : {&c.source_owned, &c.target_owned}) {
    if (!*owned) continue;
    const OwnedCost& o = **owned;
    md += std::string("Owning (") + (owned == &c.source_owned ? "source" : "target") + "), " + cur +
          " per GPU-hour: capital " + Money(o.capital) + ", financing " + Money(o.financing) +
          ", power " + Money(o.power) + ", facility " + Money(o.facility) + ", staff " +
          Money(o.staff) + ", network and storage " + Money(o.network_storage) + ", total " +
          Money(o.total) + ".\n\n";
  }
  if (!c.break_evens.empty()) {
    md +=
        "| owned | against (per use) | break-even utilization | months to recover the capital "
        "at U=" +
        Num(c.model.utilization, 3) + " |\n|---|---|---|---|\n";
    for (const BreakEven& b : c.break_evens) {
      md += "| " + c.options[b.owned].side + " " + Label(c.options[b.owned], redact) + " | " +
            c.options[b.rented].side + " " + Label(c.options[b.rented], redact) + " | " +
            BreakEvenText(b.utilization) + " | " + Months(b.months_to_recover) + " |\n";
    }
    md +=
        "\nOwning costs less per unit of work above the break-even utilization. Reserved and "
        "committed terms are paid every hour like owning: they are compared at the file's "
        "utilization above, not given a break-even.\n\n";
  }
  if (!chart_file.empty()) {
    md += "![cost per unit of work against utilization](" + chart_file + ")\n\n";
  }
  return md;
}

std::string CostChartSvg(const CostReport& c, bool redact) {
  const double left = 70, plot_w = 560, top = 30, plot_h = 260, legend_w = 230;
  const double ymax = ChartTop(c);
  auto x_of = [&](double u) { return left + (u - kUMin) / (kUMax - kUMin) * plot_w; };
  auto y_of = [&](double v) { return top + plot_h * (1 - std::min(v, ymax * 1.2) / ymax); };
  static const char* kColors[] = {"#2f6db5", "#e07b00", "#2e8b57", "#8e44ad",
                                  "#c0392b", "#16a085", "#7f8c8d", "#d35400"};
  const double w = left + plot_w + legend_w, h = top + plot_h + 50;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" + Num(w, 6) +
                  "\" height=\"" + Num(h, 6) + "\" viewBox=\"0 0 " + Num(w, 6) + " " + Num(h, 6) +
                  "\" role=\"img\" aria-label=\"cost per unit of work against utilization\">";
  s += "<defs><clipPath id=\"cost-plot\"><rect x=\"" + Num(left, 6) + "\" y=\"" + Num(top, 6) +
       "\" width=\"" + Num(plot_w, 6) + "\" height=\"" + Num(plot_h, 6) + "\"/></clipPath></defs>";
  s += "<text x=\"" + Num(left, 6) + "\" y=\"14\" font-size=\"11\" font-family=\"sans-serif\">" +
       c.model.currency + " per unit of work against utilization (share of hours busy)</text>";
  for (int i = 0; i <= 4; ++i) {
    const double v = ymax * i / 4, y = y_of(v);
    s += "<line x1=\"" + Num(left, 6) + "\" y1=\"" + Num(y, 6) + "\" x2=\"" +
         Num(left + plot_w, 6) + "\" y2=\"" + Num(y, 6) + "\" stroke=\"#e3e3e3\"/><text x=\"" +
         Num(left - 4, 6) + "\" y=\"" + Num(y + 4, 6) +
         "\" text-anchor=\"end\" font-size=\"11\" font-family=\"sans-serif\">" + Num(v, 3) +
         "</text>";
  }
  for (int i = 0; i <= 5; ++i) {
    const double u = 0.2 * i < kUMin ? kUMin : 0.2 * i, x = x_of(u);
    s += "<line x1=\"" + Num(x, 6) + "\" y1=\"" + Num(top, 6) + "\" x2=\"" + Num(x, 6) +
         "\" y2=\"" + Num(top + plot_h, 6) + "\" stroke=\"#e3e3e3\"/><text x=\"" + Num(x, 6) +
         "\" y=\"" + Num(top + plot_h + 16, 6) +
         "\" text-anchor=\"middle\" font-size=\"11\" font-family=\"sans-serif\">" + Num(u, 2) +
         "</text>";
  }
  const double xu = x_of(c.model.utilization);
  s += "<line x1=\"" + Num(xu, 6) + "\" y1=\"" + Num(top, 6) + "\" x2=\"" + Num(xu, 6) +
       "\" y2=\"" + Num(top + plot_h, 6) +
       "\" stroke=\"#555\" stroke-dasharray=\"4 3\"><title>the file's utilization " +
       Num(c.model.utilization, 3) + "</title></line>";
  s += "<text x=\"" + Num(left + plot_w / 2, 6) + "\" y=\"" + Num(top + plot_h + 34, 6) +
       "\" text-anchor=\"middle\" font-size=\"11\" font-family=\"sans-serif\">utilization "
       "(dashed: the file's, " +
       Num(c.model.utilization, 3) + ")</text>";
  for (size_t i = 0; i < c.options.size(); ++i) {
    const CostOption& o = c.options[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string pts;
    for (int k = 0; k <= 95; ++k) {
      const double u = kUMin + (kUMax - kUMin) * k / 95.0;
      pts += (k ? " " : "") + Num(x_of(u), 6) + "," + Num(y_of(o.CostAt(u, c.model.goodput)), 6);
    }
    const std::string name = o.side + " " + Label(o, redact);
    s += "<polyline class=\"cost-line\" clip-path=\"url(#cost-plot)\" fill=\"none\" stroke=\"" +
         std::string(color) + "\" stroke-width=\"2\"" +
         (o.fixed ? "" : " stroke-dasharray=\"6 3\"") + " points=\"" + pts + "\"><title>" +
         XmlEscape(name) + "</title></polyline>";
    const double ly = top + 8 + 18 * static_cast<double>(i);
    s += "<line x1=\"" + Num(left + plot_w + 14, 6) + "\" y1=\"" + Num(ly, 6) + "\" x2=\"" +
         Num(left + plot_w + 34, 6) + "\" y2=\"" + Num(ly, 6) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"/><text x=\"" + Num(left + plot_w + 40, 6) + "\" y=\"" +
         Num(ly + 4, 6) + "\" font-size=\"11\" font-family=\"sans-serif\">" +
         XmlEscape(name.substr(0, 34)) + "</text>";
  }
  for (const BreakEven& b : c.break_evens) {
    if (b.utilization < kUMin || b.utilization > kUMax) continue;
    const double v = c.options[b.rented].CostAt(b.utilization, c.model.goodput);
    s += "<circle class=\"crossing\" cx=\"" + Num(x_of(b.utilization), 6) + "\" cy=\"" +
         Num(y_of(v), 6) +
         "\" r=\"5\" fill=\"none\" stroke=\"#b3261e\" stroke-width=\"2\"><title>"
         "break-even at utilization " +
         Num(b.utilization, 3) + "</title></circle><text x=\"" + Num(x_of(b.utilization) + 7, 6) +
         "\" y=\"" + Num(y_of(v) - 7, 6) +
         "\" font-size=\"11\" font-family=\"sans-serif\" fill=\"#b3261e\">U*=" +
         Num(b.utilization, 3) + "</text>";
  }
  return s + "</svg>";
}

std::string CostHtml(const CostReport& c, bool redact) {
  const std::string cur = XmlEscape(c.model.currency);
  std::string h = "<section id=\"cost-model\"><h2>Cost per unit of work</h2><p>" +
                  UnitOfWorkText(c, cur, "<b>", "</b>") + "</p>\n";
  h += "<figure id=\"chart-cost\">" + CostChartSvg(c, redact) +
       "<figcaption>Solid lines are paid every hour (owned, reserved, committed): their cost per "
       "unit falls as utilization rises. Dashed lines are paid per use. Circles mark the "
       "break-even utilization.</figcaption></figure>\n";
  h += "<table><tr><th>side</th><th>option</th><th>kind</th><th>" + cur +
       " per GPU-hour</th><th>units per GPU-hour</th><th>" + cur +
       " per unit at U=" + Num(c.model.utilization, 3) + "</th></tr>\n";
  for (size_t i = 0; i < c.options.size(); ++i) {
    const CostOption& o = c.options[i];
    const CostSide& s = o.side == "source" ? c.model.source : c.model.target;
    h += "<tr><td>" + XmlEscape(Side(s, o.side, redact)) + "</td><td>" +
         XmlEscape(Label(o, redact)) + "</td><td>" + o.kind +
         (o.fixed ? " (fixed)" : " (per use)") + "</td><td>" + Money(o.effective_per_gpu_hour) +
         "</td><td>" + Num(o.throughput, 4) + "</td><td" +
         (i == c.cheapest ? " class=\"ok\"" : "") + ">" + Money(o.cost_per_unit) +
         (i == c.cheapest ? " (cheapest)" : "") + "</td></tr>\n";
  }
  h += "</table>\n";
  if (!c.break_evens.empty()) {
    h += "<table><tr><th>owned</th><th>against (per use)</th><th>break-even utilization</th>"
         "<th>months to recover the capital at U=" +
         Num(c.model.utilization, 3) + "</th></tr>\n";
    for (const BreakEven& b : c.break_evens) {
      h += "<tr><td>" + c.options[b.owned].side + " " +
           XmlEscape(Label(c.options[b.owned], redact)) + "</td><td>" + c.options[b.rented].side +
           " " + XmlEscape(Label(c.options[b.rented], redact)) + "</td><td>" +
           BreakEvenText(b.utilization) + "</td><td>" + Months(b.months_to_recover) +
           "</td></tr>\n";
    }
    h += "</table>\n";
  }
  return h + "</section>\n";
}

}  // namespace cutover::report
