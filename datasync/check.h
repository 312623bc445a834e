// `datasync check`: before a long transfer, prove that a store allows everything push and pull
// need, and measure it. Each step runs against a probe object under "check/" that the check
// writes and removes:
//
//   list      List("snap/", "snapshots/")     read access to the listing; counts snapshots
//   config    Get("config")                   present (an existing store) or absent (a new one)
//   put       Put(probe, sample)              write access; upload throughput
//   head      Head(probe) x N                 existence check; round-trip latency (median)
//   get       Get(probe)                      read access, bytes equal; download throughput
//   range     GetRange(probe, offset, len)    ranged reads (pull reads packs this way)
//   listed    List("check/")                  the listing shows new objects
//   delete    Delete(probe), Head -> NotFound delete access (gc needs it), and it took effect
//
// A step that cannot run because an earlier one failed is "skipped". The check never touches
// any object outside "check/".
#ifndef CUTOVER_DATASYNC_CHECK_H_
#define CUTOVER_DATASYNC_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

struct CheckOptions {
  uint64_t sample_bytes = 4 << 20;  // the probe object's size (throughput sample), >= 1
  int latency_samples = 5;          // Head round trips for the latency median, >= 1
  uint64_t seed = 0;                // probe content and name; 0 = from the clock and pid
};

struct CheckStep {
  std::string name;
  std::string result;  // "ok" | "failed" | "skipped"
  std::string detail;  // what was found, or why it failed
  double seconds = 0;
  std::optional<double> bytes_per_s;  // put, get
};

struct CheckResult {
  std::vector<CheckStep> steps;
  std::string probe_key;
  uint64_t snapshots = 0;
  bool config_present = false;
  std::optional<double> latency_ms;  // median Head round trip
  bool ok = false;                   // every step ok
  bool probe_left = false;           // the probe object could not be removed
};

// Runs the steps in order against `store`. Only an invalid option is an error; what the store
// refuses is a failed step.
Result<CheckResult> CheckStore(Store& store, const CheckOptions& options);

// The result of a check of `store_url` with `opts` as the cutover.datasync-check/1 document and
// as the table `datasync check` prints.
nlohmann::json CheckResultToJson(const CheckResult& r, const CheckOptions& opts,
                                 std::string_view store_url);
std::string RenderCheckResult(const CheckResult& r, const CheckOptions& opts,
                              std::string_view store_url);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_CHECK_H_
