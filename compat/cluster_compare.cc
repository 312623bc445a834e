#include "compat/cluster_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "compat/cluster_suite.h"
#include "core/file_util.h"

namespace cutover {
namespace {

using Json = nlohmann::json;

// The rows compared: out of place, and broadcast (one buffer, recorded in place).
bool Compared(const Json& row) {
  return !row.value("in_place", false) || row.value("op", std::string()) == "broadcast";
}

double GeoMean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

std::pair<double, double> MinMax(const Json& reps) {
  double lo = 0, hi = 0;
  bool first = true;
  for (const Json& t : reps) {
    const double x = t.get<double>();
    if (first || x < lo) lo = x;
    if (first || x > hi) hi = x;
    first = false;
  }
  return {lo, hi};
}

Json SlowSide(const Json& rec) {
  if (!rec.contains("pairwise")) return {{"measured", false}};
  const Json& p = rec["pairwise"];
  return {{"measured", true},
          {"rule_applied", p.value("rule_applied", false)},
          {"rule_reason", p.value("rule_reason", std::string())},
          {"slow_nodes", p.value("slow_nodes", Json::array())},
          {"slow_links", p.value("slow_links", Json::array())}};
}

}  // namespace

Result<std::string> RecordSchema(const std::string& path) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Status::InvalidArgument(path + ": not a JSON document");
  if (!doc.is_object() || !doc.contains("schema") || !doc["schema"].is_string())
    return std::string();
  return doc["schema"].get<std::string>();
}

bool IsClusterSchema(const std::string& schema) {
  return schema.rfind("cutover.compat-cluster/", 0) == 0;
}

Result<Json> LoadClusterRecord(const std::string& path) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return CheckClusterRecord(Json::parse(text, nullptr, false), path);
}

Result<Json> CheckClusterRecord(Json doc, const std::string& path) {
  auto bad = [&path](const std::string& why) {
    return Status::InvalidArgument(path + ": not a valid cluster record: " + why);
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  const std::string schema = doc.value("schema", std::string());
  if (schema != "cutover.compat-cluster/1") {
    return bad("schema '" + schema + "', this cutover reads cutover.compat-cluster/1");
  }
  if (!doc.contains("world_size") || !doc["world_size"].is_number_integer()) {
    return bad("no world_size");
  }
  if (!doc.contains("collectives") || !doc["collectives"].is_array()) return bad("no collectives");
  for (const Json& row : doc["collectives"]) {
    for (const char* key : {"op", "bytes", "busbw_gbps", "correct", "rep_us", "in_place"}) {
      if (!row.is_object() || !row.contains(key)) return bad(std::string("a row without ") + key);
    }
    if (!row["rep_us"].is_array() || row["rep_us"].empty()) return bad("a row without rep_us");
  }
  return doc;
}

ClusterComparison CompareClusterRecords(const Json& source, const Json& target) {
  ClusterComparison out;
  // (op, bytes) -> row, of the compared rows of each side.
  std::map<std::pair<std::string, uint64_t>, const Json*> src_rows, tgt_rows;
  for (const Json& r : source["collectives"]) {
    if (Compared(r)) src_rows[{r["op"].get<std::string>(), r["bytes"].get<uint64_t>()}] = &r;
  }
  for (const Json& r : target["collectives"]) {
    if (Compared(r)) tgt_rows[{r["op"].get<std::string>(), r["bytes"].get<uint64_t>()}] = &r;
  }
  struct Acc {
    std::vector<double> ratio, lo, hi;
    uint64_t min_bytes = 0, max_bytes = 0;
  };
  std::map<std::pair<std::string, std::string>, Acc> acc;  // (op, regime)
  Json only = Json::array(), wrong = Json::array();
  for (const auto* side : {&source, &target}) {
    for (const Json& r : (*side)["collectives"]) {
      if (!r["correct"].get<bool>()) {
        wrong.push_back({{"side", side == &source ? "source" : "target"},
                         {"op", r["op"]},
                         {"bytes", r["bytes"]},
                         {"in_place", r["in_place"]}});
      }
    }
  }
  for (const auto& [key, s] : src_rows) {
    auto it = tgt_rows.find(key);
    if (it == tgt_rows.end()) {
      only.push_back({{"op", key.first}, {"bytes", key.second}, {"side", "source"}});
      continue;
    }
    const Json& t = *it->second;
    const double sb = (*s)["busbw_gbps"].get<double>(), tb = t["busbw_gbps"].get<double>();
    if (sb <= 0 || tb <= 0) continue;
    // Bus bandwidth is bytes / time times a factor of the world size; the interval comes from
    // the time ratio's extremes over the repetitions, scaled by the same factors.
    auto [s_lo, s_hi] = MinMax((*s)["rep_us"]);
    auto [t_lo, t_hi] = MinMax(t["rep_us"]);
    const double scale = tb / sb;
    const double s_avg = (*s)["time_us"]["avg"].get<double>(),
                 t_avg = t["time_us"]["avg"].get<double>();
    const double lo = t_hi > 0 ? scale * (s_lo / t_hi) / (s_avg / t_avg) : scale;
    const double hi = t_lo > 0 ? scale * (s_hi / t_lo) / (s_avg / t_avg) : scale;
    const std::string regime = key.second < kLatencyBoundBelow ? "latency" : "bandwidth";
    Acc& a = acc[{key.first, regime}];
    a.ratio.push_back(scale);
    a.lo.push_back(std::min(lo, scale));
    a.hi.push_back(std::max(hi, scale));
    if (a.min_bytes == 0 || key.second < a.min_bytes) a.min_bytes = key.second;
    a.max_bytes = std::max(a.max_bytes, key.second);
  }
  for (const auto& [key, t] : tgt_rows) {
    if (!src_rows.count(key))
      only.push_back({{"op", key.first}, {"bytes", key.second}, {"side", "target"}});
  }
  Json rows = Json::array();
  std::string table =
      "collective      regime     sizes                  busbw ratio (target/source)  interval\n";
  for (const auto& [key, a] : acc) {
    const double r = GeoMean(a.ratio), lo = GeoMean(a.lo), hi = GeoMean(a.hi);
    rows.push_back({{"op", key.first},
                    {"regime", key.second},
                    {"sizes", a.ratio.size()},
                    {"min_bytes", a.min_bytes},
                    {"max_bytes", a.max_bytes},
                    {"busbw_ratio", r},
                    {"interval", {lo, hi}}});
    char line[256];
    std::snprintf(line, sizeof(line), "%-15s %-10s %3zu (%9llu-%10llu) %10.3f %18s[%.3f, %.3f]\n",
                  key.first.c_str(), key.second.c_str(), a.ratio.size(),
                  static_cast<unsigned long long>(a.min_bytes),
                  static_cast<unsigned long long>(a.max_bytes), r, "", lo, hi);
    table += line;
  }
  Json src_slow = SlowSide(source), tgt_slow = SlowSide(target);
  auto slow_line = [](const char* side, const Json& s) {
    if (!s["measured"].get<bool>()) return std::string(side) + ": no pairwise matrix\n";
    if (!s["rule_applied"].get<bool>()) {
      return std::string(side) + ": rule not applied (" + s["rule_reason"].get<std::string>() +
             ")\n";
    }
    return std::string(side) + ": slow nodes " + s["slow_nodes"].dump() + ", slow links " +
           s["slow_links"].dump() + "\n";
  };
  table += slow_line("source", src_slow) + slow_line("target", tgt_slow);
  table += "source " + ClusterFleetLine(source) + "target " + ClusterFleetLine(target);
  if (!only.empty()) {
    table += std::to_string(only.size()) +
             " (collective, size) rows measured on one side only: not compared\n";
  }
  for (const Json& w : wrong) {
    table += "WRONG RESULT (" + w["side"].get<std::string>() + "): " + w["op"].get<std::string>() +
             " " + std::to_string(w["bytes"].get<uint64_t>()) + " B" +
             (w["in_place"].get<bool>() ? " in place" : "") + "\n";
  }
  out.failed = !wrong.empty();
  out.table = table;
  out.doc = {
      {"schema", "cutover.compat-cluster-compare/1"},
      {"ratio", "target / source bus bandwidth: above 1 = target faster"},
      {"latency_bound_below_bytes", kLatencyBoundBelow},
      {"source_world_size", source["world_size"]},
      {"target_world_size", target["world_size"]},
      {"collectives", rows},
      {"one_side_only", only},
      {"wrong_results", wrong},
      {"slow", {{"source", src_slow}, {"target", tgt_slow}}},
      {"fleet",
       {{"source", source.value("fleet", Json())}, {"target", target.value("fleet", Json())}}},
      {"failed", out.failed}};
  return out;
}

}  // namespace cutover
