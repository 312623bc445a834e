// The expected floors of collective bus bandwidth per fabric (probe/rules/fabric-floors.json,
// schema "cutover.fabric-floors/1", compiled in): what `assess --cluster` holds a cluster
// record's measured bus bandwidth against. The file's "about" says how a row is keyed and which
// published figures are not rows, and why.
//
// Thread-safety: pure functions; BuiltinFabricFloors() is parsed once, thread-safely.
#ifndef CUTOVER_PROBE_FABRIC_FLOORS_H_
#define CUTOVER_PROBE_FABRIC_FLOORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover::probe {

// A sweep of message sizes as nccl-tests' -b -e -f gives it.
struct Sweep {
  uint64_t min_bytes = 0, max_bytes = 0;
  int factor = 2;
  bool operator==(const Sweep&) const = default;
};

struct FabricFloor {
  std::string fabric;      // as `compat run --fabric` records it: "azure-nd-h100-v5"
  std::string collective;  // "all_reduce", ... (compat/cluster_rules.h ClusterCollectives)
  std::string scope;       // "intra-node" | "inter-node"
  int nodes = 0;           // the node count the floor was stated for
  // Exactly one of: the busbw at this message size, or nccl-tests' average over this sweep.
  std::optional<uint64_t> bytes;
  std::optional<Sweep> average_over;
  double busbw_gbps = 0;
  std::string source;  // where the figure comes from
};

struct FabricFloors {
  int version = 0;
  std::vector<FabricFloor> floors;
};

// Parses a floors document. InvalidArgument naming the row and field, e.g.
//   "fabric floors: /floors/1/scope: expected intra-node or inter-node, got 'both'"
Result<FabricFloors> ParseFabricFloors(std::string_view text, std::string_view what);

// The compiled-in table (an embedded file that fails to parse is a build bug: an empty table).
const FabricFloors& BuiltinFabricFloors();

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_FABRIC_FLOORS_H_
