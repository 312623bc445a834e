// `compat compare` of two cluster records (cutover.compat-cluster/1): bus bandwidth ratio per
// collective (target / source, above 1 = target faster), split into latency-bound and
// bandwidth-bound sizes, with an interval from the repetitions; the slow nodes and links of both
// sides; wrong results. A cluster record and a single-node record are refused together.
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_CLUSTER_COMPARE_H_
#define CUTOVER_COMPAT_CLUSTER_COMPARE_H_

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace cutover {

// Sizes below this are latency-bound, the rest bandwidth-bound.
inline constexpr uint64_t kLatencyBoundBelow = 64 * 1024;

// The "schema" field of the JSON document in `path` ("" when it has none). IoError when the file
// cannot be read, InvalidArgument when it is not JSON.
Result<std::string> RecordSchema(const std::string& path);

// True for "cutover.compat-cluster/<n>".
bool IsClusterSchema(const std::string& schema);

// Loads a cluster record and checks what the comparison reads (InvalidArgument naming the
// path and the field; a newer version than 1 is refused by name).
Result<nlohmann::json> LoadClusterRecord(const std::string& path);
// The same checks on a parsed document (`doc` discarded: not JSON); `path` names it in errors.
Result<nlohmann::json> CheckClusterRecord(nlohmann::json doc, const std::string& path);

struct ClusterComparison {
  nlohmann::json doc;  // "cutover.compat-cluster-compare/1"
  std::string table;
  bool failed = false;  // a wrong collective result on either side
};

ClusterComparison CompareClusterRecords(const nlohmann::json& source, const nlohmann::json& target);

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CLUSTER_COMPARE_H_
