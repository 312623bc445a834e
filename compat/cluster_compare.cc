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

namespace {

// Type checks of what the readers of a cluster record touch (compare, assess, the fleet line),
// so that a hand-edited or truncated record is refused with the field named, never thrown on.
// Each returns "" when the value fits, else what is wrong with it.
bool IsString(const Json& j, const char* key) { return j.contains(key) && j[key].is_string(); }
bool IsUint(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned();
}
bool IsFiniteNonNegative(const Json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
}

std::string CheckRow(const Json& row) {
  if (!row.is_object()) return "a collectives row is not an object";
  if (!IsString(row, "op")) return "a row without a string op";
  if (!IsUint(row, "bytes")) return "a row without an unsigned bytes";
  for (const char* key : {"correct", "in_place"}) {
    if (!row.contains(key) || !row[key].is_boolean()) return std::string("a row without ") + key;
  }
  if (!row.contains("busbw_gbps") || !IsFiniteNonNegative(row["busbw_gbps"])) {
    return "a row without a finite busbw_gbps >= 0";
  }
  if (!row.contains("rep_us") || !row["rep_us"].is_array() || row["rep_us"].empty()) {
    return "a row without rep_us";
  }
  for (const Json& t : row["rep_us"]) {
    if (!IsFiniteNonNegative(t)) return "a rep_us that is not a finite number >= 0";
  }
  const Json* avg =
      row.contains("time_us") && row["time_us"].is_object() && row["time_us"].contains("avg")
          ? &row["time_us"]["avg"]
          : nullptr;
  if (avg == nullptr || !IsFiniteNonNegative(*avg)) return "a row without time_us.avg";
  return "";
}

std::string CheckPairwise(const Json& p, int64_t n) {
  if (!p.is_object()) return "pairwise is not an object";
  for (const char* key : {"bw_gbps", "latency_us"}) {
    if (!p.contains(key)) continue;
    const Json& m = p[key];
    if (!m.is_array() || static_cast<int64_t>(m.size()) != n) {
      return std::string("pairwise ") + key + " is not world_size rows";
    }
    for (const Json& row : m) {
      if (!row.is_array() || static_cast<int64_t>(row.size()) != n) {
        return std::string("pairwise ") + key + " is not world_size x world_size";
      }
      for (const Json& v : row) {
        if (!IsFiniteNonNegative(v)) return std::string("pairwise ") + key + " holds a bad value";
      }
    }
  }
  if (p.contains("rule_applied") && !p["rule_applied"].is_boolean()) return "bad rule_applied";
  if (p.contains("rule_reason") && !p["rule_reason"].is_string()) return "bad rule_reason";
  if (p.contains("slow_nodes")) {
    if (!p["slow_nodes"].is_array()) return "slow_nodes is not an array";
    for (const Json& v : p["slow_nodes"]) {
      if (!v.is_string()) return "a slow node that is not a name";
    }
  }
  if (p.contains("slow_links")) {
    if (!p["slow_links"].is_array()) return "slow_links is not an array";
    for (const Json& l : p["slow_links"]) {
      if (!l.is_array() || l.size() != 2 || !l[0].is_string() || !l[1].is_string()) {
        return "a slow link that is not two names";
      }
    }
  }
  return "";
}

std::string CheckFleet(const Json& f) {
  if (!f.is_object()) return "fleet is not an object";
  if (f.contains("consistent") && !f["consistent"].is_boolean()) return "bad fleet.consistent";
  if (f.contains("hosts") && !f["hosts"].is_number_integer()) return "bad fleet.hosts";
  auto strings_of = [](const Json& o, std::initializer_list<const char*> keys) {
    if (!o.is_object()) return false;
    for (const char* k : keys) {
      if (o.contains(k) && !o[k].is_string()) return false;
    }
    return true;
  };
  if (f.contains("groups")) {
    if (!f["groups"].is_array()) return "fleet.groups is not an array";
    for (const Json& g : f["groups"]) {
      if (!g.is_object()) return "a fleet group is not an object";
      if (g.contains("majority") && !g["majority"].is_boolean()) return "bad fleet group majority";
      if (g.contains("hosts")) {
        if (!g["hosts"].is_array()) return "fleet group hosts is not an array";
        for (const Json& h : g["hosts"]) {
          if (!strings_of(h, {"file"})) return "a fleet group host is not an object";
        }
      }
      if (g.contains("differs")) {
        if (!g["differs"].is_object()) return "fleet group differs is not an object";
        for (const auto& [field, d] : g["differs"].items()) {
          if (!strings_of(d, {"value", "majority"})) return "a bad fleet difference";
        }
      }
    }
  }
  if (f.contains("unreadable")) {
    if (!f["unreadable"].is_array()) return "fleet.unreadable is not an array";
    for (const Json& u : f["unreadable"]) {
      if (!strings_of(u, {"file", "error"})) return "a bad fleet.unreadable entry";
    }
  }
  return "";
}

}  // namespace

Result<Json> CheckClusterRecord(Json doc, const std::string& path) {
  auto bad = [&path](const std::string& why) {
    return Status::InvalidArgument(path + ": not a valid cluster record: " + why);
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  const std::string schema = IsString(doc, "schema") ? doc["schema"].get<std::string>() : "";
  if (schema != "cutover.compat-cluster/1") {
    return bad("schema '" + schema + "', this cutover reads cutover.compat-cluster/1");
  }
  if (!doc.contains("world_size") || !doc["world_size"].is_number_integer() ||
      doc["world_size"].get<int64_t>() < 1 || doc["world_size"].get<int64_t>() > (1 << 20)) {
    return bad("no world_size of 1 or more");
  }
  const int64_t n = doc["world_size"].get<int64_t>();
  if (!doc.contains("collectives") || !doc["collectives"].is_array()) return bad("no collectives");
  for (const Json& row : doc["collectives"]) {
    if (std::string why = CheckRow(row); !why.empty()) return bad(why);
  }
  if (doc.contains("fabric") && !doc["fabric"].is_string() && !doc["fabric"].is_null()) {
    return bad("fabric is neither a name nor null");
  }
  if (doc.contains("options")) {
    const Json& o = doc["options"];
    if (!o.is_object()) return bad("options is not an object");
    for (const char* key : {"min_bytes", "max_bytes", "step_factor"}) {
      if (o.contains(key) && !o[key].is_number_unsigned()) {
        return bad(std::string("options.") + key + " is not an unsigned integer");
      }
    }
  }
  if (doc.contains("rank_nodes")) {
    const Json& r = doc["rank_nodes"];
    if (!r.is_array() || static_cast<int64_t>(r.size()) != n) {
      return bad("rank_nodes does not name world_size ranks");
    }
    for (const Json& v : r) {
      if (!v.is_string()) return bad("a rank node that is not a name");
    }
  }
  if (doc.contains("nodes") && !doc["nodes"].is_array()) return bad("nodes is not an array");
  if (doc.contains("pairwise")) {
    if (std::string why = CheckPairwise(doc["pairwise"], n); !why.empty()) return bad(why);
  }
  if (doc.contains("fleet") && !doc["fleet"].is_null()) {
    if (std::string why = CheckFleet(doc["fleet"]); !why.empty()) return bad(why);
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
