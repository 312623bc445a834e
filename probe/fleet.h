// `probe fleet`: group many hosts' fingerprints by their stack and name the outliers.
//
// A host's stack is the fields below, each rendered as one string ("-" when absent or null):
//   os            os.id and os.version_id        kernel       os.kernel
//   driver        driver.version (or its status) driver_cuda  driver.cuda_version
//   cuda_toolkit  cuda.toolkits[].version        cudart, cublas, cudnn, nccl: libraries[] of that
//   nccl_plugins  libraries named nccl-net*        name, every distinct version found
//   gpus          "8x NVIDIA H100 80GB HBM3"     vbios        distinct gpus[].vbios
//   ib_firmware   distinct network.infiniband[].firmware
// Hosts with equal stacks form a group; the largest group is the majority, and every other
// group lists the fields in which it differs from it. The fleet is consistent when there is one
// group. Documents are parsed on several threads; each keeps only its stack strings.
#ifndef CUTOVER_PROBE_FLEET_H_
#define CUTOVER_PROBE_FLEET_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover::probe {

// The stack fields, in report order.
const std::vector<std::string>& FleetFields();

struct FleetHost {
  std::string file;
  std::string hostname;
  std::vector<std::string> stack;  // one value per FleetFields() entry
};

// The stack of one fingerprint document (the text of a cutover.fingerprint/1 file).
// InvalidArgument when it is not JSON or not a fingerprint.
Result<FleetHost> ReadFleetHost(std::string_view text, const std::string& file);

struct FleetGroup {
  std::vector<size_t> hosts;    // indexes into FleetReport::hosts, in input order
  std::vector<size_t> differs;  // field indexes differing from the majority (none for it)
};

struct FleetUnreadable {
  std::string file;
  std::string error;
};

struct FleetReport {
  std::vector<FleetHost> hosts;
  std::vector<FleetGroup> groups;  // largest first (ties: first host's input order)
  std::vector<FleetUnreadable> unreadable;
  bool consistent() const { return groups.size() <= 1; }
};

// The files named, or every *.json file under a directory (recursively) when `paths` is one
// directory. InvalidArgument when a path does not exist or nothing is found.
Result<std::vector<std::string>> FleetFiles(const std::vector<std::string>& paths);

// Reads and groups `files` on `threads` threads (>= 1).
FleetReport AnalyzeFleet(const std::vector<std::string>& files, int threads);

// Groups hosts already read by their stacks (what AnalyzeFleet does after reading its files).
FleetReport GroupFleet(std::vector<FleetHost> hosts);

nlohmann::json FleetToJson(const FleetReport& report);  // "cutover.fleet/1"

// The fleet verdict of a cluster record's "nodes" ([{name, ranks, fingerprint}], compat's
// cluster suite): each node is a host named by its node name; a node without a readable
// fingerprint is listed as unreadable. The "cutover.fleet/1" document.
nlohmann::json JudgeClusterNodes(const nlohmann::json& nodes);
// Groups with their hosts (the first `max_hosts` of each) and, for outliers, what differs.
std::string RenderFleetTable(const FleetReport& report, size_t max_hosts = 10);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_FLEET_H_
