#include "probe/policy.h"

#include <algorithm>
#include <set>

#include <yaml-cpp/yaml.h>

#include "core/file_util.h"
#include "core/read_input.h"
#include "core/yaml_reader.h"
#include "probe/data.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

// The numeric part a version starts with: "2.3.0+cu121" -> "2.3.0", "9.1.0.70" stays.
std::string NumericPart(std::string_view v) {
  v = TrimField(v);
  size_t n = 0;
  while (n < v.size() && (std::isdigit(static_cast<unsigned char>(v[n])) || v[n] == '.')) ++n;
  std::string out(v.substr(0, n));
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

std::vector<std::string> Components(std::string_view v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= v.size()) {
    size_t dot = v.find('.', start);
    if (dot == std::string_view::npos) dot = v.size();
    out.emplace_back(v.substr(start, dot - start));
    start = dot + 1;
  }
  return out;
}

}  // namespace

Result<VersionConstraint> ParseVersionConstraint(std::string_view text) {
  VersionConstraint c{.text = std::string(TrimField(text))};
  if (c.text.empty()) return Status::InvalidArgument("empty version constraint");
  size_t start = 0;
  while (start <= c.text.size()) {
    size_t comma = c.text.find(',', start);
    if (comma == std::string::npos) comma = c.text.size();
    std::string clause(TrimField(std::string_view(c.text).substr(start, comma - start)));
    start = comma + 1;
    if (clause.empty()) {
      return Status::InvalidArgument("'" + c.text + "': an empty clause between commas");
    }
    VersionClause vc;
    for (const char* op : {">=", "<=", "==", "!=", ">", "<", "="}) {
      if (clause.rfind(op, 0) == 0) {
        vc.op = op == std::string("=") ? "==" : op;
        clause = std::string(TrimField(std::string_view(clause).substr(std::string(op).size())));
        break;
      }
    }
    if (vc.op.empty()) {
      vc.op = "prefix";
      for (const char* wild : {".x", ".X", ".*"}) {
        std::string w = wild;
        if (clause.size() > w.size() && clause.compare(clause.size() - w.size(), w.size(), w) == 0) {
          clause.resize(clause.size() - w.size());
        }
      }
    }
    if (!IsDottedVersion(clause)) {
      return Status::InvalidArgument("'" + c.text + "': '" + clause +
                                     "' is not a version (expected digits and dots, e.g. 12.4)");
    }
    vc.version = clause;
    c.clauses.push_back(std::move(vc));
  }
  return c;
}

bool VersionConstraint::Matches(std::string_view version) const {
  std::string v = NumericPart(version);
  if (v.empty()) return false;
  for (const VersionClause& c : clauses) {
    int cmp = CompareVersions(v, c.version);
    bool ok = true;
    if (c.op == ">=") ok = cmp >= 0;
    if (c.op == ">") ok = cmp > 0;
    if (c.op == "<=") ok = cmp <= 0;
    if (c.op == "<") ok = cmp < 0;
    if (c.op == "==") ok = cmp == 0;
    if (c.op == "!=") ok = cmp != 0;
    if (c.op == "prefix") {
      std::vector<std::string> want = Components(c.version), have = Components(v);
      ok = have.size() >= want.size() &&
           std::equal(want.begin(), want.end(), have.begin(), [](const auto& a, const auto& b) {
             return CompareVersions(a, b) == 0;
           });
    }
    if (!ok) return false;
  }
  return true;
}

namespace {

constexpr std::string_view kTopKeys[] = {"apiVersion", "kind", "name", "requirements"};
constexpr std::string_view kRequirementKeys[] = {
    "cuda_toolkit", "driver",     "node_driver",
    "glibc",        "libraries",  "frameworks",
    "framework_cuda_matches_image", "single_copy"};

class PolicyParser : public yaml::Reader {
 public:
  using Reader::Reader;

  std::optional<VersionConstraint> Constraint(const YAML::Node& map, const std::string& path,
                                              const char* key) {
    YAML::Node v = Get(map, path, key, false);
    if (!v.IsDefined()) return std::nullopt;
    return ConstraintOf(v, yaml::Sub(path, key));
  }

  std::optional<VersionConstraint> ConstraintOf(const YAML::Node& v, const std::string& path) {
    if (!v.IsScalar()) {
      Error(v, path, "must be a version constraint such as \">=12.4\"");
      return std::nullopt;
    }
    Result<VersionConstraint> c = ParseVersionConstraint(v.Scalar());
    if (!c.ok()) {
      Error(v, path, c.status().message());
      return std::nullopt;
    }
    return *c;
  }

  // name -> constraint.
  std::map<std::string, VersionConstraint> Constraints(const YAML::Node& map,
                                                        const std::string& path, const char* key) {
    std::map<std::string, VersionConstraint> out;
    YAML::Node v = Get(map, path, key, false);
    if (!v.IsDefined()) return out;
    if (!v.IsMap()) {
      Error(v, yaml::Sub(path, key), "must be a mapping of names to version constraints");
      return out;
    }
    for (const auto& kv : v) {
      if (!kv.first.IsScalar() || kv.first.Scalar().empty()) {
        Error(kv.first, yaml::Sub(path, key), "keys must be names");
        continue;
      }
      std::string name = kv.first.Scalar();
      std::optional<VersionConstraint> c =
          ConstraintOf(kv.second, yaml::Sub(yaml::Sub(path, key), name));
      if (c && !out.emplace(name, *c).second) {
        Error(kv.first, yaml::Sub(yaml::Sub(path, key), name), "duplicate key");
      }
    }
    return out;
  }
};

}  // namespace

Result<Policy> ParsePolicy(std::string_view yaml_text, std::string_view file_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(file_name) + ":" + std::to_string(e.mark.line + 1) +
                                   ":" + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  PolicyParser p(file_name);
  Policy policy;
  try {
    if (!root.IsMap()) {
      p.Error(root, "", "a policy must be a YAML mapping");
    } else if (p.Map(root, "", kTopKeys)) {
      std::optional<std::string> api = p.String(root, "", "apiVersion", true);
      if (api && *api != "cutover/v1") {
        p.Error(root["apiVersion"], "apiVersion", "must be cutover/v1, got " + *api);
      }
      std::optional<std::string> kind = p.String(root, "", "kind", true);
      if (kind && *kind != "ProbePolicy") {
        p.Error(root["kind"], "kind", "must be ProbePolicy, got " + *kind);
      }
      policy.name = p.String(root, "", "name", false).value_or("");
      YAML::Node req = p.Get(root, "", "requirements", true);
      if (req.IsDefined() && p.Map(req, "requirements", kRequirementKeys)) {
        const std::string r = "requirements";
        policy.cuda_toolkit = p.Constraint(req, r, "cuda_toolkit");
        policy.driver = p.Constraint(req, r, "driver");
        policy.glibc = p.Constraint(req, r, "glibc");
        policy.node_driver = p.String(req, r, "node_driver", false);
        if (policy.node_driver && !IsDottedVersion(*policy.node_driver)) {
          p.Error(req["node_driver"], "requirements.node_driver",
                  "must be a driver version such as 550.54.14, got " + *policy.node_driver);
        } else if (policy.node_driver && !CudaForDriver(*policy.node_driver)) {
          p.Error(req["node_driver"], "requirements.node_driver",
                  "driver " + *policy.node_driver + " is older than every known driver branch");
        }
        policy.libraries = p.Constraints(req, r, "libraries");
        policy.frameworks = p.Constraints(req, r, "frameworks");
        YAML::Node m = p.Get(req, r, "framework_cuda_matches_image", false);
        if (m.IsDefined()) {
          bool b = false;
          if (!m.IsScalar() || !YAML::convert<bool>::decode(m, b)) {
            p.Error(m, "requirements.framework_cuda_matches_image", "must be true or false");
          }
          policy.framework_cuda_matches_image = b;
        }
        policy.single_copy = p.StringList(req, r, "single_copy", false).value_or(
            std::vector<std::string>{});
        if (req.size() == 0) p.Error(req, r, "must name at least one requirement");
      }
    }
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, "", e.msg);
  }
  CUTOVER_RETURN_IF_ERROR(p.ErrorStatus());
  return policy;
}

Result<Policy> LoadPolicy(const std::string& path) {
  Result<std::string> text = ReadInput(path);
  if (!text.ok()) return Status::InvalidArgument(text.status().message());
  return ParsePolicy(*text, path);
}

int PolicyReport::Count(std::string_view outcome) const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(),
                                        [&](const PolicyCheck& c) { return c.outcome == outcome; }));
}

namespace {

// The highest toolkit version, or "".
std::string HighestToolkit(const Fingerprint& fp) {
  std::string best;
  for (const ToolkitInfo& t : fp.cuda_toolkits) {
    if (best.empty() || CompareVersions(t.version, best) > 0) best = t.version;
  }
  return best;
}

// The CUDA the image's user space brings: its toolkit, else a pip CUDA runtime's version, else "".
std::string ImageCuda(const Fingerprint& fp, std::string* from) {
  std::string tk = HighestToolkit(fp);
  if (!tk.empty()) {
    *from = "CUDA toolkit";
    return tk;
  }
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name == "cudart" && l.version) {
      *from = "libcudart (" + l.origin + ")";
      return *l.version;
    }
  }
  return "";
}

PolicyCheck Versioned(const std::string& req, const VersionConstraint& c,
                      const std::optional<std::string>& found, const std::string& what) {
  PolicyCheck k{.requirement = req, .expected = c.text};
  if (!found || found->empty()) {
    k.found = "not found";
    k.outcome = "fail";
    k.message = what + " not found";
  } else {
    k.found = *found;
    bool ok = c.Matches(*found);
    k.outcome = ok ? "pass" : "fail";
    k.message = what + " " + *found + (ok ? " satisfies " : " does not satisfy ") + c.text;
  }
  return k;
}

std::string Mm(const std::string& v) { return VersionPrefix(NumericPart(v), 2); }

void CheckNodeDriver(const Policy& p, const Fingerprint& fp, PolicyReport& r) {
  const std::string driver_cuda = *CudaForDriver(*p.node_driver);
  // What must run on it: the image's CUDA and each framework's build.
  std::vector<std::pair<std::string, std::string>> needs;
  std::string from;
  std::string cuda = ImageCuda(fp, &from);
  if (!cuda.empty()) needs.emplace_back(from, cuda);
  for (const FrameworkInfo& f : fp.frameworks) {
    if (f.cuda) needs.emplace_back(f.name + " (built for CUDA)", *f.cuda);
  }
  PolicyCheck k{.requirement = "node_driver",
                .expected = "driver " + *p.node_driver + " (CUDA " + driver_cuda + ")"};
  if (needs.empty()) {
    k.found = "no CUDA user space";
    k.outcome = "warn";
    k.message = "the image has no CUDA toolkit, runtime or CUDA framework to check against "
                "driver " + *p.node_driver;
    r.checks.push_back(k);
    return;
  }
  std::string worst = "pass", found, msg;
  for (const auto& [what, v] : needs) {
    found += (found.empty() ? "" : ", ") + what + " " + v;
    int cmp = CompareVersions(Mm(v), driver_cuda);
    if (cmp <= 0) continue;
    bool same_major = VersionPrefix(Mm(v), 1) == VersionPrefix(driver_cuda, 1);
    if (same_major && CompareVersions(VersionPrefix(Mm(v), 1), "11") >= 0) {
      // CUDA minor-version compatibility: runs, but PTX JIT and newer driver APIs do not.
      if (worst == "pass") worst = "warn";
      msg += (msg.empty() ? "" : "; ") + what + " " + v + " is newer than the driver's CUDA " +
             driver_cuda + ": it runs under minor-version compatibility only (no PTX JIT of " +
             "newer code, no newer driver APIs)";
    } else {
      worst = "fail";
      msg += (msg.empty() ? "" : "; ") + what + " " + v + " needs a driver for CUDA " + Mm(v) +
             "; driver " + *p.node_driver + " supports CUDA " + driver_cuda;
    }
  }
  k.found = found;
  k.outcome = worst;
  k.message = msg.empty() ? "driver " + *p.node_driver + " (CUDA " + driver_cuda + ") runs " + found
                          : msg;
  r.checks.push_back(k);
}

}  // namespace

PolicyReport CheckPolicy(const Policy& p, const Fingerprint& fp) {
  PolicyReport r{.policy = p.name};
  if (p.cuda_toolkit) {
    std::string tk = HighestToolkit(fp);
    r.checks.push_back(Versioned("cuda_toolkit", *p.cuda_toolkit,
                                 tk.empty() ? std::nullopt : std::optional<std::string>(tk),
                                 "CUDA toolkit"));
  }
  if (p.driver) {
    PolicyCheck k = Versioned("driver", *p.driver,
                              fp.driver.status == "ok" ? fp.driver.version : std::nullopt,
                              "NVIDIA driver");
    if (k.found == "not found" && !fp.collection.live) {
      k.message += " (an image root carries no driver: use node_driver for the node pool's)";
    }
    r.checks.push_back(k);
  }
  if (p.node_driver) CheckNodeDriver(p, fp, r);
  if (p.glibc) r.checks.push_back(Versioned("glibc", *p.glibc, fp.os.glibc, "glibc"));
  for (const auto& [name, c] : p.libraries) {
    std::vector<const LibraryInfo*> copies;
    for (const LibraryInfo& l : fp.libraries) {
      if (l.name == name) copies.push_back(&l);
    }
    if (copies.empty()) {
      r.checks.push_back(Versioned("libraries." + name, c, std::nullopt, "lib" + name));
      continue;
    }
    // Every copy must hold: which one loads depends on the search order.
    PolicyCheck k{.requirement = "libraries." + name, .expected = c.text, .outcome = "pass"};
    std::string bad;
    for (const LibraryInfo* l : copies) {
      std::string v = l->version.value_or("");
      k.found += (k.found.empty() ? "" : ", ") + (v.empty() ? "unknown" : v) + " (" + l->path + ")";
      if (v.empty() || !c.Matches(v)) {
        k.outcome = "fail";
        bad += (bad.empty() ? "" : ", ") + l->path + " (" + (v.empty() ? "version unknown" : v) + ")";
      }
    }
    k.message = k.outcome == "pass" ? "lib" + name + " satisfies " + c.text
                                    : "lib" + name + " does not satisfy " + c.text + ": " + bad;
    r.checks.push_back(k);
  }
  for (const auto& [name, c] : p.frameworks) {
    std::optional<std::string> v;
    for (const FrameworkInfo& f : fp.frameworks) {
      if (f.name == name) v = f.version.value_or("");
    }
    r.checks.push_back(Versioned("frameworks." + name, c, v, name));
  }
  if (p.framework_cuda_matches_image) {
    std::string from;
    std::string cuda = ImageCuda(fp, &from);
    bool any = false;
    for (const FrameworkInfo& f : fp.frameworks) {
      if (!f.cuda) continue;
      any = true;
      PolicyCheck k{.requirement = "framework_cuda_matches_image." + f.name,
                    .expected = cuda.empty() ? "the image's CUDA" : "CUDA " + Mm(cuda),
                    .found = "built for CUDA " + *f.cuda};
      if (cuda.empty()) {
        k.outcome = "fail";
        k.message = f.name + " is built for CUDA " + *f.cuda +
                    " but the image has no CUDA toolkit or runtime library";
      } else if (Mm(*f.cuda) == Mm(cuda)) {
        k.outcome = "pass";
        k.message = f.name + " is built for CUDA " + *f.cuda + ", the image's " + from + " is " +
                    cuda;
      } else {
        k.outcome = "fail";
        k.message = f.name + " is built for CUDA " + *f.cuda + " but the image's " + from +
                    " is " + cuda;
      }
      r.checks.push_back(k);
    }
    if (!any) {
      r.checks.push_back({.requirement = "framework_cuda_matches_image",
                          .expected = "true",
                          .found = "no CUDA framework",
                          .outcome = "pass",
                          .message = "no framework built for CUDA was found: nothing to match"});
    }
  }
  for (const std::string& name : p.single_copy) {
    std::set<std::string> files;
    std::string found;
    for (const LibraryInfo& l : fp.libraries) {
      if (l.name != name) continue;
      if (files.insert(l.real_path.value_or(l.path)).second) {
        found += (found.empty() ? "" : ", ") + l.path + " (" + l.version.value_or("unknown") + ", " +
                 l.origin + ")";
      }
    }
    PolicyCheck k{.requirement = "single_copy." + name,
                  .expected = "at most one lib" + name,
                  .found = found.empty() ? "none" : found};
    k.outcome = files.size() > 1 ? "fail" : "pass";
    k.message = files.size() > 1
                    ? std::to_string(files.size()) + " copies of lib" + name +
                          " on the loader path; which one loads depends on the search order: " +
                          found
                    : files.empty() ? "no lib" + name + " found" : "one lib" + name + ": " + found;
    r.checks.push_back(k);
  }
  return r;
}

nlohmann::json PolicyReportToJson(const PolicyReport& r, const Fingerprint& fp) {
  nlohmann::json checks = nlohmann::json::array();
  for (const PolicyCheck& c : r.checks) {
    checks.push_back({{"requirement", c.requirement},
                      {"expected", c.expected},
                      {"found", c.found},
                      {"outcome", c.outcome},
                      {"message", c.message}});
  }
  return {{"schema", "cutover.policy-check/1"},
          {"policy", r.policy},
          {"root", fp.collection.root},
          {"hostname", fp.hostname ? nlohmann::json(*fp.hostname) : nlohmann::json(nullptr)},
          {"passed", !r.failed()},
          {"summary", {{"pass", r.Count("pass")}, {"warn", r.Count("warn")}, {"fail", r.Count("fail")}}},
          {"checks", checks}};
}

std::string RenderPolicyTable(const PolicyReport& r) {
  std::string out;
  for (const PolicyCheck& c : r.checks) {
    std::string tag = c.outcome == "pass" ? "PASS" : c.outcome == "warn" ? "WARN" : "FAIL";
    out += tag + "  " + c.requirement + ": " + c.message + "\n";
  }
  out += std::to_string(r.Count("pass")) + " passed, " + std::to_string(r.Count("warn")) +
         " with warnings, " + std::to_string(r.Count("fail")) + " failed" +
         (r.policy.empty() ? "" : " (policy " + r.policy + ")") + "\n";
  return out;
}

JunitReport PolicyJunit(const PolicyReport& r) {
  JunitReport j{.name = "cutover probe check"};
  JunitSuite s{.name = r.policy.empty() ? "policy" : "policy " + r.policy};
  for (const PolicyCheck& c : r.checks) {
    JunitCase k{.classname = "probe.check", .name = c.requirement};
    std::string detail = c.message + "\nexpected: " + c.expected + "\nfound: " + c.found;
    if (c.outcome == "fail") {
      k.outcome = JunitOutcome::kFailed;
      k.message = c.message;
      k.text = detail;
    } else {
      k.system_out = c.outcome + ": " + detail;
    }
    s.cases.push_back(std::move(k));
  }
  j.suites.push_back(std::move(s));
  return j;
}

}  // namespace cutover::probe
