// Collectors for CUDA toolkits, GPU libraries (every copy on the loader's, CUDA's and pip's
// paths) and Python frameworks, from files only (plus nvcc on the live host).
#include <algorithm>
#include <set>

#include "core/strings.h"
#include "core/subprocess.h"
#include "probe/collect.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

constexpr int kNvccTimeoutMs = 3000;

std::string Pep503(std::string_view name) {
  std::string out;
  for (char l : AsciiLower(name)) {
    if (l == '_' || l == '.' || l == '-') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += l;
    }
  }
  return out;
}

// The real path, or "" when it does not exist.
std::string Real(const FileSystem& fs, const std::string& path) {
  Result<std::string> r = fs.RealPath(path);
  return r.ok() ? *r : std::string();
}

bool HasStubsComponent(const std::string& path) {
  return path.find("/stubs/") != std::string::npos ||
         (path.size() >= 6 && path.compare(path.size() - 6, 6, "/stubs") == 0);
}

// Versions of wheel packages in a directory of *.dist-info entries, by normalised name.
std::map<std::string, std::string> DistVersions(CollectContext& ctx, const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& n : ctx.ListOptional(dir)) {
    if (auto d = ParseDistInfoName(n)) out[d->name] = d->version;
  }
  return out;
}

// The tracked library families: file stem -> (family for headers/wheels, report as main copy).
struct Family {
  const char* header;  // header file name, or nullptr
  std::optional<std::string> (*parse)(std::string_view);
  const char* wheel;  // normalised wheel name prefix ("nvidia_cudnn")
};

std::optional<Family> FamilyOf(const std::string& stem) {
  if (stem.rfind("cudnn", 0) == 0)
    return Family{"cudnn_version.h", ParseCudnnHeader, "nvidia_cudnn"};
  if (stem == "cublas" || stem == "cublasLt") {
    return Family{"cublas_api.h", ParseCublasHeader, "nvidia_cublas"};
  }
  if (stem == "nccl") return Family{"nccl.h", ParseNcclHeader, "nvidia_nccl"};
  if (stem == "cudart") return Family{nullptr, nullptr, "nvidia_cuda_runtime"};
  if (stem == "nvrtc") return Family{nullptr, nullptr, "nvidia_cuda_nvrtc"};
  if (stem == "cufft") return Family{nullptr, nullptr, "nvidia_cufft"};
  if (stem == "cusparse") return Family{nullptr, nullptr, "nvidia_cusparse"};
  if (stem == "nvinfer" || stem == "nvinfer_plugin" || stem == "nvonnxparser") {
    return Family{"NvInferVersion.h", ParseTensorrtHeader, "tensorrt"};
  }
  if (stem.rfind("nccl-net", 0) == 0) return Family{nullptr, nullptr, nullptr};
  return std::nullopt;
}

bool IsTracked(const std::string& stem) {
  static const std::set<std::string> kCudnnParts = {"cudnn",
                                                    "cudnn_graph",
                                                    "cudnn_ops",
                                                    "cudnn_cnn",
                                                    "cudnn_adv",
                                                    "cudnn_heuristic",
                                                    "cudnn_engines_precompiled",
                                                    "cudnn_engines_runtime_compiled",
                                                    "cudnn_ops_infer",
                                                    "cudnn_ops_train",
                                                    "cudnn_cnn_infer",
                                                    "cudnn_cnn_train",
                                                    "cudnn_adv_infer",
                                                    "cudnn_adv_train"};
  if (kCudnnParts.count(stem) != 0) return true;
  if (stem.rfind("cudnn", 0) == 0) return false;
  return FamilyOf(stem).has_value();
}

// Whether a wheel name is the family's package: "nvidia_cudnn", "nvidia_cudnn_cu12".
bool WheelMatches(const std::string& wheel, const char* prefix) {
  std::string p = prefix;
  if (wheel == p) return true;
  if (wheel.rfind(p + "_cu", 0) != 0) return false;
  std::string rest = wheel.substr(p.size() + 3);
  return !rest.empty() && std::all_of(rest.begin(), rest.end(), ::isdigit);
}

int Components(std::string_view v) {
  return v.empty() ? 0 : static_cast<int>(std::count(v.begin(), v.end(), '.')) + 1;
}

}  // namespace

std::vector<ToolkitInfo> CollectToolkits(CollectContext& ctx) {
  const FileSystem& fs = ctx.fs();
  std::vector<std::string> candidates;
  for (const char* pat : {"/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda", "/opt/cuda-*",
                          "/opt/nvidia/cuda*", "/usr/lib/cuda"}) {
    for (std::string& p : ctx.Glob(pat)) candidates.push_back(std::move(p));
  }
  if (ctx.options().live) {
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      auto it = ctx.options().env.find(var);
      if (it != ctx.options().env.end() && !it->second.empty()) candidates.push_back(it->second);
    }
  }
  std::set<std::string> seen;
  std::vector<ToolkitInfo> out;
  for (const std::string& cand : candidates) {
    std::string real = Real(fs, cand);
    if (real.empty() || !fs.IsDirectory(real) || !seen.insert(real).second) continue;
    ToolkitInfo t;
    t.path = real;
    if (auto text = ctx.ReadOptional(JoinPath(real, "version.json"))) {
      if (auto v = ParseToolkitVersionJson(*text)) {
        t.version = *v;
        t.source = "version.json";
      } else {
        ctx.AddFinding("warning", "cuda.version_json_garbled",
                       JoinPath(real, "version.json") + " has no cuda.version");
      }
    }
    if (t.version.empty()) {
      if (auto text = ctx.ReadOptional(JoinPath(real, "version.txt"))) {
        if (auto v = ParseToolkitVersionTxt(*text)) {
          t.version = *v;
          t.source = "version.txt";
        }
      }
    }
    if (t.version.empty()) {
      auto wheels = DistVersions(ctx, JoinPath(real, "dist-info"));
      auto it = wheels.find("nvidia_cuda_nvcc");
      if (it != wheels.end() && IsDottedVersion(it->second)) {
        t.version = it->second;
        t.source = "dist-info";
      }
    }
    std::string nvcc = JoinPath(real, "bin/nvcc");
    if (t.version.empty() && ctx.options().live && fs.IsRegularFile(nvcc)) {
      Result<std::string> outp = RunProgram({nvcc, "--version"}, kNvccTimeoutMs);
      if (outp.ok()) {
        if (auto v = ParseNvccVersion(*outp)) {
          t.version = *v;
          t.source = "nvcc";
        }
      } else {
        ctx.AddFinding("warning", "cuda.nvcc_failed", outp.status().message());
      }
    }
    if (t.version.empty()) {
      if (auto text = ctx.ReadOptional(JoinPath(real, "include/cuda.h"))) {
        if (auto v = ParseCudaHeader(*text)) {
          t.version = *v;
          t.source = "cuda.h";
        }
      }
    }
    if (t.version.empty()) {
      if (fs.Exists(nvcc) || fs.Exists(JoinPath(real, "include/cuda.h"))) {
        ctx.AddFinding("warning", "cuda.toolkit_version_unknown",
                       real + " looks like a CUDA toolkit but no version was found");
      }
      continue;
    }
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(),
            [](const ToolkitInfo& a, const ToolkitInfo& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> FindSitePackages(CollectContext& ctx) {
  std::vector<std::string> patterns = {
      "/usr/lib/python3*/site-packages",
      "/usr/lib/python3*/dist-packages",
      "/usr/lib/python3/dist-packages",
      "/usr/lib64/python3*/site-packages",
      "/usr/local/lib/python3*/site-packages",
      "/usr/local/lib/python3*/dist-packages",
      "/opt/conda/lib/python3*/site-packages",
      "/opt/conda/envs/*/lib/python3*/site-packages",
      "/root/.pyenv/versions/*/lib/python3*/site-packages",
      "/root/.local/lib/python3*/site-packages",
      "/home/*/.local/lib/python3*/site-packages",
      "/opt/*/lib/python3*/site-packages",
      "/venv/lib/python3*/site-packages",
  };
  if (ctx.options().live) {
    for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
      auto it = ctx.options().env.find(var);
      if (it != ctx.options().env.end() && !it->second.empty()) {
        patterns.push_back(it->second + "/lib/python3*/site-packages");
      }
    }
  }
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const std::string& pat : patterns) {
    for (const std::string& p : ctx.Glob(pat)) {
      std::string real = Real(ctx.fs(), p);
      if (!real.empty() && ctx.fs().IsDirectory(real) && seen.insert(real).second) {
        out.push_back(real);
      }
    }
  }
  return out;
}

namespace {

// Directories named by /etc/ld.so.conf and its includes, in order.
void ReadLdSoConf(CollectContext& ctx, const std::string& path, int depth,
                  std::vector<std::string>* dirs) {
  if (depth > 4) return;
  auto text = ctx.ReadOptional(path, 1 << 20);
  if (!text) return;
  size_t start = 0;
  while (start < text->size()) {
    size_t nl = text->find('\n', start);
    if (nl == std::string::npos) nl = text->size();
    std::string line(TrimField(std::string_view(*text).substr(start, nl - start)));
    start = nl + 1;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = std::string(TrimField(line.substr(0, hash)));
    if (line.empty()) continue;
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pat(TrimField(line.substr(8)));
      if (!pat.empty() && pat[0] != '/') pat = JoinPath(DirName(path), pat);
      for (const std::string& inc : ctx.Glob(pat)) ReadLdSoConf(ctx, inc, depth + 1, dirs);
      continue;
    }
    if (line[0] == '/') dirs->push_back(line);
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> LibrarySearchDirs(
    CollectContext& ctx, const std::vector<ToolkitInfo>& toolkits,
    const std::vector<std::string>& site_packages) {
  std::vector<std::pair<std::string, std::string>> candidates;
  if (ctx.options().live) {
    auto it = ctx.options().env.find("LD_LIBRARY_PATH");
    if (it != ctx.options().env.end()) {
      std::string_view v = it->second;
      size_t start = 0;
      while (start <= v.size()) {
        size_t colon = v.find(':', start);
        if (colon == std::string_view::npos) colon = v.size();
        std::string dir(v.substr(start, colon - start));
        if (!dir.empty() && dir[0] == '/') candidates.emplace_back(dir, "LD_LIBRARY_PATH");
        start = colon + 1;
      }
    }
  }
  std::vector<std::string> conf;
  ReadLdSoConf(ctx, "/etc/ld.so.conf", 0, &conf);
  for (std::string& d : conf) candidates.emplace_back(std::move(d), "ld.so.conf");
  for (const char* d : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                        "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64",
                        "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}) {
    candidates.emplace_back(d, "standard");
  }
  for (const ToolkitInfo& t : toolkits) {
    for (const char* sub : {"lib64", "lib", "targets/*/lib", "targets/*/lib64", "compat"}) {
      for (std::string& d : ctx.Glob(JoinPath(t.path, sub))) {
        candidates.emplace_back(std::move(d), "cuda");
      }
    }
  }
  for (const std::string& sp : site_packages) {
    for (const char* sub : {"nvidia/*/lib", "tensorrt_libs", "torch/lib"}) {
      for (std::string& d : ctx.Glob(JoinPath(sp, sub)))
        candidates.emplace_back(std::move(d), "pip");
    }
  }
  for (const char* d : {"/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64",
                        "/opt/aws-ofi-nccl/lib", "/opt/hpcx/nccl_rdma_sharp_plugin/lib",
                        "/opt/nccl/lib", "/opt/tensorrt/lib", "/usr/local/tensorrt/lib"}) {
    candidates.emplace_back(d, "extra");
  }
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [dir, origin] : candidates) {
    if (HasStubsComponent(dir)) continue;
    std::string real = Real(ctx.fs(), dir);
    if (real.empty() || HasStubsComponent(real) || !ctx.fs().IsDirectory(real)) continue;
    if (!seen.insert(real).second) continue;
    out.emplace_back(real, origin);
  }
  return out;
}

namespace {

// Several copies of one main library: which one a program loads depends on the search order.
void FindMultipleCopies(CollectContext& ctx, const std::vector<LibraryInfo>& libs_found) {
  static const std::set<std::string> kMain = {"cudart", "cublas", "cublasLt", "cudnn",  "nccl",
                                              "nvrtc",  "cufft",  "cusparse", "nvinfer"};
  std::map<std::string, std::vector<const LibraryInfo*>> copies;
  for (const LibraryInfo& l : libs_found) {
    if (kMain.count(l.name) != 0) copies[l.name].push_back(&l);
  }
  for (const auto& [name, libs] : copies) {
    if (libs.size() < 2) continue;
    std::string msg = std::to_string(libs.size()) + " copies of lib" + name + ":";
    bool pip = false, system = false;
    std::set<std::string> versions;
    for (const LibraryInfo* l : libs) {
      msg += " " + l->path + " (" + l->version.value_or("unknown") + ", " + l->origin + ")";
      (l->origin == "pip" ? pip : system) = true;
      versions.insert(l->version.value_or("unknown"));
    }
    ctx.AddFinding(versions.size() > 1 ? "warning" : "info", "library.multiple_copies", msg);
    if (pip && system && versions.size() > 1) {
      ctx.AddFinding("warning", "library.pip_shadows_system",
                     "lib" + name +
                         ": a pip wheel copy and a system copy of different versions; Python "
                         "frameworks load the wheel's, other programs the system's");
    }
  }
}

}  // namespace

std::vector<LibraryInfo> CollectLibraries(
    CollectContext& ctx, const std::vector<std::pair<std::string, std::string>>& dirs) {
  const FileSystem& fs = ctx.fs();
  std::vector<LibraryInfo> out;
  std::set<std::string> seen_files;
  std::map<std::string, std::optional<std::string>> header_cache;  // header path -> version
  std::map<std::string, std::map<std::string, std::string>> wheel_cache;

  auto header_version = [&](const std::string& path,
                            const Family& fam) -> std::optional<std::string> {
    auto it = header_cache.find(path);
    if (it != header_cache.end()) return it->second;
    std::optional<std::string> v;
    if (auto text = ctx.ReadOptional(path, 1 << 20)) v = fam.parse(*text);
    header_cache[path] = v;
    return v;
  };

  for (const auto& [dir, origin] : dirs) {
    // stem -> names in this directory
    std::map<std::string, std::vector<std::string>> by_stem;
    for (const std::string& name : ctx.ListOptional(dir)) {
      if (name.rfind("lib", 0) != 0 || name.find(".so") == std::string::npos) continue;
      auto lib = ParseLibraryFileName(name);
      if (!lib || !IsTracked(lib->stem)) continue;
      by_stem[lib->stem].push_back(name);
    }
    if (by_stem.empty()) continue;
    std::string parent = DirName(dir);
    // Where headers and wheel metadata for this directory live.
    std::vector<std::string> include_dirs = {JoinPath(parent, "include")};
    if (origin != "pip") {
      include_dirs.push_back("/usr/include");
      include_dirs.push_back("/usr/include/x86_64-linux-gnu");
      include_dirs.push_back("/usr/include/aarch64-linux-gnu");
    }
    std::vector<std::string> wheel_dirs = {JoinPath(parent, "dist-info")};
    if (origin == "pip") wheel_dirs.push_back(DirName(DirName(parent)));  // site-packages

    for (auto& [stem, names] : by_stem) {
      // Real file -> the names that lead to it.
      std::map<std::string, std::vector<std::string>> by_real;
      for (const std::string& name : names) {
        std::string path = JoinPath(dir, name);
        Result<FileInfo> info = fs.Stat(path);
        if (!info.ok()) {
          if (info.status().code() != Code::kNotFound) {
            ctx.AddFinding("warning", "file.unreadable", info.status().message());
          } else {
            ctx.AddFinding("warning", "library.dangling_link", path + " is a dangling link");
          }
          continue;
        }
        if (info->type != FileType::kRegular) continue;
        std::string real = Real(fs, path);
        by_real[real.empty() ? path : real].push_back(name);
      }
      for (auto& [real, link_names] : by_real) {
        if (!seen_files.insert(real).second) continue;
        LibraryInfo lib;
        lib.name = stem;
        lib.origin = origin;
        // The most specific name: the longest version.
        std::string best_name = link_names.front();
        std::string best_version;
        std::vector<std::string> all = link_names;
        all.push_back(std::string(BaseName(real)));
        for (const std::string& n : all) {
          auto p = ParseLibraryFileName(n);
          if (!p) continue;
          if (Components(p->version) > Components(best_version)) best_version = p->version;
        }
        for (const std::string& n : link_names) {
          auto p = ParseLibraryFileName(n);
          if (p && Components(p->version) > Components(ParseLibraryFileName(best_name)->version)) {
            best_name = n;
          }
        }
        lib.path = JoinPath(dir, best_name);
        if (real != lib.path) lib.real_path = real;
        std::string major = VersionPrefix(best_version, 1);
        if (Components(best_version) >= 3) {
          lib.version = best_version;
          lib.version_source = "file_name";
        }
        std::optional<Family> fam = FamilyOf(stem);
        if (fam && fam->header) {
          for (const std::string& inc : include_dirs) {
            std::string hpath = JoinPath(inc, fam->header);
            std::optional<std::string> hv = header_version(hpath, *fam);
            if (!hv) continue;
            if (lib.version) {
              if (*hv != *lib.version && VersionPrefix(*hv, 1) == major &&
                  stem.find('_') == std::string::npos) {
                ctx.AddFinding("warning", "library.header_mismatch",
                               hpath + " says " + *hv + " but " + lib.path + " is " + *lib.version);
              }
              break;
            }
            if (major.empty() || VersionPrefix(*hv, 1) == major) {
              lib.version = hv;
              lib.version_source = "header";
              break;
            }
          }
        }
        if (!lib.version && fam && fam->wheel) {
          for (const std::string& wd : wheel_dirs) {
            auto it = wheel_cache.find(wd);
            if (it == wheel_cache.end()) it = wheel_cache.emplace(wd, DistVersions(ctx, wd)).first;
            for (const auto& [wheel, ver] : it->second) {
              if (!WheelMatches(wheel, fam->wheel)) continue;
              if (!major.empty() && VersionPrefix(ver, 1) != major) continue;
              lib.version = ver;
              lib.version_source = "dist-info";
              break;
            }
            if (lib.version) break;
          }
        }
        if (!lib.version && !best_version.empty()) {
          lib.version = best_version;
          lib.version_source = "soname";
        }
        out.push_back(std::move(lib));
      }
    }
  }

  FindMultipleCopies(ctx, out);
  return out;
}

namespace {

const std::set<std::string>& WantedFrameworks() {
  static const std::set<std::string> kWanted = {
      "torch",  "tensorflow",        "tensorflow-gpu",    "tf-nightly", "jax",
      "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "triton",     "pytorch-triton",
      "vllm",   "tensorrt-llm",      "tensorrt"};
  return kWanted;
}

// The Name/Version/Requires-Dist of a METADATA or PKG-INFO file into `f`.
void ApplyMetadata(const PythonMetadata& m, FrameworkInfo* f) {
  if (m.version) f->version = m.version;
  for (const std::string& req : m.requires_dist) {
    std::string rn = RequirementName(req);
    if (rn.rfind("nvidia_", 0) == 0 || rn.rfind("cuda_", 0) == 0 || rn == "torch" ||
        rn == "triton" || rn.rfind("tensorrt", 0) == 0) {
      f->requires_dist.push_back(req);
      if (rn.rfind("nvidia_cudnn", 0) == 0 && !f->cudnn) f->cudnn = RequirementVersion(req);
      if (rn.rfind("nvidia_cuda_runtime", 0) == 0 && !f->cuda) {
        if (auto v = RequirementVersion(req)) f->cuda = VersionPrefix(*v, 2);
      }
    }
  }
}

// The CUDA (and cuDNN) a framework was built for, from its local version tag and its own
// build-info files under site-packages `sp`.
void ApplyBuildInfo(CollectContext& ctx, const std::string& sp, FrameworkInfo* f) {
  if (f->version) {
    if (auto cu = CudaFromLocalVersion(*f->version)) f->cuda = cu;
  }
  const std::string& name = f->name;
  if (name == "torch") {
    if (auto py = ctx.ReadOptional(JoinPath(sp, "torch/version.py"), 1 << 16)) {
      if (auto cuda = PythonStringValue(*py, "cuda")) f->cuda = cuda;
      if (auto git = PythonStringValue(*py, "git_version")) f->git_version = git;
    }
  } else if (name == "tensorflow" || name == "tensorflow-gpu" || name == "tf-nightly") {
    if (auto py =
            ctx.ReadOptional(JoinPath(sp, "tensorflow/python/platform/build_info.py"), 1 << 16)) {
      if (auto cuda = PythonStringValue(*py, "cuda_version")) f->cuda = cuda;
      if (auto cudnn = PythonStringValue(*py, "cudnn_version")) f->cudnn = cudnn;
    }
  } else if (name == "jax-cuda12-plugin" || name == "jax-cuda13-plugin") {
    f->cuda = name == "jax-cuda12-plugin" ? "12" : "13";
  }
}

// A framework named by a metadata entry of `sp` (a *.dist-info directory, or a *.egg-info
// directory or file), or nullopt for any other entry.
std::optional<FrameworkInfo> FrameworkFromMetadata(CollectContext& ctx, const std::string& sp,
                                                   const std::string& entry) {
  auto dist = ParseDistInfoName(entry);
  auto egg = dist ? std::nullopt : ParseEggInfoName(entry);
  if (!dist && !egg) return std::nullopt;
  const DistInfoName& d = dist ? *dist : *egg;
  std::string name = Pep503(d.name);
  if (WantedFrameworks().count(name) == 0) return std::nullopt;
  FrameworkInfo f;
  f.name = name;
  f.path = sp;
  f.version = d.version;
  f.source = dist ? "dist-info" : "egg-info";
  std::string path = JoinPath(sp, entry);
  std::string meta_file = dist                         ? JoinPath(path, "METADATA")
                          : ctx.fs().IsDirectory(path) ? JoinPath(path, "PKG-INFO")
                                                       : path;
  if (auto meta = ctx.ReadOptional(meta_file, 1 << 20))
    ApplyMetadata(ParsePythonMetadata(*meta), &f);
  ApplyBuildInfo(ctx, sp, &f);
  return f;
}

// Packages that may sit in site-packages with no metadata at all (copied trees, some conda
// and source builds), known by the version file they carry.
struct BarePackage {
  const char* name;          // the distribution name reported
  const char* version_file;  // relative to site-packages
  const char* variable;      // the version's variable in it
};
constexpr BarePackage kBarePackages[] = {{"torch", "torch/version.py", "__version__"},
                                         {"jax", "jax/version.py", "_version"}};

}  // namespace

std::vector<FrameworkInfo> CollectFrameworks(CollectContext& ctx,
                                             const std::vector<std::string>& site_packages) {
  std::vector<FrameworkInfo> out;
  for (const std::string& sp : site_packages) {
    std::set<std::string> found;
    for (const std::string& entry : ctx.ListOptional(sp)) {
      auto f = FrameworkFromMetadata(ctx, sp, entry);
      if (!f) continue;
      found.insert(f->name);
      out.push_back(std::move(*f));
    }
    for (const BarePackage& bare : kBarePackages) {
      if (found.count(bare.name) != 0) continue;
      auto py = ctx.ReadOptional(JoinPath(sp, bare.version_file), 1 << 16);
      if (!py) continue;
      FrameworkInfo f;
      f.name = bare.name;
      f.path = sp;
      f.version = PythonStringValue(*py, bare.variable);
      f.source = bare.version_file;
      ApplyBuildInfo(ctx, sp, &f);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace cutover::probe
