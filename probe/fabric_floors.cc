#include "probe/fabric_floors.h"

#include <algorithm>
#include <cmath>

#include "core/json.h"
#include "probe/data.h"

namespace cutover::probe {
namespace {

// An error about field `field` of a row ("/scope"; "" for the row itself), worded as the typed
// getters word theirs, so that ParseFabricFloors puts the row in front of both alike.
Status Bad(std::string_view what, const std::string& field, const std::string& why) {
  return Status::InvalidArgument(std::string(what) + ": " + (field.empty() ? "" : field + ": ") +
                                 why);
}

Result<FabricFloor> ParseRow(const nlohmann::json& row, std::string_view what) {
  FabricFloor f;
  CUTOVER_ASSIGN_OR_RETURN(f.fabric, GetString(row, "/fabric", what));
  CUTOVER_ASSIGN_OR_RETURN(f.collective, GetString(row, "/collective", what));
  CUTOVER_ASSIGN_OR_RETURN(f.scope, GetString(row, "/scope", what));
  if (f.fabric.empty()) return Bad(what, "/fabric", "empty");
  if (f.scope != "intra-node" && f.scope != "inter-node") {
    return Bad(what, "/scope", "expected intra-node or inter-node, got '" + f.scope + "'");
  }
  CUTOVER_ASSIGN_OR_RETURN(int64_t nodes, GetInt(row, "/nodes", what));
  if (nodes < 1 || nodes > 1000000) return Bad(what, "/nodes", "expected 1 or more");
  if ((f.scope == "intra-node") != (nodes == 1)) {
    return Bad(what, "/nodes", "intra-node means 1 node, inter-node 2 or more");
  }
  f.nodes = static_cast<int>(nodes);
  const bool has_bytes = row.contains("bytes"), has_avg = row.contains("average_over");
  if (has_bytes == has_avg) {
    return Bad(what, "", "give exactly one of \"bytes\" and \"average_over\"");
  }
  if (has_bytes) {
    CUTOVER_ASSIGN_OR_RETURN(f.bytes, GetUint(row, "/bytes", what));
    if (*f.bytes == 0) return Bad(what, "/bytes", "expected 1 or more");
  } else {
    Sweep s;
    CUTOVER_ASSIGN_OR_RETURN(s.min_bytes, GetUint(row, "/average_over/min_bytes", what));
    CUTOVER_ASSIGN_OR_RETURN(s.max_bytes, GetUint(row, "/average_over/max_bytes", what));
    CUTOVER_ASSIGN_OR_RETURN(int64_t factor, GetInt(row, "/average_over/factor", what));
    if (s.min_bytes == 0 || s.max_bytes < s.min_bytes || factor < 2 || factor > 1024) {
      return Bad(what, "/average_over", "expected 0 < min_bytes <= max_bytes, factor 2..1024");
    }
    s.factor = static_cast<int>(factor);
    f.average_over = s;
  }
  CUTOVER_ASSIGN_OR_RETURN(f.busbw_gbps, GetDouble(row, "/busbw_gbps", what));
  if (!(f.busbw_gbps > 0) || !std::isfinite(f.busbw_gbps)) {
    return Bad(what, "/busbw_gbps", "expected a number above 0");
  }
  CUTOVER_ASSIGN_OR_RETURN(f.source, GetString(row, "/source", what));
  if (f.source.empty()) return Bad(what, "/source", "every floor names its source");
  return f;
}

}  // namespace

Result<FabricFloors> ParseFabricFloors(std::string_view text, std::string_view what) {
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json doc, ParseJson(text, what));
  CUTOVER_RETURN_IF_ERROR(CheckSchema(doc, "cutover.fabric-floors", 1, what));
  FabricFloors out;
  CUTOVER_ASSIGN_OR_RETURN(int64_t version, GetInt(doc, "/version", what));
  out.version = static_cast<int>(version);
  CUTOVER_ASSIGN_OR_RETURN(const nlohmann::json* rows, GetArray(doc, "/floors", what));
  for (size_t i = 0; i < rows->size(); ++i) {
    const std::string at = "/floors/" + std::to_string(i);
    if (!(*rows)[i].is_object()) return Bad(what, at, "expected an object");
    Result<FabricFloor> row = ParseRow((*rows)[i], what);
    if (!row.ok()) {  // name the row before the field
      const std::string m = row.status().message();
      std::string rest = m.substr(std::min(m.size(), what.size() + 2));
      return Status::InvalidArgument(std::string(what) + ": " + at +
                                     (rest.starts_with("/") ? rest : ": " + rest));
    }
    out.floors.push_back(std::move(row).value());
  }
  return out;
}

const FabricFloors& BuiltinFabricFloors() {
  static const FabricFloors* table = [] {
    Result<FabricFloors> t = ParseFabricFloors(EmbeddedData("fabric-floors.json"), "fabric floors");
    return new FabricFloors(t.ok() ? std::move(t).value() : FabricFloors{});
  }();
  return *table;
}

}  // namespace cutover::probe
