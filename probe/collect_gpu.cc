// Collectors for the driver and GPU sections from files (/proc/driver/nvidia, sysfs PCI, library
// file names, package databases) and the GPU table.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "probe/collect.h"
#include "probe/data.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

constexpr char kProcVersion[] = "/proc/driver/nvidia/version";
constexpr char kProcGpus[] = "/proc/driver/nvidia/gpus";
constexpr char kPciDevices[] = "/sys/bus/pci/devices";
constexpr char kProcCapabilities[] = "/proc/driver/nvidia/capabilities";
constexpr unsigned kNvidiaVendor = 0x10de;

// "0000:3b:00.0" / "00000000:3B:00.0" -> "00000000:3B:00.0" (NVML's form); other text as is.
std::string NormalizeBusId(std::string_view id) {
  id = TrimField(id);
  size_t colon = id.find(':');
  if (colon == std::string_view::npos) return std::string(id);
  std::string domain(id.substr(0, colon));
  std::string rest(id.substr(colon + 1));
  if (domain.size() < 8) domain.insert(0, 8 - domain.size(), '0');
  std::string out = domain + ":" + rest;
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// True for "<prefix><digits>" ("gi3", "ci0").
bool IsNumbered(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  for (char c : name.substr(prefix.size())) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// MIG from the nvidia-caps capability files of the GPU with device minor `minor`: the driver
// lists each GPU instance as capabilities/gpu<minor>/mig/gi<N> and each compute instance in it
// as gi<N>/ci<M> (the MIG devices NVML enumerates). Instances seen mean MIG mode is on; none
// seen leaves MIG unknown (the mode may be on with no instances made yet).
void MigFromCapabilities(CollectContext& ctx, const std::string& minor, MigInfo* mig) {
  std::string dir = std::string(kProcCapabilities) + "/gpu" + minor + "/mig";
  int devices = 0;
  for (const std::string& gi : ctx.ListOptional(dir)) {
    if (!IsNumbered(gi, "gi")) continue;
    for (const std::string& ci : ctx.ListOptional(JoinPath(dir, gi))) {
      if (IsNumbered(ci, "ci")) ++devices;
    }
  }
  if (devices > 0) {
    mig->enabled = true;
    mig->instances = devices;
  }
}

std::optional<std::string> ReadTrimmed(CollectContext& ctx, const std::string& path) {
  auto v = ctx.ReadOptional(path, 4096);
  if (!v) return std::nullopt;
  std::string_view t = TrimField(*v);
  if (t.empty()) return std::nullopt;
  return std::string(t);
}

}  // namespace

void CompleteFromGpuTable(GpuInfo* gpu) {
  std::optional<unsigned> id;
  if (gpu->pci_device_id) id = ParseHex(*gpu->pci_device_id);
  const GpuModel* m = FindGpuModel(BuiltinGpuTable(), id, gpu->name.value_or(""));
  if (m == nullptr) return;
  if (!gpu->name) gpu->name = m->name;
  if (!gpu->compute_capability) gpu->compute_capability = m->compute_capability;
  if (!gpu->memory_mib && m->memory_mib > 0) gpu->memory_mib = m->memory_mib;
  if (!gpu->generation && !m->generation.empty()) gpu->generation = m->generation;
  if (!gpu->pci_device_id) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%04x", m->device_id);
    gpu->pci_device_id = buf;
  }
}

DriverInfo CollectDriverFromFiles(CollectContext& ctx, const std::vector<std::string>& lib_dirs) {
  DriverInfo d;
  const FileSystem& fs = ctx.fs();
  std::optional<std::string> proc_error;
  Result<std::string> proc = fs.ReadFile(kProcVersion, 1 << 16);
  if (proc.ok()) {
    Result<NvidiaProcVersion> v = ParseNvidiaProcVersion(*proc);
    if (v.ok()) {
      d.kernel_module_version = v->version;
      d.kernel_module_flavor = v->flavor;
    } else {
      proc_error = std::string("cannot parse ") + kProcVersion + ": " + v.status().message();
      ctx.AddFinding("error", "driver.procfs_garbled", *proc_error);
    }
  } else if (proc.status().code() != Code::kNotFound) {
    proc_error = proc.status().message();
    ctx.AddFinding("warning", "file.unreadable", *proc_error);
  }

  // User-space driver: libcuda.so.<full version> (and libnvidia-ml.so.<version>).
  for (const std::string& dir : lib_dirs) {
    for (const std::string& name : ctx.ListOptional(dir)) {
      if (name.rfind("libcuda.so.", 0) != 0) continue;
      auto lib = ParseLibraryFileName(name);
      if (!lib || lib->stem != "cuda" ||
          std::count(lib->version.begin(), lib->version.end(), '.') < 1) {
        continue;
      }
      if (!d.userspace_version || CompareVersions(lib->version, *d.userspace_version) > 0) {
        d.userspace_version = lib->version;
      }
    }
    if (d.userspace_version) break;  // the first directory in search order wins
  }

  if (d.kernel_module_version) {
    d.status = "ok";
    d.version = d.kernel_module_version;
    d.source = "procfs";
  } else if (d.userspace_version) {
    d.status = "ok";
    d.version = d.userspace_version;
    d.source = "libcuda";
  } else if (proc_error) {
    d.status = "error";
    d.error = *proc_error;
  } else {
    d.status = "missing";
    d.error = std::string("no NVIDIA driver: ") + kProcVersion +
              " absent and no libcuda.so.<version> in the library paths";
  }
  if (d.version) d.cuda_version = CudaForDriver(*d.version);
  if (d.kernel_module_version && d.userspace_version &&
      *d.kernel_module_version != *d.userspace_version) {
    ctx.AddFinding("error", "driver.version_mismatch",
                   "kernel module " + *d.kernel_module_version + " but user-space driver " +
                       "libcuda.so." + *d.userspace_version +
                       ": CUDA calls will fail (driver/library version mismatch)");
  }

  // Packages: fabric manager, container toolkit.
  if (auto status = ctx.ReadOptional("/var/lib/dpkg/status", 64 << 20)) {
    for (const auto& [pkg, ver] : DpkgVersions(*status, "nvidia-fabricmanager")) {
      if (!d.fabric_manager_version || CompareVersions(ver, *d.fabric_manager_version) > 0) {
        d.fabric_manager_version = ver;
      }
    }
    if (!DpkgVersions(*status, "nvidia-container-toolkit").empty()) d.container_toolkit = true;
  }
  for (const char* p : {"/usr/bin/nvidia-container-cli", "/usr/bin/nvidia-ctk",
                        "/usr/bin/nvidia-container-runtime"}) {
    if (fs.Exists(p)) d.container_toolkit = true;
  }
  if (!ctx.Glob("/etc/cdi/nvidia*").empty() || !ctx.Glob("/var/run/cdi/nvidia*").empty()) {
    d.cdi = true;
  }
  return d;
}

std::vector<GpuInfo> CollectGpusFromFiles(CollectContext& ctx) {
  std::map<std::string, GpuInfo> by_bus;  // sorted by normalized bus id
  for (const std::string& bdf : ctx.ListOptional(kProcGpus)) {
    GpuInfo g;
    g.source = "procfs";
    g.pci_bus_id = NormalizeBusId(bdf);
    std::string path = JoinPath(JoinPath(kProcGpus, bdf), "information");
    if (auto text = ctx.ReadOptional(path, 1 << 16)) {
      auto f = ParseColonFields(*text);
      auto get = [&](const char* k) -> std::optional<std::string> {
        auto it = f.find(k);
        if (it == f.end() || it->second.empty()) return std::nullopt;
        return it->second;
      };
      g.name = get("Model");
      g.uuid = get("GPU UUID");
      g.vbios = get("Video BIOS");
      if (auto bus = get("Bus Location")) g.pci_bus_id = NormalizeBusId(*bus);
      if (auto minor = get("Device Minor"); minor && ParseInteger(*minor)) {
        MigFromCapabilities(ctx, std::to_string(*ParseInteger(*minor)), &g.mig);
      }
      if (!g.name) {
        ctx.AddFinding("warning", "gpu.procfs_garbled", path + " has no Model line");
      }
    }
    by_bus[*g.pci_bus_id] = std::move(g);
  }
  for (const std::string& dev : ctx.ListOptional(kPciDevices)) {
    std::string dir = JoinPath(kPciDevices, dev);
    auto vendor = ReadTrimmed(ctx, JoinPath(dir, "vendor"));
    if (!vendor || ParseHex(*vendor) != kNvidiaVendor) continue;
    auto cls = ReadTrimmed(ctx, JoinPath(dir, "class"));
    std::optional<unsigned> class_code = cls ? ParseHex(*cls) : std::nullopt;
    // 0x0300xx VGA, 0x0302xx 3D controller; NVSwitches (0x0680xx) and audio are not GPUs.
    if (class_code && (*class_code >> 8) != 0x0300 && (*class_code >> 8) != 0x0302) continue;
    std::string bus = NormalizeBusId(dev);
    auto it = by_bus.find(bus);
    if (it == by_bus.end()) {
      GpuInfo g;
      g.source = "sysfs";
      g.pci_bus_id = bus;
      it = by_bus.emplace(bus, std::move(g)).first;
    }
    GpuInfo& g = it->second;
    if (auto id = ReadTrimmed(ctx, JoinPath(dir, "device"))) {
      if (auto v = ParseHex(*id)) {
        char buf[16];
        std::snprintf(buf, sizeof(buf), "0x%04x", *v);
        g.pci_device_id = buf;
      }
    }
    auto link_int = [&](const char* name) -> std::optional<int> {
      auto v = ReadTrimmed(ctx, JoinPath(dir, name));
      if (!v) return std::nullopt;
      auto n = ParseInteger(*v);
      if (!n || *n <= 0 || *n > 64) return std::nullopt;
      return static_cast<int>(*n);
    };
    auto link_gen = [&](const char* name) -> std::optional<int> {
      auto v = ReadTrimmed(ctx, JoinPath(dir, name));
      return v ? PcieGenFromSpeed(*v) : std::nullopt;
    };
    g.pcie.gen_current = link_gen("current_link_speed");
    g.pcie.gen_max = link_gen("max_link_speed");
    g.pcie.width_current = link_int("current_link_width");
    g.pcie.width_max = link_int("max_link_width");
  }
  std::vector<GpuInfo> out;
  int index = 0;
  for (auto& [bus, g] : by_bus) {
    g.index = index++;
    CompleteFromGpuTable(&g);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace cutover::probe

namespace cutover::probe {
namespace {

// A vGPU profile name: "<board>-<framebuffer GiB><series>", e.g. "GRID A100-40C", "A16-4Q",
// "NVIDIA A100-4C" (series A, B, C or Q).
bool LooksLikeVgpuProfile(std::string_view name) {
  if (name.size() < 3) return false;
  char series = name.back();
  if (series != 'A' && series != 'B' && series != 'C' && series != 'Q') return false;
  size_t i = name.size() - 1;
  size_t digits = 0;
  while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9') {
    --i;
    ++digits;
  }
  return digits > 0 && i > 0 && name[i - 1] == '-';
}

}  // namespace

void CollectSharing(CollectContext& ctx, const std::vector<GpuInfo>& gpus, SharingInfo* s) {
  auto hint = [s](std::string h) {
    if (std::find(s->hints.begin(), s->hints.end(), h) == s->hints.end()) {
      s->hints.push_back(std::move(h));
    }
  };
  bool vgpu_name = false;
  for (const GpuInfo& g : gpus) {
    if (g.mig.enabled.value_or(false)) hint("mig");
    if (g.name && LooksLikeVgpuProfile(*g.name)) vgpu_name = true;
  }
  if (vgpu_name) {
    hint("vgpu_profile_name");
    if (!s->virtualization_mode) s->virtualization_mode = "vgpu";
  }
  // The vGPU guest driver ships the licensing daemon; the bare-metal driver does not.
  for (const char* path : {"/usr/bin/nvidia-gridd", "/etc/nvidia/gridd.conf"}) {
    if (ctx.fs().Exists(path)) {
      hint("vgpu_guest_driver:" + std::string(path));
      if (!s->virtualization_mode) s->virtualization_mode = "vgpu";
    }
  }
  // MPS: the control daemon's default pipe directory exists once it has run.
  if (ctx.fs().IsDirectory("/tmp/nvidia-mps")) hint("mps_pipe_dir:/tmp/nvidia-mps");
  if (ctx.options().live) {
    for (const char* var : {"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                            "NVIDIA_VISIBLE_DEVICES"}) {
      auto it = ctx.options().env.find(var);
      if (it != ctx.options().env.end()) hint("env:" + std::string(var) + "=" + it->second);
    }
  }
  // Time-slicing and MPS sharing configured in Kubernetes are invisible to the node itself,
  // except through the labels GPU Feature Discovery writes for Node Feature Discovery's local
  // source.
  for (const std::string& path : ctx.Glob("/etc/kubernetes/node-feature-discovery/features.d/*")) {
    auto text = ctx.ReadOptional(path, 1 << 20);
    if (!text) continue;
    size_t start = 0;
    while (start < text->size()) {
      size_t nl = text->find('\n', start);
      if (nl == std::string::npos) nl = text->size();
      std::string line(TrimField(std::string_view(*text).substr(start, nl - start)));
      start = nl + 1;
      for (const char* key : {"nvidia.com/gpu.sharing-strategy=", "nvidia.com/gpu.replicas="}) {
        if (line.rfind(key, 0) != 0) continue;
        std::string value = line.substr(std::strlen(key));
        bool shared = value != "none" && value != "1" && value != "0" && !value.empty();
        if (shared) hint("gfd:" + line.substr(std::strlen("nvidia.com/")));
      }
    }
  }
}

}  // namespace cutover::probe
