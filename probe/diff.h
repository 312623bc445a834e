// `probe diff`: compares two fingerprints (a source host or image and a target host) against the
// rules data file probe/rules/compat-rules.json and classifies what will not run (blocker) and
// what will run differently (warning, info). The single-host rules (a host whose own driver is
// too old for its own toolkit, kernel module and user-space driver disagreeing, ...) run on each
// side alone, in Diff() and in `probe collect` (SingleHostCollectionFindings).
//
// Modes: kHost (the workload uses the target's installed stack: every stack change is checked)
// and kContainer (the workload brings its image's user-space stack: the source's CUDA runtime,
// cuDNN, NCCL and frameworks are checked against the target's driver and GPUs only).
//
// Thread-safety: pure functions over values; BuiltinRules() is parsed once, thread-safely.
#ifndef CUTOVER_PROBE_DIFF_H_
#define CUTOVER_PROBE_DIFF_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fingerprint.h"
#include "core/status.h"

namespace cutover::probe {

inline constexpr char kDiffSchema[] = "cutover.diff/1";

// A framework release that changed a numerics default (rules "numerics.framework_defaults").
struct NumericsDefault {
  std::string code;        // the finding's code ("numerics.tf32")
  std::string framework;   // Python distribution name ("torch")
  std::string setting;     // "torch.backends.cuda.matmul.allow_tf32"
  std::string changed_in;  // the first release with the new default ("1.12")
  std::string before;      // the default before it ("True")
  std::string after;       // and from it on ("False")
  std::string note;        // what did not change, for the message
  std::string fix;
};

// An environment variable that switches a numerics mode (rules "numerics.env").
struct NumericsEnv {
  std::string code;
  std::string name;           // "NVIDIA_TF32_OVERRIDE"
  std::string disables_tf32;  // the value that turns TF32 off everywhere; "" when none does
  std::string effect;         // for the message
};

// The parsed rules file ("schema": "cutover.probe-rules/1").
struct CompatRules {
  int version = 0;
  // (CUDA "major.minor", minimum Linux driver for the full toolkit), ascending by CUDA version.
  std::vector<std::pair<std::string, std::string>> toolkit_drivers;
  // CUDA major -> the minimum driver for minor-version compatibility within that major.
  std::map<int, std::string> minor_version_compat;
  // CUDA major -> the lowest compute capability its toolkits still build for.
  std::map<int, std::string> min_compute_capability;
  // (compute capability, the first CUDA "major.minor" that knows it), ascending.
  std::vector<std::pair<std::string, std::string>> introduced_architectures;
  std::string forward_compat_package;  // "cuda-compat-<major>-<minor>"
  // Finding code -> "blocker" | "warning" | "info"; a code absent here is a "warning".
  std::map<std::string, std::string> severity;
  double memory_smaller_blocker_ratio = 0.5;
  // "numerics" (optional: absent, no numerics rules run). TF32 exists from compute capability
  // `tf32_min_compute_capability`; `tf32_code`, `tf32_default_note` and `tf32_fix` word the
  // finding for a target that gains it.
  std::string tf32_code;
  std::string tf32_min_compute_capability;
  std::string tf32_default_note;
  std::string tf32_fix;
  std::vector<NumericsDefault> numerics_defaults;
  std::vector<NumericsEnv> numerics_env;
};

// Parses a rules document. InvalidArgument naming the field when it is malformed.
Result<CompatRules> ParseCompatRules(std::string_view text);

// The embedded rules (probe/rules/compat-rules.json), parsed once. An embedded file that fails
// to parse is a build bug caught by the tests; it yields empty rules.
const CompatRules& BuiltinRules();

// One diff finding. `source`/`target` are the compared values (empty when not applicable);
// `scope` is "pair" for a source-vs-target rule, "source" or "target" for a single-host rule.
struct DiffFinding {
  std::string severity;   // "blocker" | "warning" | "info"
  std::string code;       // stable dotted name ("driver.too_old_for_toolkit")
  std::string component;  // "driver", "cuda", "gpu", "cudnn", "nccl", "cublas", "pcie", ...
  std::string scope;
  std::optional<std::string> source;
  std::optional<std::string> target;
  std::string message;
  std::string fix;
};

enum class DiffMode { kHost, kContainer };

// "host" | "container".
std::string_view DiffModeName(DiffMode mode);
// Parses "host" | "container"; InvalidArgument otherwise.
Result<DiffMode> ParseDiffMode(std::string_view name);

struct DiffReport {
  DiffMode mode = DiffMode::kHost;
  int rules_version = 0;
  std::optional<std::string> source_host;  // hostnames, where known
  std::optional<std::string> target_host;
  std::vector<DiffFinding> findings;  // blockers first, then warnings, then infos

  int Count(std::string_view severity) const;
};

// The single-host rules on `fp` alone; each finding has scope `scope` ("source" | "target").
std::vector<DiffFinding> CheckHost(const Fingerprint& fp, const CompatRules& rules,
                                   std::string_view scope);

// The single-host rules as collection findings (blocker -> "error"), for `probe collect`.
std::vector<Finding> SingleHostCollectionFindings(const Fingerprint& fp);

// Every pair rule in `mode`, plus CheckHost on each side.
DiffReport Diff(const Fingerprint& source, const Fingerprint& target, DiffMode mode,
                const CompatRules& rules);

// The JSON document ("schema": kDiffSchema), specified by docs/schemas/diff-1.json.
nlohmann::json DiffToJson(const DiffReport& report);

// A readable table for people.
std::string RenderDiffTable(const DiffReport& report);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_DIFF_H_
