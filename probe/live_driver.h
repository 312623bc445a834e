// The live driver query: NVML (libnvidia-ml.so.1) and the CUDA driver API (libcuda.so.1) loaded
// at run time through symbol tables (one list per library, each symbol required or optional,
// versioned names such as nvmlInit_v2 tried before the plain name). A missing library or
// required symbol becomes driver.status "missing"/"error" with the reason; a missing optional
// symbol leaves its fields null. The query runs in a forked child with a deadline, because a
// broken driver can hang inside nvmlInit.
//
// Thread-safety: QueryLiveDriver forks; call it from the main thread before starting others.
#ifndef CUTOVER_PROBE_LIVE_DRIVER_H_
#define CUTOVER_PROBE_LIVE_DRIVER_H_

#include <string>
#include <vector>

#include "core/fingerprint.h"

namespace cutover::probe {

struct LiveDriverOptions {
  std::string nvml_library = "libnvidia-ml.so.1";  // a soname or a path
  std::string cuda_library = "libcuda.so.1";
  int timeout_ms = 5000;
};

struct LiveDriverResult {
  DriverInfo driver;  // status, version, cuda_version, source, error
  std::vector<GpuInfo> gpus;
  std::vector<Finding> findings;
};

// Asks NVML and the CUDA driver in a child process. Never fails: every problem is in the
// result (driver.status/error and findings).
LiveDriverResult QueryLiveDriver(const LiveDriverOptions& options);

// The same query in this process (what the child runs). Exposed for tests.
LiveDriverResult QueryLiveDriverInProcess(const LiveDriverOptions& options);

// The names of the set bits of an NVML clocks-throttle (clocks-event) reason mask.
std::vector<std::string> ThrottleReasonNames(unsigned long long mask);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_LIVE_DRIVER_H_
