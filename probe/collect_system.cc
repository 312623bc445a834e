// Collectors for the OS, CPU, memory, environment and network sections, and CollectContext.
#include <fnmatch.h>

#include <algorithm>

#include "core/log.h"
#include "probe/collect.h"
#include "probe/parsers.h"

namespace cutover::probe {

void CollectContext::AddFinding(std::string severity, std::string code, std::string message) {
  Finding f{std::move(severity), std::move(code), std::move(message)};
  if (std::find(findings_.begin(), findings_.end(), f) == findings_.end()) {
    findings_.push_back(std::move(f));
  }
}

std::optional<std::string> CollectContext::ReadOptional(const std::string& path, size_t max_bytes) {
  Result<std::string> text = fs_.ReadFile(path, max_bytes);
  if (text.ok()) return std::move(text).value();
  if (text.status().code() != Code::kNotFound) {
    AddFinding("warning", "file.unreadable", text.status().message());
  }
  return std::nullopt;
}

std::vector<std::string> CollectContext::ListOptional(const std::string& path) {
  Result<std::vector<std::string>> names = fs_.ListDir(path);
  if (names.ok()) return std::move(names).value();
  if (names.status().code() != Code::kNotFound) {
    AddFinding("warning", "file.unreadable", names.status().message());
  }
  return {};
}

std::vector<std::string> CollectContext::Glob(const std::string& pattern) {
  std::vector<std::string> current = {"/"};
  size_t i = 0;
  while (i < pattern.size()) {
    while (i < pattern.size() && pattern[i] == '/') ++i;
    size_t j = pattern.find('/', i);
    if (j == std::string::npos) j = pattern.size();
    if (j == i) break;
    std::string comp = pattern.substr(i, j - i);
    i = j;
    std::vector<std::string> next;
    bool wild = comp.find_first_of("*?[") != std::string::npos;
    for (const std::string& dir : current) {
      if (!wild) {
        next.push_back(JoinPath(dir, comp));
        continue;
      }
      Result<std::vector<std::string>> names = fs_.ListDir(dir);
      if (!names.ok()) continue;
      for (const std::string& n : *names) {
        if (::fnmatch(comp.c_str(), n.c_str(), FNM_PERIOD) == 0) next.push_back(JoinPath(dir, n));
      }
    }
    current = std::move(next);
    if (current.empty()) break;
  }
  std::vector<std::string> out;
  for (const std::string& p : current) {
    if (p != "/" && fs_.Exists(p)) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

constexpr const char* kLibcCandidates[] = {
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib/libc.so.6",
    "/usr/lib/libc.so.6",
};

std::optional<std::string> ArchFromPath(std::string_view path) {
  if (path.find("x86_64") != std::string_view::npos) return "x86_64";
  if (path.find("aarch64") != std::string_view::npos) return "aarch64";
  return std::nullopt;
}

}  // namespace

OsInfo CollectOs(CollectContext& ctx) {
  OsInfo os;
  const FileSystem& fs = ctx.fs();
  std::optional<std::string> rel = ctx.ReadOptional("/etc/os-release");
  if (!rel) rel = ctx.ReadOptional("/usr/lib/os-release");
  if (rel) {
    auto kv = ParseOsRelease(*rel);
    auto get = [&](const char* k) -> std::optional<std::string> {
      auto it = kv.find(k);
      if (it == kv.end() || it->second.empty()) return std::nullopt;
      return it->second;
    };
    os.id = get("ID");
    os.version_id = get("VERSION_ID");
    os.pretty_name = get("PRETTY_NAME");
    if (!os.id) ctx.AddFinding("warning", "os.release_garbled", "/etc/os-release has no ID");
  } else {
    ctx.AddFinding("info", "os.release_missing", "no /etc/os-release or /usr/lib/os-release");
  }

  if (auto k = ctx.ReadOptional("/proc/sys/kernel/osrelease")) {
    std::string_view v = TrimField(*k);
    if (!v.empty()) os.kernel = std::string(v);
  }
  if (!os.kernel && ctx.options().live && !ctx.options().uname_release.empty()) {
    os.kernel = ctx.options().uname_release;
  }

  if (ctx.options().live && !ctx.options().libc_version.empty()) {
    os.glibc = ctx.options().libc_version;
  }
  for (const char* path : kLibcCandidates) {
    if (os.glibc && os.arch) break;
    Result<FileInfo> info = fs.Stat(path, /*follow_links=*/false);
    if (!info.ok()) continue;
    if (!os.arch) os.arch = ArchFromPath(path);
    if (os.glibc) continue;
    if (info->type == FileType::kSymlink) {
      Result<std::string> target = fs.ReadLink(path);
      if (target.ok()) {
        if (auto v = GlibcVersionFromFileName(BaseName(*target))) {
          os.glibc = v;
          break;
        }
      }
    }
    for (const std::string& name : ctx.ListOptional(DirName(path))) {
      if (auto v = GlibcVersionFromFileName(name)) {
        os.glibc = v;
        break;
      }
    }
    if (os.glibc) break;
    if (auto bytes = ctx.ReadOptional(path)) os.glibc = GlibcVersionFromLibc(*bytes);
    if (os.glibc) break;
  }
  if (!os.glibc) ctx.AddFinding("info", "os.glibc_unknown", "glibc version not found");
  if (!os.arch) {
    if (fs.Exists("/lib64/ld-linux-x86-64.so.2")) os.arch = "x86_64";
    if (fs.Exists("/lib/ld-linux-aarch64.so.1")) os.arch = "aarch64";
  }
  if (ctx.options().live && !ctx.options().uname_machine.empty()) {
    os.arch = ctx.options().uname_machine;
  }

  // Container hints.
  ContainerInfo& c = os.container;
  auto hint = [&](std::string h, std::string runtime) {
    c.detected = true;
    c.hints.push_back(std::move(h));
    static const char* kPriority[] = {"kubernetes", "podman", "docker", "containerd", "lxc"};
    auto rank = [](const std::string& r) {
      for (int i = 0; i < 5; ++i) {
        if (r == kPriority[i]) return i;
      }
      return 9;
    };
    if (!c.runtime || rank(runtime) < rank(*c.runtime)) c.runtime = runtime;
  };
  if (fs.Exists("/.dockerenv")) hint("/.dockerenv", "docker");
  if (fs.Exists("/run/.containerenv")) hint("/run/.containerenv", "podman");
  if (auto cg = ctx.ReadOptional("/proc/1/cgroup", 1 << 16)) {
    if (cg->find("kubepods") != std::string::npos) hint("cgroup:kubepods", "kubernetes");
    if (cg->find("docker") != std::string::npos) hint("cgroup:docker", "docker");
    if (cg->find("libpod") != std::string::npos) hint("cgroup:libpod", "podman");
    if (cg->find("containerd") != std::string::npos) hint("cgroup:containerd", "containerd");
    if (cg->find("/lxc") != std::string::npos) hint("cgroup:lxc", "lxc");
  }
  if (fs.Exists("/var/run/secrets/kubernetes.io/serviceaccount")) {
    hint("/var/run/secrets/kubernetes.io/serviceaccount", "kubernetes");
  }
  if (ctx.options().env.count("KUBERNETES_SERVICE_HOST") != 0) {
    hint("env:KUBERNETES_SERVICE_HOST", "kubernetes");
  }
  return os;
}

CpuInfo CollectCpu(CollectContext& ctx) {
  CpuInfo cpu;
  if (auto text = ctx.ReadOptional("/proc/cpuinfo")) {
    CpuSummary s = ParseCpuInfo(*text);
    cpu.model = s.model;
    if (s.logical_cpus > 0) cpu.cores = s.logical_cpus;
  }
  int nodes = 0;
  for (const std::string& n : ctx.ListOptional("/sys/devices/system/node")) {
    if (n.size() > 4 && n.compare(0, 4, "node") == 0 &&
        std::all_of(n.begin() + 4, n.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      ++nodes;
    }
  }
  if (nodes > 0) cpu.numa_nodes = nodes;
  return cpu;
}

std::optional<uint64_t> CollectMemoryMib(CollectContext& ctx) {
  auto text = ctx.ReadOptional("/proc/meminfo");
  if (!text) return std::nullopt;
  auto mib = ParseMemTotalMib(*text);
  if (!mib) ctx.AddFinding("warning", "memory.meminfo_garbled", "/proc/meminfo has no MemTotal");
  return mib;
}

std::map<std::string, std::string> CollectEnv(CollectContext& ctx) {
  static const char* kPrefixes[] = {"CUDA_", "NCCL_", "NVIDIA_", "TORCH_", "CUDNN_", "CUBLAS_"};
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : ctx.options().env) {
    bool keep = name == "LD_LIBRARY_PATH" || name == "CUBLAS_WORKSPACE_CONFIG" ||
                name == "PYTORCH_CUDA_ALLOC_CONF" || name == "CUDA_HOME";
    for (const char* p : kPrefixes) {
      if (name.rfind(p, 0) == 0) keep = true;
    }
    if (!keep) continue;
    out[name] = IsSecretName(name) ? "[REDACTED]" : Redact(value);
  }
  return out;
}

NetworkInfo CollectNetwork(CollectContext& ctx) {
  NetworkInfo net;
  const std::string base = "/sys/class/infiniband";
  auto read_trim = [&](const std::string& p) -> std::optional<std::string> {
    auto v = ctx.ReadOptional(p, 4096);
    if (!v) return std::nullopt;
    std::string_view t = TrimField(*v);
    if (t.empty()) return std::nullopt;
    return std::string(t);
  };
  for (const std::string& dev : ctx.ListOptional(base)) {
    InfinibandDevice d;
    d.device = dev;
    std::string dir = JoinPath(base, dev);
    d.firmware = read_trim(JoinPath(dir, "fw_ver"));
    d.board_id = read_trim(JoinPath(dir, "board_id"));
    for (const std::string& port : ctx.ListOptional(JoinPath(dir, "ports"))) {
      InfinibandPort p;
      p.port = port;
      std::string pdir = JoinPath(JoinPath(dir, "ports"), port);
      if (auto s = read_trim(JoinPath(pdir, "state"))) {
        size_t colon = s->find(':');  // "4: ACTIVE"
        p.state = colon == std::string::npos ? *s : std::string(TrimField(s->substr(colon + 1)));
      }
      p.rate = read_trim(JoinPath(pdir, "rate"));
      p.link_layer = read_trim(JoinPath(pdir, "link_layer"));
      d.ports.push_back(std::move(p));
    }
    net.infiniband.push_back(std::move(d));
  }
  if (auto mods = ctx.ReadOptional("/proc/modules")) {
    for (const std::string& m : ParseProcModules(*mods)) {
      if (m == "nvidia_peermem" || m == "nv_peer_mem" || m == "gdrdrv") {
        net.gpudirect_modules.push_back(m);
        if (m == "nvidia_peermem" || m == "nv_peer_mem") net.nvidia_peermem = true;
      }
    }
  }
  return net;
}

}  // namespace cutover::probe
