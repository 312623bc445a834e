// `probe collect --format prometheus|labels`: a fingerprint turned into the text formats other
// systems already read.
//
//   prometheus  the Prometheus text exposition format (version 0.0.4), for node_exporter's
//               textfile collector: cutover_gpu_info and cutover_driver_info info series (value
//               1, identity in labels), one gauge family per health figure of a GPU, and
//               cutover_probe_collection_seconds. A figure the fingerprint does not know (null,
//               e.g. ECC counts when only files were read) gives no sample, never a made-up 0.
//   labels      GPU Feature Discovery-style node labels, one `key=value` per line, sorted by key,
//               with the key names GFD uses (nvidia.com/cuda.driver.major, nvidia.com/gpu.product,
//               ...), so selectors written for GFD also match hosts labelled from a fingerprint.
//
// Both are pure functions of the fingerprint: the same document always gives the same bytes.
//
// Thread-safety: pure functions; safe from any thread.
#ifndef CUTOVER_PROBE_EXPORT_H_
#define CUTOVER_PROBE_EXPORT_H_

#include <string>
#include <string_view>

#include "core/fingerprint.h"

namespace cutover::probe {

// The Prometheus text for `fp`, ending in a newline (empty families are left out). Every family
// has its # HELP and # TYPE lines, and its samples follow them together.
std::string RenderPrometheus(const Fingerprint& fp);

// A label value escaped for the Prometheus text format: backslash, double quote and line feed
// become \\, \" and \n; every other byte is kept (label values are UTF-8).
std::string EscapePrometheusLabelValue(std::string_view value);

// The GFD-style labels for `fp`, one "key=value\n" per label, sorted by key. GPU model labels
// (product, memory, compute capability, family) describe GPU 0, as GFD describes a node by one
// model; labels whose value the fingerprint does not know are left out. Empty when `fp` has
// neither a driver version nor GPUs.
std::string RenderGfdLabels(const Fingerprint& fp);

// The GFD architecture family of a compute capability "major.minor": "volta" (7.0-7.4),
// "turing" (7.5), "ampere" (8.x; GFD also files Ada 8.9 there), "hopper" (9.x), "blackwell"
// (10.x, 12.x), older ones by name; "undefined" for anything else or an unparsable value.
std::string GpuFamily(std::string_view compute_capability);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_EXPORT_H_
