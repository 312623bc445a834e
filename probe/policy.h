// Policies for `cutover probe check`: the requirements a CI pipeline holds a target image (or a
// live host) to, written in YAML and checked against a fingerprint.
//
//   apiVersion: cutover/v1
//   kind: ProbePolicy
//   name: training-image            # optional, shown in the report
//   requirements:
//     cuda_toolkit: ">=12.4"        # the highest CUDA toolkit found
//     driver: ">=550"               # the host's driver (a live host; an image has none)
//     node_driver: "550.54.14"      # the node pool's driver: must run the image's CUDA
//     glibc: ">=2.31"
//     libraries:                    # every copy found of each library must satisfy
//       cudnn: "9.x"
//       nccl: ">=2.21"
//     frameworks:                   # Python distributions (torch, jax, ...)
//       torch: ">=2.3"
//     framework_cuda_matches_image: true   # torch & co. built for the image's CUDA
//     single_copy: [cudnn, nccl]    # no second copy of these on the loader path
//
// Constraints: clauses joined by commas, all must hold: ">=12.4", ">12", "<=2.22", "<3",
// "==9.1.0", "!=2.19.3", or a bare version that matches by prefix ("9", "9.x", "9.*", "12.4"
// matches "12.4.1"). Versions compare numerically component by component.
//
// Every requirement gives one PolicyCheck: pass, warn (holds with a caveat) or fail. Unknown keys
// and malformed constraints are errors that name file, line and column.
//
// Thread-safety: pure functions over values.
#ifndef CUTOVER_PROBE_POLICY_H_
#define CUTOVER_PROBE_POLICY_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fingerprint.h"
#include "core/junit.h"
#include "core/status.h"

namespace cutover::probe {

// One clause of a constraint.
struct VersionClause {
  std::string op;       // ">=", ">", "<=", "<", "==", "!=", or "prefix"
  std::string version;  // "12.4" (for prefix: the components that must match)
};

struct VersionConstraint {
  std::string text;  // as written
  std::vector<VersionClause> clauses;
  bool Matches(std::string_view version) const;
};

// Parses a constraint; InvalidArgument saying what is wrong with `text`.
Result<VersionConstraint> ParseVersionConstraint(std::string_view text);

struct Policy {
  std::string name;
  std::optional<VersionConstraint> cuda_toolkit, driver, glibc;
  std::optional<std::string> node_driver;
  std::map<std::string, VersionConstraint> libraries, frameworks;
  bool framework_cuda_matches_image = false;
  std::vector<std::string> single_copy;
};

// Parses a policy document; errors are "FILE:LINE:COL: path: message", one per line.
Result<Policy> ParsePolicy(std::string_view yaml_text, std::string_view file_name);
Result<Policy> LoadPolicy(const std::string& path);

struct PolicyCheck {
  std::string requirement;  // "cuda_toolkit", "libraries.cudnn", ...
  std::string expected;     // the constraint as written
  std::string found;        // what the fingerprint has ("12.4.1", "not found")
  std::string outcome;      // "pass" | "warn" | "fail"
  std::string message;      // one sentence
};

struct PolicyReport {
  std::string policy;
  std::vector<PolicyCheck> checks;
  int Count(std::string_view outcome) const;
  bool failed() const { return Count("fail") > 0; }
};

PolicyReport CheckPolicy(const Policy& policy, const Fingerprint& fp);

// "cutover.policy-check/1".
nlohmann::json PolicyReportToJson(const PolicyReport& r, const Fingerprint& fp);
std::string RenderPolicyTable(const PolicyReport& r);
// One suite, one case per check (fail = failure; warn = passed with the caveat in system-out).
JunitReport PolicyJunit(const PolicyReport& r);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_POLICY_H_
