// The report's cluster section (`assess --cluster SRC TGT`, two cutover.compat-cluster/1
// records): compat compare's bus bandwidth ratios per collective, the slow nodes and links and the
// node inconsistencies of each side, each side's bus bandwidth against the expected floors of its
// fabric (probe/fabric_floors.h), a bus-bandwidth-versus-size chart and each side's pairwise
// matrix as a heat map with the slow links marked.
//
// Verdict rules (findings):
//   blocker  cluster.wrong_result        a collective gave a wrong result, either side
//   warning  cluster.slow_node           the target names a slow node (info on the source)
//            cluster.slow_link           the target names a slow link (info on the source)
//            cluster.inconsistent_nodes  the target's nodes differ in stack (info on the source)
//            cluster.below_floor         a bus bandwidth under its fabric's floor, either side
//            cluster.slower              a collective's bandwidth-bound bus bandwidth below 0.9
//                                        of the source's, its whole interval under 1
//   info     cluster.world_size          the two runs had different world sizes
//
// Thread-safety: pure functions.
#ifndef CUTOVER_REPORT_CLUSTER_SECTION_H_
#define CUTOVER_REPORT_CLUSTER_SECTION_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/fabric_floors.h"

namespace cutover::report {

struct ReportFinding;

// One side's bus bandwidth held against one floor.
struct FloorCheck {
  std::string side;  // "source" | "target"
  probe::FabricFloor floor;
  double measured_gbps = 0;
  bool below = false;
};

struct ClusterSection {
  nlohmann::json source, target;  // the records
  nlohmann::json compare;         // cutover.compat-cluster-compare/1
  std::vector<FloorCheck> floors;
  std::vector<std::string> notes;  // what was not held against a floor, and why
};

// Compares the records, holds each side against `floors` and appends the findings.
ClusterSection AssessCluster(nlohmann::json source, nlohmann::json target,
                             const probe::FabricFloors& floors,
                             std::vector<ReportFinding>* findings);

// "all_reduce at 16 GiB" | "all_gather averaged over 1 KiB..8 GiB by 2".
std::string FloorSize(const probe::FabricFloor& f);

// The report's "cluster" object (docs/schemas/report-2.json).
nlohmann::json ClusterJson(const ClusterSection& c);
std::string ClusterMarkdown(const ClusterSection& c);
// The section with the bus bandwidth chart and the two heat maps.
std::string ClusterHtml(const ClusterSection& c);

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_CLUSTER_SECTION_H_
