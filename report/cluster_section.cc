#include "report/cluster_section.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "compat/cluster_compare.h"
#include "compat/cluster_suite.h"
#include "core/json.h"
#include "core/junit.h"
#include "core/units.h"
#include "report/assess.h"
#include "report/render_util.h"

namespace cutover::report {
namespace {

using nlohmann::json;

// A slower collective: its bandwidth-bound bus bandwidth ratio under this, interval under 1.
constexpr double kSlowerRatio = 0.9;
// Pairwise matrices larger than this are not drawn (a cell would be under 6 px).
constexpr size_t kMaxHeatMapRanks = 64;

std::string Ranks(const json& record) {
  return std::to_string(record["world_size"].get<int64_t>());
}

size_t NodeCount(const json& record) {
  const json* nodes = FindJson(record, "/nodes");
  return nodes != nullptr && nodes->is_array() ? nodes->size() : 0;
}

// The better bus bandwidth of `op` at `bytes` (in place or out of place), 0 when not measured.
double BusbwAt(const json& record, const std::string& op, uint64_t bytes) {
  double best = 0;
  for (const json& r : record["collectives"]) {
    if (StrAt(r, "op") == op && r.value("bytes", uint64_t{0}) == bytes) {
      best = std::max(best, NumAt(r, "busbw_gbps"));
    }
  }
  return best;
}

uint64_t LargestBytes(const json& record, const std::string& op) {
  uint64_t top = 0;
  for (const json& r : record["collectives"]) {
    if (StrAt(r, "op") == op) top = std::max(top, r.value("bytes", uint64_t{0}));
  }
  return top;
}

// Holds one side against the floors of its fabric.
void CheckFloors(const std::string& side, const json& record, const probe::FabricFloors& floors,
                 ClusterSection* out) {
  const std::string fabric = StrAt(record, "fabric");
  if (fabric.empty()) {
    out->notes.push_back(side +
                         ": no fabric recorded (compat run --fabric NAME): held against no floor");
    return;
  }
  const int nodes = static_cast<int>(NodeCount(record));
  const std::string scope = nodes <= 1 ? "intra-node" : "inter-node";
  bool any = false;
  for (const probe::FabricFloor& f : floors.floors) {
    if (f.fabric != fabric) continue;
    any = true;
    const std::string what = side + ": floor of " + fabric + " for " + FloorSize(f) + " (" +
                             f.scope + ", " + std::to_string(f.nodes) + " node" +
                             (f.nodes == 1 ? "" : "s") + ")";
    if (f.scope != scope || f.nodes != nodes) {
      out->notes.push_back(what + ": not compared, this run had " + std::to_string(nodes) +
                           " node" + (nodes == 1 ? "" : "s"));
      continue;
    }
    double measured = 0;
    if (f.bytes) {
      measured = BusbwAt(record, f.collective, *f.bytes);
      if (measured <= 0) {
        const uint64_t top = LargestBytes(record, f.collective);
        out->notes.push_back(what + ": not compared, the run " +
                             (top == 0
                                  ? std::string("did not measure ") + f.collective
                                  : "never reached that size (largest " + FormatBytes(top) + ")"));
        continue;
      }
    } else {
      const json& o = record["options"];
      const probe::Sweep ran{o.value("min_bytes", uint64_t{0}), o.value("max_bytes", uint64_t{0}),
                             o.value("step_factor", 0)};
      double sum = 0;
      int n = 0;
      for (const json& r : record["collectives"]) {
        if (StrAt(r, "op") != f.collective) continue;
        sum += NumAt(r, "busbw_gbps");
        ++n;
      }
      if (!(ran == *f.average_over) || n == 0) {
        out->notes.push_back(what + ": not compared, the run swept " + FormatBytes(ran.min_bytes) +
                             ".." + FormatBytes(ran.max_bytes) + " by " +
                             std::to_string(ran.factor));
        continue;
      }
      measured = sum / n;  // as nccl-tests averages: every size, in place and out of place
    }
    out->floors.push_back({side, f, measured, measured < f.busbw_gbps});
  }
  if (!any) out->notes.push_back(side + ": no floor rows for fabric " + fabric);
}

void Add(std::vector<ReportFinding>* findings, const std::string& severity, const std::string& code,
         std::string message, std::string fix) {
  findings->push_back({.severity = severity,
                       .code = code,
                       .component = "cluster",
                       .message = std::move(message),
                       .fix = std::move(fix)});
}

std::string Names(const json& list) {
  std::string s;
  for (const json& v : list) {
    std::string name;
    if (v.is_string()) name = v.get<std::string>();
    if (v.is_array() && v.size() == 2)
      name = v[0].get<std::string>() + "-" + v[1].get<std::string>();
    s += (s.empty() ? "" : ", ") + name;
  }
  return s;
}

void SlowFindings(const json& slow, bool target, std::vector<ReportFinding>* findings) {
  if (!slow.value("measured", false) || !slow.value("rule_applied", false)) return;
  const std::string side = target ? "target" : "source";
  const std::string sev = target ? "warning" : "info";
  if (!slow["slow_nodes"].empty()) {
    Add(findings, sev, "cluster.slow_node",
        "the " + side +
            " cluster's pairwise matrix names slow node(s): " + Names(slow["slow_nodes"]),
        "take the node(s) out or fix their links before the move; rerun compat run --suite "
        "cluster to confirm");
  }
  if (!slow["slow_links"].empty()) {
    Add(findings, sev, "cluster.slow_link",
        "the " + side +
            " cluster's pairwise matrix names slow link(s): " + Names(slow["slow_links"]),
        "check the cables, ports and switch of these node pairs");
  }
}

}  // namespace

std::string FloorSize(const probe::FabricFloor& f) {
  if (f.bytes) return f.collective + " at " + FormatBytes(*f.bytes);
  return f.collective + " averaged over " + FormatBytes(f.average_over->min_bytes) + ".." +
         FormatBytes(f.average_over->max_bytes) + " by " + std::to_string(f.average_over->factor);
}

ClusterSection AssessCluster(json source, json target, const probe::FabricFloors& floors,
                             std::vector<ReportFinding>* findings) {
  ClusterSection c;
  c.source = std::move(source);
  c.target = std::move(target);
  c.compare = CompareClusterRecords(c.source, c.target).doc;
  for (const json& w : c.compare["wrong_results"]) {
    Add(findings, "blocker", "cluster.wrong_result",
        StrAt(w, "op") + " of " + FormatBytes(w.value("bytes", uint64_t{0})) +
            (w.value("in_place", false) ? " in place" : "") + " gave a wrong result on the " +
            StrAt(w, "side"),
        "a collective that computes a wrong sum corrupts training: check the GPUs, driver and "
        "NCCL of that cluster (compat run --suite cluster names the ranks)");
  }
  SlowFindings(c.compare["slow"]["target"], true, findings);
  SlowFindings(c.compare["slow"]["source"], false, findings);
  for (const auto& [key, target_side] :
       {std::pair<const char*, bool>{"target", true}, {"source", false}}) {
    const json& rec = target_side ? c.target : c.source;
    const json* fleet = FindJson(rec, "/fleet");
    if (fleet != nullptr && fleet->is_object() && !fleet->value("consistent", true)) {
      std::string line = ClusterFleetLine(rec);
      while (!line.empty() && line.back() == '\n') line.pop_back();
      Add(findings, target_side ? "warning" : "info", "cluster.inconsistent_nodes",
          std::string("the ") + key + " cluster's nodes differ in stack: " + line,
          "bring the named nodes to the majority's driver, CUDA and libraries");
    }
  }
  for (const json& row : c.compare["collectives"]) {
    if (StrAt(row, "regime") != "bandwidth") continue;
    const double r = NumAt(row, "busbw_ratio"), hi = row["interval"][1].get<double>();
    if (r < kSlowerRatio && hi < 1) {
      Add(findings, "warning", "cluster.slower",
          StrAt(row, "op") + ": the target's bandwidth-bound bus bandwidth is x" + Num(r) +
              " of the source's (interval " + Num(row["interval"][0].get<double>()) + ".." +
              Num(hi) + ")",
          "check the target's fabric (NCCL_* settings, NICs per GPU, GPUDirect) against the "
          "source's");
    }
  }
  if (c.source["world_size"] != c.target["world_size"]) {
    Add(findings, "info", "cluster.world_size",
        "the runs had different world sizes: source " + Ranks(c.source) + " ranks, target " +
            Ranks(c.target) + " (bus bandwidth is normalised for it, not equal to it)",
        "");
  }
  CheckFloors("source", c.source, floors, &c);
  CheckFloors("target", c.target, floors, &c);
  for (const FloorCheck& f : c.floors) {
    if (!f.below) continue;
    Add(findings, "warning", "cluster.below_floor",
        "the " + f.side + " cluster's " + FloorSize(f.floor) + " bus bandwidth " +
            Num(f.measured_gbps) + " GB/s is under the " + f.floor.fabric + " floor of " +
            Num(f.floor.busbw_gbps) + " GB/s (" + f.floor.source + ")",
        "check that NCCL uses the fabric (NCCL_DEBUG=INFO names the transport) and that every "
        "NIC is up");
  }
  return c;
}

json ClusterJson(const ClusterSection& c) {
  json floors = json::array();
  for (const FloorCheck& f : c.floors) {
    json row = {{"side", f.side},
                {"fabric", f.floor.fabric},
                {"collective", f.floor.collective},
                {"scope", f.floor.scope},
                {"nodes", f.floor.nodes},
                {"size", FloorSize(f.floor)},
                {"floor_gbps", f.floor.busbw_gbps},
                {"measured_gbps", f.measured_gbps},
                {"below", f.below},
                {"source", f.floor.source}};
    floors.push_back(std::move(row));
  }
  return {{"source_world_size", c.source["world_size"]},
          {"target_world_size", c.target["world_size"]},
          {"source_fabric", c.source.value("fabric", json())},
          {"target_fabric", c.target.value("fabric", json())},
          {"compare", c.compare},
          {"floors", floors},
          {"notes", c.notes}};
}

std::string ClusterMarkdown(const ClusterSection& c) {
  std::string md = "## Cluster\n\nSource " + Ranks(c.source) + " ranks on " +
                   std::to_string(NodeCount(c.source)) + " node(s), target " + Ranks(c.target) +
                   " ranks on " + std::to_string(NodeCount(c.target)) +
                   " node(s). Bus bandwidth ratio target / source (above 1: target faster), "
                   "sizes under " +
                   FormatBytes(kLatencyBoundBelow) + " latency-bound:\n\n";
  md += "| collective | regime | sizes | ratio | interval |\n|---|---|---|---|---|\n";
  for (const json& row : c.compare["collectives"]) {
    md += "| " + StrAt(row, "op") + " | " + StrAt(row, "regime") + " | " +
          FormatBytes(row.value("min_bytes", uint64_t{0})) + ".." +
          FormatBytes(row.value("max_bytes", uint64_t{0})) + " | x" +
          Num(NumAt(row, "busbw_ratio")) + " | " + Num(row["interval"][0].get<double>()) + ".." +
          Num(row["interval"][1].get<double>()) + " |\n";
  }
  md += "\n";
  for (const char* side : {"source", "target"}) {
    const json& s = c.compare["slow"][side];
    md += std::string("- ") + side + " pairwise matrix: ";
    if (!s.value("measured", false)) {
      md += "not measured\n";
    } else if (!s.value("rule_applied", false)) {
      md += "rule not applied (" + StrAt(s, "rule_reason") + ")\n";
    } else {
      md += "slow nodes " + (s["slow_nodes"].empty() ? "none" : Names(s["slow_nodes"])) +
            ", slow links " + (s["slow_links"].empty() ? "none" : Names(s["slow_links"])) + "\n";
    }
    std::string fleet = ClusterFleetLine(std::string(side) == "source" ? c.source : c.target);
    while (!fleet.empty() && fleet.back() == '\n') fleet.pop_back();
    md += std::string("- ") + side + " " + fleet + "\n";
  }
  if (!c.floors.empty()) {
    md +=
        "\n| side | fabric | floor for | floor GB/s | measured GB/s | "
        "|\n|---|---|---|---|---|---|\n";
    for (const FloorCheck& f : c.floors) {
      md += "| " + f.side + " | " + f.floor.fabric + " | " + FloorSize(f.floor) + " | " +
            Num(f.floor.busbw_gbps) + " | " + Num(f.measured_gbps) + " | " +
            (f.below ? "**under**" : "ok") + " |\n";
    }
  }
  for (const std::string& n : c.notes) md += "- " + n + "\n";
  return md + "\n";
}

namespace {

std::string Px(double v) { return Num(v, 6); }

// Bus bandwidth against message size, log-log, one panel per collective: the better of in place
// and out of place per size, source blue and target orange.
std::string BusbwChart(const ClusterSection& c) {
  std::vector<std::string> ops;
  std::map<std::string, std::map<uint64_t, double>> series[2];
  double lo_b = 1e30, hi_b = 0, lo_g = 1e30, hi_g = 0;
  for (int s = 0; s < 2; ++s) {
    for (const json& r : (s == 0 ? c.source : c.target)["collectives"]) {
      const std::string op = StrAt(r, "op");
      const double g = NumAt(r, "busbw_gbps");
      const uint64_t b = r.value("bytes", uint64_t{0});
      if (!(g > 0) || b == 0 || !std::isfinite(g)) continue;
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
      double& v = series[s][op][b];
      v = std::max(v, g);
      lo_b = std::min(lo_b, static_cast<double>(b));
      hi_b = std::max(hi_b, static_cast<double>(b));
      lo_g = std::min(lo_g, g);
      hi_g = std::max(hi_g, g);
    }
  }
  if (ops.empty()) return "";
  const double pw = 330, ph = 170, gap = 40, left = 50, top = 30;
  const int cols = 3;
  const int rows = static_cast<int>((ops.size() + cols - 1) / cols);
  const double lx0 = std::log2(lo_b), lx1 = std::max(std::log2(hi_b), lx0 + 1);
  const double ly0 = std::floor(std::log10(lo_g)),
               ly1 = std::max(std::ceil(std::log10(hi_g)), ly0 + 1);
  const double w = cols * (pw + gap) + left, h = rows * (ph + gap + 20) + top;
  std::string svg = "<svg class=\"chart\" width=\"" + Px(w) + "\" height=\"" + Px(h) +
                    "\" role=\"img\" aria-label=\"bus bandwidth against message size\">";
  svg += "<text x=\"" + Px(left) +
         "\" y=\"14\">bus bandwidth (GB/s, log) against message size (log): blue source, orange "
         "target</text>";
  for (size_t i = 0; i < ops.size(); ++i) {
    const double x0 = left + static_cast<double>(i % cols) * (pw + gap);
    const double y0 = top + static_cast<double>(i / cols) * (ph + gap + 20);
    auto X = [&](double b) { return x0 + (std::log2(b) - lx0) / (lx1 - lx0) * pw; };
    auto Y = [&](double g) { return y0 + ph - (std::log10(g) - ly0) / (ly1 - ly0) * ph; };
    svg += "<rect x=\"" + Px(x0) + "\" y=\"" + Px(y0) + "\" width=\"" + Px(pw) + "\" height=\"" +
           Px(ph) + "\" fill=\"none\" stroke=\"#ccc\"/>";
    svg +=
        "<text x=\"" + Px(x0 + 4) + "\" y=\"" + Px(y0 + 14) + "\">" + XmlEscape(ops[i]) + "</text>";
    for (double e = ly0; e <= ly1; ++e) {
      svg += "<text x=\"" + Px(x0 - 4) + "\" y=\"" + Px(Y(std::pow(10, e)) + 4) +
             "\" text-anchor=\"end\" font-size=\"10\">" + Num(std::pow(10, e)) + "</text>";
    }
    svg += "<text x=\"" + Px(x0) + "\" y=\"" + Px(y0 + ph + 14) + "\" font-size=\"10\">" +
           XmlEscape(FormatBytes(static_cast<uint64_t>(lo_b))) + "</text><text x=\"" + Px(x0 + pw) +
           "\" y=\"" + Px(y0 + ph + 14) + "\" font-size=\"10\" text-anchor=\"end\">" +
           XmlEscape(FormatBytes(static_cast<uint64_t>(hi_b))) + "</text>";
    for (int s = 0; s < 2; ++s) {
      auto it = series[s].find(ops[i]);
      if (it == series[s].end()) continue;
      std::string pts;
      for (const auto& [b, g] : it->second) {
        pts += Px(X(static_cast<double>(b))) + "," + Px(Y(g)) + " ";
      }
      svg += std::string("<polyline fill=\"none\" stroke-width=\"2\" stroke=\"") +
             (s == 0 ? "#2f6db5" : "#e07b00") + "\" points=\"" + pts + "\"><title>" +
             (s == 0 ? "source " : "target ") + XmlEscape(ops[i]) + "</title></polyline>";
    }
  }
  return svg + "</svg>";
}

// One side's pairwise bandwidth matrix as a heat map: darker is faster, cells of a slow link
// outlined red, a slow node's label red.
std::string HeatMap(const json& record, const json& slow) {
  const json* bw = FindJson(record, "/pairwise/bw_gbps");
  const json* nodes_of = FindJson(record, "/rank_nodes");
  if (bw == nullptr || !bw->is_array() || bw->empty() || nodes_of == nullptr ||
      !nodes_of->is_array() || nodes_of->size() != bw->size()) {
    return "";
  }
  const size_t n = bw->size();
  if (n > kMaxHeatMapRanks) {
    return "<p>" + std::to_string(n) +
           " ranks: too many to draw (the matrix is in the record).</p>";
  }
  std::set<std::string> slow_nodes;
  std::set<std::pair<std::string, std::string>> slow_links;
  if (slow.value("rule_applied", false)) {
    for (const json& v : slow["slow_nodes"]) slow_nodes.insert(v.get<std::string>());
    for (const json& l : slow["slow_links"]) {
      slow_links.insert({l[0].get<std::string>(), l[1].get<std::string>()});
      slow_links.insert({l[1].get<std::string>(), l[0].get<std::string>()});
    }
  }
  double top_bw = 0;
  for (const json& row : *bw) {
    for (const json& v : row) top_bw = std::max(top_bw, v.is_number() ? v.get<double>() : 0.0);
  }
  const double cell = std::clamp(360.0 / static_cast<double>(n), 6.0, 28.0), label = 90;
  const double side = cell * static_cast<double>(n);
  std::string svg = "<svg class=\"chart\" width=\"" + Px(label + side + 10) + "\" height=\"" +
                    Px(label + side + 10) + "\" role=\"img\" aria-label=\"pairwise bandwidth\">";
  auto node = [&](size_t r) { return (*nodes_of)[r].get<std::string>(); };
  for (size_t r = 0; r < n; ++r) {
    const bool bad = slow_nodes.count(node(r)) != 0;
    svg += "<text x=\"" + Px(label - 4) + "\" y=\"" + Px(label + cell * (r + 0.5) + 4) +
           "\" text-anchor=\"end\" font-size=\"10\"" + (bad ? " fill=\"#b3261e\"" : "") + ">" +
           XmlEscape(node(r).substr(0, 14)) + "</text>";
  }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      const json& v = (*bw)[a][b];
      const double g = v.is_number() ? v.get<double>() : 0;
      const double f = top_bw > 0 ? std::clamp(g / top_bw, 0.0, 1.0) : 0;
      const int shade = static_cast<int>(235 - 185 * f);
      const bool marked = slow_links.count({node(a), node(b)}) != 0;
      svg += "<rect x=\"" + Px(label + cell * b) + "\" y=\"" + Px(label + cell * a) +
             "\" width=\"" + Px(cell) + "\" height=\"" + Px(cell) + "\" fill=\"rgb(" +
             std::to_string(shade) + "," + std::to_string(shade) + ",255)\"" +
             (marked ? " stroke=\"#b3261e\" stroke-width=\"2\"" : "") + "><title>rank " +
             std::to_string(a) + " (" + XmlEscape(node(a)) + ") to " + std::to_string(b) + " (" +
             XmlEscape(node(b)) + "): " + Num(g) + " GB/s" + (marked ? ", slow link" : "") +
             "</title></rect>";
    }
  }
  return svg + "</svg>";
}

}  // namespace

std::string ClusterHtml(const ClusterSection& c) {
  std::string h = "<section id=\"cluster\"><h2>Cluster</h2>\n";
  const std::string chart = BusbwChart(c);
  if (!chart.empty()) {
    h += "<figure id=\"chart-cluster-busbw\">" + chart +
         "<figcaption>Bus bandwidth per message size and collective (nccl-tests' busbw), the "
         "better of in place and out of place.</figcaption></figure>\n";
  }
  h += "<table><tr><th>collective</th><th>regime</th><th>sizes</th><th>bus bandwidth "
       "target/source</th><th>interval</th></tr>\n";
  for (const json& row : c.compare["collectives"]) {
    const double r = NumAt(row, "busbw_ratio");
    h += "<tr><td>" + XmlEscape(StrAt(row, "op")) + "</td><td>" + StrAt(row, "regime") +
         "</td><td>" + FormatBytes(row.value("min_bytes", uint64_t{0})) + ".." +
         FormatBytes(row.value("max_bytes", uint64_t{0})) + "</td><td class=\"" +
         (r < kSlowerRatio ? "warn" : "ok") + "\">x" + Num(r) + "</td><td>" +
         Num(row["interval"][0].get<double>()) + ".." + Num(row["interval"][1].get<double>()) +
         "</td></tr>\n";
  }
  h += "</table>\n";
  for (const char* side : {"source", "target"}) {
    const json& rec = std::string(side) == "source" ? c.source : c.target;
    const std::string map = HeatMap(rec, c.compare["slow"][side]);
    if (map.empty()) continue;
    h += std::string("<figure id=\"heatmap-") + side + "\">" + map + "<figcaption>" + side +
         ": pairwise bandwidth, row rank to column rank (darker is faster); slow links outlined "
         "red, slow nodes named in red.</figcaption></figure>\n";
  }
  if (!c.floors.empty()) {
    h += "<table><tr><th>side</th><th>fabric</th><th>floor for</th><th>floor GB/s</th>"
         "<th>measured GB/s</th><th>source of the floor</th></tr>\n";
    for (const FloorCheck& f : c.floors) {
      h += "<tr><td>" + f.side + "</td><td>" + XmlEscape(f.floor.fabric) + "</td><td>" +
           XmlEscape(FloorSize(f.floor)) + "</td><td>" + Num(f.floor.busbw_gbps) +
           "</td><td class=\"" + (f.below ? "warn" : "ok") + "\">" + Num(f.measured_gbps) +
           "</td><td>" + XmlEscape(f.floor.source) + "</td></tr>\n";
    }
    h += "</table>\n";
  }
  if (!c.notes.empty()) {
    h += "<ul>";
    for (const std::string& n : c.notes) h += "<li>" + XmlEscape(n) + "</li>";
    h += "</ul>\n";
  }
  return h + "</section>\n";
}

}  // namespace cutover::report
