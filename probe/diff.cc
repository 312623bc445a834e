#include "probe/diff.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "probe/check_binary.h"
#include "probe/data.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

// The scope of a finding that compares the two sides (fleet findings name a host instead).
constexpr char kPair[] = "pair";

// The leading decimal number of `version`; -1 when there is none or it has more than 9 digits
// (no version component is that long, and a longer one would overflow).
int Major(std::string_view version) {
  int m = 0;
  size_t i = 0;
  while (i < version.size() && version[i] >= '0' && version[i] <= '9') {
    if (i == 9) return -1;
    m = m * 10 + (version[i] - '0');
    ++i;
  }
  return i == 0 ? -1 : m;
}

int Minor(std::string_view version) {
  size_t dot = version.find('.');
  return dot == std::string_view::npos ? 0 : std::max(0, Major(version.substr(dot + 1)));
}

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("rules: " + field + ": " + why);
}

Result<std::string> Str(const nlohmann::json& o, const char* key, const std::string& where) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return Bad(where + "." + key, "expected a string");
  return it->get<std::string>();
}

// The rules context for one diff: what is compared, and where findings go.
class Checker {
 public:
  Checker(const CompatRules& rules, std::vector<DiffFinding>* out) : rules_(rules), out_(out) {}

  void Add(std::string code, std::string component, std::string scope,
           std::optional<std::string> source, std::optional<std::string> target,
           std::string message, std::string fix) {
    for (const DiffFinding& f : *out_) {
      if (f.code == code && f.scope == scope && f.source == source && f.target == target) return;
    }
    auto it = rules_.severity.find(code);
    std::string severity = it == rules_.severity.end() ? "warning" : it->second;
    out_->push_back({std::move(severity), std::move(code), std::move(component), std::move(scope),
                     std::move(source), std::move(target), std::move(message), std::move(fix)});
  }

  // The minimum driver for the full toolkit `cuda` ("12.4.1"): the row of its major.minor, or
  // the closest lower row of the same major; nullopt when the major is unknown.
  std::optional<std::string> ToolkitMinDriver(std::string_view cuda) const {
    std::string mm = VersionPrefix(cuda, 2);
    const std::string* best = nullptr;
    for (const auto& [v, d] : rules_.toolkit_drivers) {
      if (Major(v) == Major(mm) && CompareVersions(v, mm) <= 0) best = &d;
    }
    if (best == nullptr) return std::nullopt;
    return *best;
  }

  std::optional<std::string> MvcMinDriver(std::string_view cuda) const {
    auto it = rules_.minor_version_compat.find(Major(cuda));
    if (it == rules_.minor_version_compat.end()) return std::nullopt;
    return it->second;
  }

  // A CUDA requirement `cuda` of `what` (kind "toolkit" | "runtime" | "framework") on a
  // driver `driver`. Toolkits need the toolkit minimum; runtimes and frameworks may run under
  // minor-version compatibility.
  void CheckDriverFor(const std::string& cuda, const std::string& what, const std::string& kind,
                      const std::string& driver, const std::string& scope) {
    std::optional<std::string> need = ToolkitMinDriver(cuda);
    if (!need || CompareVersions(driver, *need) >= 0) return;
    std::optional<std::string> mvc = MvcMinDriver(cuda);
    std::string mm = VersionPrefix(cuda, 2);
    std::string compat = rules_.forward_compat_package;
    std::string pkg = compat;
    if (size_t p = pkg.find("<major>"); p != std::string::npos)
      pkg.replace(p, 7, std::to_string(Major(mm)));
    if (size_t p = pkg.find("<minor>"); p != std::string::npos)
      pkg.replace(p, 7, std::to_string(Minor(mm)));
    std::string fix = "upgrade the driver to " + *need +
                      " or newer, or install the forward "
                      "compatibility package " +
                      pkg + " (data center GPUs only)";
    bool in_mvc = mvc && CompareVersions(driver, *mvc) >= 0;
    if (kind != "toolkit" && in_mvc) {
      Add("driver.minor_version_compat", "driver", scope, cuda, driver,
          what + " (CUDA " + cuda + ") wants driver " + *need + "; driver " + driver +
              " runs it only through minor-version compatibility (limited feature set; PTX "
              "newer than the driver fails with cudaErrorUnsupportedPtxVersion)",
          fix);
      return;
    }
    std::string code = "driver.too_old_for_" + kind;
    std::string msg = what + " (CUDA " + cuda + ") needs driver " + *need + " or newer; driver " +
                      driver + " is older";
    if (kind == "toolkit" && in_mvc) {
      msg +=
          " (prebuilt binaries may still run under minor-version compatibility, but the "
          "toolkit's PTX JIT and tools do not)";
    } else if (mvc) {
      msg += " and below the minor-version compatibility minimum " + *mvc + " of CUDA " +
             std::to_string(Major(cuda)) + ".x";
    }
    Add(code, "driver", scope, cuda, driver, msg, fix);
  }

  // Compute capability `cc` of a GPU against CUDA `cuda` of `what`.
  void CheckArch(const std::string& cuda, const std::string& what, const std::string& cc,
                 const std::string& gpu, const std::string& scope) {
    auto it = rules_.min_compute_capability.find(Major(cuda));
    if (it != rules_.min_compute_capability.end() && CompareVersions(cc, it->second) < 0) {
      Add("gpu.arch_unsupported", "gpu", scope, std::to_string(Major(cuda)) + ".x", cc,
          what + " (CUDA " + cuda + ") does not support compute capability " + cc + " (" + gpu +
              "): CUDA " + std::to_string(Major(cuda)) + " builds for " + it->second +
              " and newer only",
          "use a toolkit and framework build of an older CUDA major that still supports " + cc +
              ", or a newer GPU");
      return;
    }
    for (const auto& [arch, first] : rules_.introduced_architectures) {
      if (arch == cc && CompareVersions(VersionPrefix(cuda, 2), first) < 0) {
        Add("gpu.arch_newer_than_toolkit", "gpu", scope, cuda, cc,
            what + " (CUDA " + cuda + ") predates compute capability " + cc + " (" + gpu +
                ", first in CUDA " + first +
                "): no SASS for it can exist; it runs only by "
                "JIT-compiling embedded PTX",
            "rebuild with CUDA " + first + " or newer (see probe check-binary)");
      }
    }
  }

  const CompatRules& rules() const { return rules_; }
  std::vector<DiffFinding>& out() { return *out_; }

 private:
  const CompatRules& rules_;
  std::vector<DiffFinding>* out_;
};

// A CUDA version a host's software needs, and what needs it.
struct CudaNeed {
  std::string cuda;
  std::string what;
  std::string kind;  // "toolkit" | "runtime" | "framework"
};

std::vector<CudaNeed> CudaNeeds(const Fingerprint& fp) {
  std::vector<CudaNeed> out;
  std::set<std::string> seen;
  auto add = [&](std::string cuda, std::string what, std::string kind) {
    if (!IsDottedVersion(cuda)) return;
    if (!seen.insert(kind + "|" + cuda).second) return;
    out.push_back({std::move(cuda), std::move(what), std::move(kind)});
  };
  for (const ToolkitInfo& t : fp.cuda_toolkits) {
    add(t.version, "CUDA toolkit " + t.version + " at " + t.path, "toolkit");
  }
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name == "cudart" && l.version) {
      add(*l.version, "CUDA runtime " + l.path, "runtime");
    }
  }
  for (const FrameworkInfo& f : fp.frameworks) {
    if (f.cuda) add(*f.cuda, f.name + " " + f.version.value_or("?") + " build", "framework");
  }
  return out;
}

// The version of the first library named `name` (pip copies first when `prefer_pip`).
std::optional<std::string> LibVersion(const Fingerprint& fp, std::string_view name,
                                      bool prefer_pip = false) {
  const LibraryInfo* first = nullptr;
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name != name) continue;
    if (prefer_pip && l.origin == "pip") return l.version;
    if (first == nullptr) first = &l;
  }
  if (first == nullptr) return std::nullopt;
  return first->version ? first->version : std::optional<std::string>("unknown");
}

bool HasNetPlugin(const Fingerprint& fp) {
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name.rfind("nccl-net", 0) == 0) return true;
  }
  return false;
}

std::string GpuLabel(const GpuInfo& g) {
  return "GPU " + std::to_string(g.index) + " " + g.name.value_or("unknown");
}

// The smallest value of `get` over the GPUs that have one.
template <typename T, typename F>
std::optional<T> MinOver(const std::vector<GpuInfo>& gpus, F get) {
  std::optional<T> out;
  for (const GpuInfo& g : gpus) {
    std::optional<T> v = get(g);
    if (v && (!out || *v < *out)) out = v;
  }
  return out;
}

void CheckCudnnAgainst(Checker& c, const std::string& built, const std::string& what,
                       const std::optional<std::string>& runtime, const std::string& scope,
                       bool pair) {
  if (!runtime) {
    if (pair) {
      c.Add("cudnn.missing_on_target", "cudnn", scope, built, std::nullopt,
            what + " uses cuDNN " + built + "; the target has no cuDNN library",
            "install cuDNN " + VersionPrefix(built, 2) + " or newer of the same major");
    }
    return;
  }
  if (!IsDottedVersion(*runtime) || !IsDottedVersion(built)) return;
  if (Major(*runtime) != Major(built)) {
    c.Add("cudnn.major_mismatch", "cudnn", scope, built, *runtime,
          what + " uses cuDNN " + built + " but cuDNN " + *runtime +
              " is found: compatibility across cuDNN majors is not guaranteed",
          "install cuDNN " + std::to_string(Major(built)) + ".x (minor " +
              std::to_string(Minor(built)) + " or newer)");
  } else if (Minor(*runtime) < Minor(built)) {
    c.Add("cudnn.minor_lower", "cudnn", scope, built, *runtime,
          what + " uses cuDNN " + built + " but the runtime cuDNN " + *runtime +
              " has a lower minor version (cuDNN supports runtime minor >= build minor only)",
          "install cuDNN " + VersionPrefix(built, 2) + " or newer of the same major");
  } else if (pair && CompareVersions(*runtime, built) != 0) {
    c.Add("cudnn.version_changed", "cudnn", scope, built, *runtime,
          "cuDNN changes from " + built + " to " + *runtime +
              " (compatible: same major, runtime minor not lower); kernels chosen may differ",
          "none needed; pin cuDNN " + built + " to reproduce results exactly");
  }
}

// The library of `libs` that needs the newest glibc (glibc_needed), or nullptr when none says.
const LibraryInfo* NewestGlibcNeed(const std::vector<LibraryInfo>& libs, bool pip_only = false) {
  const LibraryInfo* best = nullptr;
  for (const LibraryInfo& l : libs) {
    if (!l.glibc_needed || !IsDottedVersion(*l.glibc_needed)) continue;
    if (pip_only && l.origin != "pip") continue;
    if (best == nullptr || CompareVersions(*l.glibc_needed, *best->glibc_needed) > 0) best = &l;
  }
  return best;
}

// Libraries of `libs` whose glibc_needed is newer than `glibc`: the blocker
// "os.glibc_too_old_for_libraries" (`who` names whose libraries, for the message).
void CheckGlibcFor(Checker& c, const std::vector<LibraryInfo>& libs,
                   const std::optional<std::string>& glibc, const std::string& who,
                   const std::string& scope, bool pip_only) {
  if (!glibc || !IsDottedVersion(*glibc)) return;
  const LibraryInfo* need = NewestGlibcNeed(libs, pip_only);
  if (need == nullptr || CompareVersions(*need->glibc_needed, *glibc) <= 0) return;
  int count = 0;
  for (const LibraryInfo& l : libs) {
    if ((!pip_only || l.origin == "pip") && l.glibc_needed && IsDottedVersion(*l.glibc_needed) &&
        CompareVersions(*l.glibc_needed, *glibc) > 0) {
      ++count;
    }
  }
  c.Add("os.glibc_too_old_for_libraries", "os", scope, "GLIBC_" + *need->glibc_needed,
        "glibc " + *glibc,
        std::to_string(count) + " of " + who + " libraries need symbol versions newer than glibc " +
            *glibc + " (" + need->path + " needs GLIBC_" + *need->glibc_needed +
            "): the loader refuses them (\"version `GLIBC_" + *need->glibc_needed +
            "' not found\")",
        "run on an OS with glibc " + *need->glibc_needed +
            " or newer (or in a container built on one), or install builds of these libraries "
            "made for glibc " +
            *glibc);
}

// Libraries of `libs` (with --deep's cuda_archs) against the GPUs of `gpus_of`, judged as
// check-binary judges a file: "gpu.no_code_for_library" when a GPU has neither SASS it runs nor
// PTX its driver can JIT, "gpu.ptx_jit_only" when it runs the library only by JIT.
void CheckLibraryCode(Checker& c, const std::vector<LibraryInfo>& libs, const Fingerprint& gpus_of,
                      const std::string& who, const std::string& scope, bool pip_only) {
  std::set<std::string> ccs;
  for (const GpuInfo& g : gpus_of.gpus) {
    if (!g.compute_capability || !ccs.insert(*g.compute_capability).second) continue;
    for (const LibraryInfo& l : libs) {
      if (!l.cuda_archs || l.cuda_archs->empty() || (pip_only && l.origin != "pip")) continue;
      BinaryImage image;
      image.path = l.path;
      for (const std::string& name : *l.cuda_archs) {
        if (auto e = EntryFromArchName(name, l.ptx_isa)) image.entries.push_back(*e);
      }
      if (image.entries.empty()) continue;
      GpuVerdict v = JudgeImage(image, g, gpus_of.driver.cuda_version);
      std::string archs;
      for (const std::string& a : *l.cuda_archs) archs += (archs.empty() ? "" : " ") + a;
      if (v.verdict == "fails") {
        c.Add(
            "gpu.no_code_for_library", "gpu", scope, l.name + " " + l.version.value_or("?"),
            "compute capability " + *g.compute_capability,
            who + " " + l.path + " cannot run on " + GpuLabel(g) + ": " + v.reason,
            "install a build of " + l.name + " that embeds sm_" +
                [&] {
                  std::string cc = *g.compute_capability;
                  cc.erase(std::remove(cc.begin(), cc.end(), '.'), cc.end());
                  return cc;
                }() +
                " SASS or older-architecture PTX (see probe check-binary)");
      } else if (v.verdict == "runs" && v.via.rfind("ptx", 0) == 0) {
        c.Add("gpu.ptx_jit_only", "gpu", scope, l.name + " " + l.version.value_or("?"),
              "compute capability " + *g.compute_capability,
              who + " " + l.path + " has no SASS for " + GpuLabel(g) + " (it has " + archs +
                  "): it runs by JIT-compiling " + v.via +
                  ", which slows the first launches and may change numerics",
              "install a build with SASS for compute capability " + *g.compute_capability);
      }
    }
  }
}

void CheckHostInto(Checker& c, const Fingerprint& fp, const std::string& scope) {
  const DriverInfo& d = fp.driver;
  if (d.kernel_module_version && d.userspace_version &&
      *d.kernel_module_version != *d.userspace_version) {
    c.Add("driver.version_mismatch", "driver", scope, *d.kernel_module_version,
          *d.userspace_version,
          "kernel module " + *d.kernel_module_version + " but user-space driver libcuda.so." +
              *d.userspace_version + ": CUDA calls fail (driver/library version mismatch)",
          "reboot or reload the nvidia kernel module, or reinstall the driver so both match");
  }
  std::optional<std::string> driver = d.version ? d.version : d.kernel_module_version;
  if (d.fabric_manager_version && driver && *d.fabric_manager_version != *driver) {
    c.Add("driver.fabric_manager_mismatch", "driver", scope, *driver, *d.fabric_manager_version,
          "fabric manager " + *d.fabric_manager_version + " differs from driver " + *driver +
              " on an NVSwitch system: CUDA initialisation fails (error 802, system not ready)",
          "install nvidia-fabricmanager of exactly the driver's version " + *driver);
  }
  if (d.status == "ok" && driver) {
    for (const CudaNeed& n : CudaNeeds(fp))
      c.CheckDriverFor(n.cuda, n.what, n.kind, *driver, scope);
  }
  std::set<std::string> ccs;
  for (const GpuInfo& g : fp.gpus) {
    if (!g.compute_capability || !ccs.insert(*g.compute_capability).second) continue;
    for (const CudaNeed& n : CudaNeeds(fp)) {
      c.CheckArch(n.cuda, n.what, *g.compute_capability, GpuLabel(g), scope);
    }
  }
  CheckGlibcFor(c, fp.libraries, fp.os.glibc, "its own", scope, /*pip_only=*/false);
  CheckLibraryCode(c, fp.libraries, fp, "the library", scope, /*pip_only=*/false);
  std::optional<std::string> cudnn = LibVersion(fp, "cudnn", /*prefer_pip=*/true);
  for (const FrameworkInfo& f : fp.frameworks) {
    if (f.cudnn && cudnn) {
      CheckCudnnAgainst(c, *f.cudnn, f.name + " " + f.version.value_or("?"), cudnn, scope,
                        /*pair=*/false);
    }
  }
}

// The highest compute capability among `fp`'s GPUs that have one; nullopt when none does.
std::optional<std::string> MaxComputeCapability(const Fingerprint& fp) {
  std::optional<std::string> out;
  for (const GpuInfo& g : fp.gpus) {
    if (!g.compute_capability || !IsDottedVersion(*g.compute_capability)) continue;
    if (!out || CompareVersions(*g.compute_capability, *out) > 0) out = g.compute_capability;
  }
  return out;
}

// The numerics rules ("numerics" in the rules file): a framework default crossed between the
// hosts, a TF32 switch set differently, and a target that gains TF32 the source lacked. Each
// matters only where a GPU can run TF32.
void CompareNumerics(Checker& c, const Fingerprint& s, const Fingerprint& t, DiffMode mode) {
  const CompatRules& r = c.rules();
  if (r.tf32_min_compute_capability.empty()) return;
  auto tf32 = [&](const std::optional<std::string>& cc) {
    return cc && CompareVersions(*cc, r.tf32_min_compute_capability) >= 0;
  };
  const std::optional<std::string> scc = MaxComputeCapability(s), tcc = MaxComputeCapability(t);
  const bool stf32 = tf32(scc), ttf32 = tf32(tcc);
  auto env = [](const Fingerprint& fp, const std::string& name) -> std::optional<std::string> {
    auto it = fp.env.find(name);
    if (it == fp.env.end()) return std::nullopt;
    return it->second;
  };
  // A framework release across a changed default: in host mode only (in a container the
  // image brings its framework to the target).
  if (mode == DiffMode::kHost && ttf32) {
    for (const NumericsDefault& d : r.numerics_defaults) {
      for (const FrameworkInfo& sf : s.frameworks) {
        if (sf.name != d.framework || !sf.version || !IsDottedVersion(*sf.version)) continue;
        for (const FrameworkInfo& tf : t.frameworks) {
          if (tf.name != d.framework || !tf.version || !IsDottedVersion(*tf.version)) continue;
          bool s_new = CompareVersions(*sf.version, d.changed_in) >= 0;
          bool t_new = CompareVersions(*tf.version, d.changed_in) >= 0;
          if (s_new == t_new) continue;
          c.Add(d.code, "numerics", kPair, d.framework + " " + *sf.version,
                d.framework + " " + *tf.version,
                d.framework + " changes from " + *sf.version + " to " + *tf.version + " across " +
                    d.changed_in + ", where the default of " + d.setting + " changed from " +
                    d.before + " to " + d.after + ": " + d.setting + " defaults to " +
                    (s_new ? d.after : d.before) + " on the source and " +
                    (t_new ? d.after : d.before) +
                    " on the target, so FP32 results and speed differ (" + d.note + ")",
                d.fix);
        }
      }
    }
  }
  // A switch set differently on the two hosts (the environment is known only for live hosts).
  if ((stf32 || ttf32) && s.collection.live && t.collection.live) {
    for (const NumericsEnv& e : r.numerics_env) {
      std::optional<std::string> sv = env(s, e.name), tv = env(t, e.name);
      if (sv == tv) continue;
      auto show = [&](const std::optional<std::string>& v) {
        return e.name + (v ? "=" + *v : " unset");
      };
      c.Add(e.code, "numerics", kPair, show(sv), show(tv),
            e.name + " differs (source: " + show(sv) + ", target: " + show(tv) + "); " + e.effect,
            "set " + e.name + " to the same value on both hosts, or leave it unset on both");
    }
  }
  // A target that can run TF32 where the source's GPUs could not, unless the target's
  // environment turns TF32 off.
  if (!s.gpus.empty() && scc && !stf32 && ttf32) {
    bool pre_ampere_only = true;
    for (const GpuInfo& g : s.gpus) {
      if (!g.compute_capability) pre_ampere_only = false;
    }
    bool disabled = false;
    for (const NumericsEnv& e : r.numerics_env) {
      if (!e.disables_tf32.empty() && env(t, e.name) == e.disables_tf32) disabled = true;
    }
    if (pre_ampere_only && !disabled) {
      c.Add(r.tf32_code, "numerics", kPair, "compute capability " + *scc,
            "compute capability " + *tcc,
            "the target's GPUs (compute capability " + *tcc +
                ") have TF32 tensor cores, the source's (" + *scc +
                ") do not: FP32 matmuls and convolutions that run in TF32 on the target round "
                "inputs to a 10-bit mantissa and give different results (" +
                r.tf32_default_note + ")",
            r.tf32_fix);
    }
  }
}

// The target's driver against what the source's CUDA builds need, and the target GPUs'
// architectures against the source's builds.
void CompareDriver(Checker& c, const Fingerprint& s, const Fingerprint& t) {
  std::optional<std::string> tdriver = t.driver.version;
  if (t.driver.status != "ok" || !tdriver) {
    if (s.driver.status == "ok" || !s.gpus.empty() || !CudaNeeds(s).empty()) {
      c.Add("driver.missing", "driver", kPair, s.driver.version, std::nullopt,
            "the target has no working NVIDIA driver (" + t.driver.error.value_or(t.driver.status) +
                ")",
            "install the NVIDIA driver on the target");
    }
  } else {
    for (const CudaNeed& n : CudaNeeds(s)) {
      c.CheckDriverFor(n.cuda, "source " + n.what, n.kind, *tdriver, kPair);
    }
    if (s.driver.version && *s.driver.version != *tdriver) {
      c.Add("driver.version_changed", "driver", kPair, s.driver.version, tdriver,
            "driver changes from " + *s.driver.version + " to " + *tdriver, "none needed");
    }
  }
  // Architectures of the target GPUs against the source's CUDA builds.
  std::set<std::string> ccs;
  for (const GpuInfo& g : t.gpus) {
    if (!g.compute_capability || !ccs.insert(*g.compute_capability).second) continue;
    for (const CudaNeed& n : CudaNeeds(s)) {
      c.CheckArch(n.cuda, "source " + n.what, *g.compute_capability, "target " + GpuLabel(g),
                  kPair);
    }
  }
}

// Host mode: CUDA toolkits, cuDNN, NCCL, cuBLAS and glibc installed on each host.
void CompareHostStacks(Checker& c, const Fingerprint& s, const Fingerprint& t) {
  // Toolkits present on the source but not on the target (by major.minor).
  std::set<std::string> tk;
  for (const ToolkitInfo& x : t.cuda_toolkits) tk.insert(VersionPrefix(x.version, 2));
  for (const ToolkitInfo& x : s.cuda_toolkits) {
    std::string mm = VersionPrefix(x.version, 2);
    if (!tk.count(mm)) {
      c.Add("cuda.toolkit_missing", "cuda", kPair, x.version,
            t.cuda_toolkits.empty() ? std::nullopt
                                    : std::optional<std::string>(t.cuda_toolkits[0].version),
            "CUDA toolkit " + mm + " of the source is not installed on the target",
            "install CUDA toolkit " + mm + " on the target, or rebuild against the target's");
    }
  }
  // Library stacks.
  std::optional<std::string> sc = LibVersion(s, "cudnn", true), tc = LibVersion(t, "cudnn", true);
  if (sc) CheckCudnnAgainst(c, *sc, "the source", tc, kPair, /*pair=*/true);
  std::optional<std::string> sn = LibVersion(s, "nccl"), tn = LibVersion(t, "nccl");
  if (sn && !tn) {
    c.Add("nccl.missing_on_target", "nccl", kPair, sn, std::nullopt,
          "the source has NCCL " + *sn + "; the target has none", "install NCCL " + *sn);
  } else if (sn && tn && *sn != *tn) {
    c.Add("nccl.version_changed", "nccl", kPair, sn, tn,
          "NCCL changes from " + *sn + " to " + *tn +
              ": every rank of a job must run the same NCCL (mixed versions hang)",
          "install NCCL " + *sn + " on the target, or upgrade every node together");
  }
  std::optional<std::string> sb = LibVersion(s, "cublas"), tb = LibVersion(t, "cublas");
  if (sb && tb && *sb != *tb) {
    c.Add("cublas.version_changed", "cublas", kPair, sb, tb,
          "cuBLAS changes from " + *sb + " to " + *tb +
              ": GEMM kernel selection and so numerics may change",
          "compare outputs with `cutover compat`; pin cuBLAS " + *sb + " for bitwise results");
  }
  if (s.os.glibc && t.os.glibc && CompareVersions(*t.os.glibc, *s.os.glibc) < 0) {
    c.Add("os.glibc_older", "os", kPair, s.os.glibc, t.os.glibc,
          "the target's glibc " + *t.os.glibc + " is older than the source's " + *s.os.glibc +
              ": binaries built on the source may need symbol versions it lacks",
          "run the workload in a container built on the source's OS, or rebuild on the "
          "target");
  }
}

// The source's libraries that run on the target (all of them in a container: the image brings
// them; the pip wheels in host mode: they travel with the Python environment), and the NCCL net
// plugin on each side.
void CompareShippedLibraries(Checker& c, const Fingerprint& s, const Fingerprint& t, bool host) {
  // glibc only in host mode: a container brings its own C library with its libraries.
  if (host) {
    CheckGlibcFor(c, s.libraries, t.os.glibc, "the source's pip-wheel", kPair, /*pip_only=*/true);
  }
  CheckLibraryCode(c, s.libraries, t,
                   host ? "the source's pip-wheel library" : "the source image's", kPair,
                   /*pip_only=*/host);
  bool sp = HasNetPlugin(s), tp = HasNetPlugin(t);
  if (sp != tp) {
    c.Add("nccl.net_plugin_one_side", "nccl", kPair, sp ? "present" : "absent",
          tp ? "present" : "absent",
          std::string("an NCCL net plugin (libnccl-net*.so) is present on the ") +
              (sp ? "source" : "target") +
              " only: NCCL picks a different transport, and "
              "nodes that disagree hang or fall back to sockets",
          "install the same NCCL net plugin on every node, or remove it everywhere");
  }
}

// GPU count, memory, model, MIG and PCIe links.
void CompareGpus(Checker& c, const Fingerprint& s, const Fingerprint& t) {
  if (!s.gpus.empty() && t.gpus.empty()) {
    c.Add("gpu.none_on_target", "gpu", kPair, std::to_string(s.gpus.size()), "0",
          "the target has no GPU (the source has " + std::to_string(s.gpus.size()) + ")",
          "choose a target with GPUs");
  } else if (t.gpus.size() < s.gpus.size()) {
    c.Add("gpu.fewer", "gpu", kPair, std::to_string(s.gpus.size()), std::to_string(t.gpus.size()),
          "the target has " + std::to_string(t.gpus.size()) + " GPUs, the source " +
              std::to_string(s.gpus.size()),
          "choose a target with at least " + std::to_string(s.gpus.size()) +
              " GPUs, or shrink the job's world size");
  }
  if (!s.gpus.empty() && !t.gpus.empty()) {
    auto mem = [](const GpuInfo& g) { return g.memory_mib; };
    std::optional<uint64_t> sm = MinOver<uint64_t>(s.gpus, mem),
                            tm = MinOver<uint64_t>(t.gpus, mem);
    if (sm && tm && *tm < *sm) {
      std::string code = "gpu.memory_smaller";
      c.Add(code, "gpu", kPair, std::to_string(*sm) + " MiB", std::to_string(*tm) + " MiB",
            "each target GPU has " + std::to_string(*tm) + " MiB, the source's " +
                std::to_string(*sm) + " MiB: batch sizes or models that fit may not",
            "reduce batch size or shard the model further");
      // Far smaller memory is a blocker (the rules' memory_smaller_blocker_ratio).
      if (!c.out().empty() && c.out().back().code == code &&
          static_cast<double>(*tm) <
              static_cast<double>(*sm) * c.rules().memory_smaller_blocker_ratio) {
        c.out().back().severity = "blocker";
      }
    }
    if (s.gpus[0].name && t.gpus[0].name && *s.gpus[0].name != *t.gpus[0].name) {
      c.Add("gpu.model_changed", "gpu", kPair, s.gpus[0].name, t.gpus[0].name,
            "GPU model changes from " + *s.gpus[0].name + " to " + *t.gpus[0].name,
            "none needed; compare performance and numerics with `cutover compat`");
    }
    auto mig = [](const GpuInfo& g) { return g.mig.enabled.value_or(false); };
    bool smig = std::any_of(s.gpus.begin(), s.gpus.end(), mig);
    bool tmig = std::any_of(t.gpus.begin(), t.gpus.end(), mig);
    if (tmig && !smig) {
      c.Add("gpu.mig_on_target", "gpu", kPair, "disabled", "enabled",
            "MIG is enabled on the target: a process sees a GPU instance (a fraction of the "
            "SMs and memory), not the whole GPU, and NCCL peer-to-peer is unavailable",
            "disable MIG (nvidia-smi -mig 0) or size the workload for the MIG instances");
    }
    auto gen = [](const GpuInfo& g) { return g.pcie.gen_max; };
    auto width = [](const GpuInfo& g) { return g.pcie.width_max; };
    std::optional<int> sg = MinOver<int>(s.gpus, gen), tg = MinOver<int>(t.gpus, gen);
    if (sg && tg && *tg < *sg) {
      c.Add(
          "pcie.gen_lower", "pcie", kPair, "Gen" + std::to_string(*sg), "Gen" + std::to_string(*tg),
          "target GPUs' PCIe link is Gen" + std::to_string(*tg) + ", the source's Gen" +
              std::to_string(*sg) + ": host-device copies are slower",
          "expect lower host-device bandwidth, or choose a target with Gen" + std::to_string(*sg));
    }
    std::optional<int> sw = MinOver<int>(s.gpus, width), tw = MinOver<int>(t.gpus, width);
    if (sw && tw && *tw < *sw) {
      c.Add("pcie.width_lower", "pcie", kPair, "x" + std::to_string(*sw), "x" + std::to_string(*tw),
            "target GPUs' PCIe link is x" + std::to_string(*tw) + ", the source's x" +
                std::to_string(*sw) + ": host-device copies are slower",
            "check the slot and riser; choose a target with x" + std::to_string(*sw) + " links");
    }
  }
}

void CompareNetwork(Checker& c, const Fingerprint& s, const Fingerprint& t) {
  if (!s.network.infiniband.empty() && t.network.infiniband.empty()) {
    c.Add("network.infiniband_missing", "network", kPair,
          std::to_string(s.network.infiniband.size()) + " HCA", "none",
          "the source has InfiniBand/RoCE HCAs, the target none: multi-node NCCL falls back to "
          "TCP sockets",
          "choose a target with InfiniBand, or run on one node");
  }
}

void Compare(Checker& c, const Fingerprint& s, const Fingerprint& t, DiffMode mode) {
  const bool host = mode == DiffMode::kHost;
  CompareDriver(c, s, t);
  if (host) CompareHostStacks(c, s, t);
  CompareShippedLibraries(c, s, t, host);
  CompareGpus(c, s, t);
  CompareNetwork(c, s, t);
  CompareNumerics(c, s, t, mode);
}

int SeverityRank(std::string_view s) {
  if (s == "blocker") return 0;
  if (s == "warning") return 1;
  return 2;
}

nlohmann::json OptStr(const std::optional<std::string>& s) {
  return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

Status ParseNumerics(const nlohmann::json& n, CompatRules* r) {
  if (!n.is_object()) return Bad("numerics", "expected an object");
  auto it = n.find("tf32");
  if (it == n.end() || !it->is_object()) return Bad("numerics.tf32", "expected an object");
  CUTOVER_ASSIGN_OR_RETURN(r->tf32_code, Str(*it, "code", "numerics.tf32"));
  CUTOVER_ASSIGN_OR_RETURN(r->tf32_min_compute_capability,
                           Str(*it, "min_compute_capability", "numerics.tf32"));
  if (!IsDottedVersion(r->tf32_min_compute_capability)) {
    return Bad("numerics.tf32.min_compute_capability", "expected a version such as \"8.0\"");
  }
  CUTOVER_ASSIGN_OR_RETURN(r->tf32_default_note, Str(*it, "enabled_by_default", "numerics.tf32"));
  CUTOVER_ASSIGN_OR_RETURN(r->tf32_fix, Str(*it, "fix", "numerics.tf32"));
  it = n.find("framework_defaults");
  if (it == n.end() || !it->is_array()) {
    return Bad("numerics.framework_defaults", "expected an array");
  }
  for (size_t i = 0; i < it->size(); ++i) {
    std::string where = "numerics.framework_defaults[" + std::to_string(i) + "]";
    const nlohmann::json& o = (*it)[i];
    NumericsDefault d;
    CUTOVER_ASSIGN_OR_RETURN(d.code, Str(o, "code", where));
    CUTOVER_ASSIGN_OR_RETURN(d.framework, Str(o, "framework", where));
    CUTOVER_ASSIGN_OR_RETURN(d.setting, Str(o, "setting", where));
    CUTOVER_ASSIGN_OR_RETURN(d.changed_in, Str(o, "changed_in", where));
    if (!IsDottedVersion(d.changed_in)) {
      return Bad(where + ".changed_in", "expected a version such as \"1.12\"");
    }
    CUTOVER_ASSIGN_OR_RETURN(d.before, Str(o, "before", where));
    CUTOVER_ASSIGN_OR_RETURN(d.after, Str(o, "after", where));
    CUTOVER_ASSIGN_OR_RETURN(d.note, Str(o, "note", where));
    CUTOVER_ASSIGN_OR_RETURN(d.fix, Str(o, "fix", where));
    r->numerics_defaults.push_back(std::move(d));
  }
  it = n.find("env");
  if (it == n.end() || !it->is_array()) return Bad("numerics.env", "expected an array");
  for (size_t i = 0; i < it->size(); ++i) {
    std::string where = "numerics.env[" + std::to_string(i) + "]";
    const nlohmann::json& o = (*it)[i];
    NumericsEnv e;
    CUTOVER_ASSIGN_OR_RETURN(e.code, Str(o, "code", where));
    CUTOVER_ASSIGN_OR_RETURN(e.name, Str(o, "name", where));
    CUTOVER_ASSIGN_OR_RETURN(e.effect, Str(o, "effect", where));
    if (o.contains("disables_tf32")) {
      CUTOVER_ASSIGN_OR_RETURN(e.disables_tf32, Str(o, "disables_tf32", where));
    }
    r->numerics_env.push_back(std::move(e));
  }
  return Status::Ok();
}

}  // namespace

Result<CompatRules> ParseCompatRules(std::string_view text) {
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Bad("(root)", "not a JSON object");
  if (doc.value("schema", "") != "cutover.probe-rules/1") {
    return Bad("schema", "expected \"cutover.probe-rules/1\"");
  }
  CompatRules r;
  if (!doc.contains("version") || !doc["version"].is_number_integer()) {
    return Bad("version", "expected an integer");
  }
  r.version = doc["version"].get<int>();
  auto arr = [&](const char* key) -> Result<const nlohmann::json*> {
    if (!doc.contains(key) || !doc[key].is_array()) return Bad(key, "expected an array");
    return &doc[key];
  };
  CUTOVER_ASSIGN_OR_RETURN(const nlohmann::json* td, arr("toolkit_drivers"));
  for (size_t i = 0; i < td->size(); ++i) {
    std::string where = "toolkit_drivers[" + std::to_string(i) + "]";
    CUTOVER_ASSIGN_OR_RETURN(std::string cuda, Str((*td)[i], "cuda", where));
    CUTOVER_ASSIGN_OR_RETURN(std::string drv, Str((*td)[i], "min_driver", where));
    r.toolkit_drivers.emplace_back(cuda, drv);
  }
  std::sort(r.toolkit_drivers.begin(), r.toolkit_drivers.end(),
            [](const auto& a, const auto& b) { return CompareVersions(a.first, b.first) < 0; });
  CUTOVER_ASSIGN_OR_RETURN(const nlohmann::json* mvc, arr("minor_version_compat"));
  for (size_t i = 0; i < mvc->size(); ++i) {
    std::string where = "minor_version_compat[" + std::to_string(i) + "]";
    const nlohmann::json& o = (*mvc)[i];
    if (!o.is_object() || !o.contains("major") || !o["major"].is_number_integer()) {
      return Bad(where + ".major", "expected an integer");
    }
    CUTOVER_ASSIGN_OR_RETURN(std::string drv, Str(o, "min_driver", where));
    r.minor_version_compat[o["major"].get<int>()] = drv;
  }
  CUTOVER_ASSIGN_OR_RETURN(const nlohmann::json* da, arr("dropped_architectures"));
  for (size_t i = 0; i < da->size(); ++i) {
    std::string where = "dropped_architectures[" + std::to_string(i) + "]";
    const nlohmann::json& o = (*da)[i];
    if (!o.is_object() || !o.contains("cuda_major") || !o["cuda_major"].is_number_integer()) {
      return Bad(where + ".cuda_major", "expected an integer");
    }
    CUTOVER_ASSIGN_OR_RETURN(std::string cc, Str(o, "min_compute_capability", where));
    r.min_compute_capability[o["cuda_major"].get<int>()] = cc;
  }
  CUTOVER_ASSIGN_OR_RETURN(const nlohmann::json* ia, arr("introduced_architectures"));
  for (size_t i = 0; i < ia->size(); ++i) {
    std::string where = "introduced_architectures[" + std::to_string(i) + "]";
    CUTOVER_ASSIGN_OR_RETURN(std::string cc, Str((*ia)[i], "compute_capability", where));
    CUTOVER_ASSIGN_OR_RETURN(std::string cuda, Str((*ia)[i], "cuda", where));
    r.introduced_architectures.emplace_back(cc, cuda);
  }
  if (doc.contains("forward_compat") && doc["forward_compat"].is_object()) {
    r.forward_compat_package = doc["forward_compat"].value("package", "");
  }
  if (doc.contains("numerics")) {
    CUTOVER_RETURN_IF_ERROR(ParseNumerics(doc["numerics"], &r));
  }
  if (!doc.contains("params") || !doc["params"].is_object())
    return Bad("params", "expected an object");
  const nlohmann::json& p = doc["params"];
  if (p.contains("severity")) {
    if (!p["severity"].is_object()) return Bad("params.severity", "expected an object");
    for (const auto& [code, sev] : p["severity"].items()) {
      if (!sev.is_string() || (sev != "blocker" && sev != "warning" && sev != "info")) {
        return Bad("params.severity." + code, "expected \"blocker\", \"warning\" or \"info\"");
      }
      r.severity[code] = sev.get<std::string>();
    }
  }
  if (p.contains("memory_smaller_blocker_ratio")) {
    if (!p["memory_smaller_blocker_ratio"].is_number()) {
      return Bad("params.memory_smaller_blocker_ratio", "expected a number");
    }
    r.memory_smaller_blocker_ratio = p["memory_smaller_blocker_ratio"].get<double>();
  }
  return r;
}

const CompatRules& BuiltinRules() {
  static const CompatRules* rules = [] {
    Result<CompatRules> r = ParseCompatRules(EmbeddedData("compat-rules.json"));
    return new CompatRules(r.ok() ? std::move(*r) : CompatRules{});
  }();
  return *rules;
}

std::string_view DiffModeName(DiffMode mode) {
  return mode == DiffMode::kHost ? "host" : "container";
}

Result<DiffMode> ParseDiffMode(std::string_view name) {
  if (name == "host") return DiffMode::kHost;
  if (name == "container") return DiffMode::kContainer;
  return Status::InvalidArgument("--mode " + std::string(name) +
                                 ": expected \"host\" or \"container\"");
}

int DiffReport::Count(std::string_view severity) const {
  return static_cast<int>(
      std::count_if(findings.begin(), findings.end(),
                    [&](const DiffFinding& f) { return f.severity == severity; }));
}

std::vector<DiffFinding> CheckHost(const Fingerprint& fp, const CompatRules& rules,
                                   std::string_view scope) {
  std::vector<DiffFinding> out;
  Checker c(rules, &out);
  CheckHostInto(c, fp, std::string(scope));
  return out;
}

std::vector<Finding> SingleHostCollectionFindings(const Fingerprint& fp) {
  std::vector<Finding> out;
  for (DiffFinding& f : CheckHost(fp, BuiltinRules(), "host")) {
    std::string sev = f.severity == "blocker" ? "error" : f.severity;
    out.push_back({std::move(sev), std::move(f.code), f.message + "; fix: " + f.fix});
  }
  return out;
}

DiffReport Diff(const Fingerprint& source, const Fingerprint& target, DiffMode mode,
                const CompatRules& rules) {
  DiffReport r;
  r.mode = mode;
  r.rules_version = rules.version;
  r.source_host = source.hostname;
  r.target_host = target.hostname;
  Checker c(rules, &r.findings);
  Compare(c, source, target, mode);
  CheckHostInto(c, source, "source");
  CheckHostInto(c, target, "target");
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const DiffFinding& a, const DiffFinding& b) {
                     return SeverityRank(a.severity) < SeverityRank(b.severity);
                   });
  return r;
}

nlohmann::json DiffToJson(const DiffReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const DiffFinding& f : report.findings) {
    findings.push_back({{"severity", f.severity},
                        {"code", f.code},
                        {"component", f.component},
                        {"scope", f.scope},
                        {"source", OptStr(f.source)},
                        {"target", OptStr(f.target)},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  return {{"schema", kDiffSchema},
          {"mode", std::string(DiffModeName(report.mode))},
          {"rules_version", report.rules_version},
          {"source", {{"hostname", OptStr(report.source_host)}}},
          {"target", {{"hostname", OptStr(report.target_host)}}},
          {"summary",
           {{"blockers", report.Count("blocker")},
            {"warnings", report.Count("warning")},
            {"infos", report.Count("info")}}},
          {"findings", std::move(findings)}};
}

std::string RenderDiffTable(const DiffReport& report) {
  std::ostringstream o;
  o << "probe diff (mode " << DiffModeName(report.mode) << ", rules v" << report.rules_version
    << "): " << report.source_host.value_or("source") << " -> "
    << report.target_host.value_or("target") << "\n";
  if (report.findings.empty()) {
    o << "no findings: nothing known stops or changes the workload\n";
    return o.str();
  }
  for (const DiffFinding& f : report.findings) {
    std::string sev = f.severity;
    for (char& ch : sev) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    o << sev << "  " << f.code;
    if (f.scope != "pair") o << "  [" << f.scope << " only]";
    o << "\n    " << f.source.value_or("-") << " -> " << f.target.value_or("-") << "\n    "
      << f.message << "\n    fix: " << f.fix << "\n";
  }
  o << report.Count("blocker") << " blocker(s), " << report.Count("warning") << " warning(s), "
    << report.Count("info") << " info\n";
  return o.str();
}

}  // namespace cutover::probe
