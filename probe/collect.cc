#include "probe/collect.h"

#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/cli.h"
#include "core/time_util.h"
#include "probe/diff.h"
#include "probe/health.h"
#include "probe/parsers.h"

extern char** environ;

namespace cutover::probe {

CollectOptions LiveOptions() {
  CollectOptions o;
  o.live = true;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    o.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  o.libc_version = ::gnu_get_libc_version();
  struct utsname u;
  if (::uname(&u) == 0) {
    o.uname_release = u.release;
    o.uname_machine = u.machine;
    o.hostname = u.nodename;
  }
  return o;
}

Fingerprint Collect(const FileSystem& fs, CollectOptions options) {
  auto start = std::chrono::steady_clock::now();
  const bool live = options.live;
  Fingerprint fp;
  if (!options.hostname.empty()) fp.hostname = options.hostname;
  CollectContext ctx(fs, std::move(options));

  // The live query runs in a child; start with it so a slow driver overlaps nothing else that
  // forks (nvcc runs later).
  std::optional<LiveDriverResult> live_driver;
  if (live) live_driver = QueryLiveDriver(ctx.options().driver);

  fp.os = CollectOs(ctx);
  fp.cpu = CollectCpu(ctx);
  fp.memory_mib = CollectMemoryMib(ctx);
  fp.cuda_toolkits = CollectToolkits(ctx);
  std::vector<std::string> site_packages = FindSitePackages(ctx);
  auto dirs = LibrarySearchDirs(ctx, fp.cuda_toolkits, site_packages);
  std::vector<std::string> lib_dirs;
  for (const auto& [d, origin] : dirs) {
    if (origin != "pip") lib_dirs.push_back(d);
  }
  fp.driver = CollectDriverFromFiles(ctx, lib_dirs);
  std::vector<GpuInfo> file_gpus = CollectGpusFromFiles(ctx);

  if (live_driver && live_driver->driver.status == "ok") {
    DriverInfo files = fp.driver;
    fp.driver = live_driver->driver;
    fp.driver.kernel_module_version = files.kernel_module_version;
    fp.driver.kernel_module_flavor = files.kernel_module_flavor;
    fp.driver.userspace_version = files.userspace_version;
    fp.driver.fabric_manager_version = files.fabric_manager_version;
    fp.driver.container_toolkit = files.container_toolkit;
    fp.driver.cdi = files.cdi;
    fp.gpus = live_driver->gpus;
    for (GpuInfo& g : fp.gpus) CompleteFromGpuTable(&g);
  } else {
    if (live_driver) {
      const DriverInfo& nv = live_driver->driver;
      std::string why = "NVML: " + nv.error.value_or("unavailable");
      if (fp.driver.status == "ok") {
        ctx.AddFinding("warning", "driver.nvml_unavailable",
                       why + "; driver facts come from " + fp.driver.source.value_or("files"));
      } else {
        fp.driver.error = why + "; " + fp.driver.error.value_or("");
        if (nv.status == "error") fp.driver.status = "error";
        if (!fp.driver.cuda_version && nv.cuda_version) fp.driver.cuda_version = nv.cuda_version;
      }
    }
    fp.gpus = std::move(file_gpus);
  }
  if (live_driver) {
    for (Finding& f : live_driver->findings) {
      ctx.AddFinding(std::move(f.severity), std::move(f.code), std::move(f.message));
    }
  }
  if (fp.driver.status != "ok") {
    ctx.AddFinding(fp.driver.status == "missing" ? "warning" : "error",
                   "driver." + fp.driver.status, fp.driver.error.value_or(""));
  }
  CollectSharing(ctx, fp.gpus, &fp.driver.sharing);
  fp.libraries = CollectLibraries(ctx, dirs);
  {
    DeepOptions deep = ctx.options().deep;
    deep.load = deep.load && live;
    fp.collection.deep = InspectLibraries(ctx, deep, &fp.libraries);
  }
  if (ctx.options().read_kernel_log) {
    std::string log, source;
    if (live) {
      log = ReadLiveKernelLog(&source);
    } else if (auto text = ctx.ReadOptional("/var/log/kern.log", 64 << 20)) {
      log = std::move(*text);
      source = "/var/log/kern.log";
    } else {
      source = "not read (no /var/log/kern.log under the root)";
    }
    for (const XidEvent& x : AttachXidEvents(ParseXidEvents(log), &fp.gpus)) {
      XidInfo d = DescribeXid(x.xid);
      ctx.AddFinding(std::string(d.severity) == "info" ? "info" : "warning", "gpu.xid_unmatched",
                     "Xid " + std::to_string(x.xid) + " (" + d.meaning + ") on PCI " + x.pci +
                         ", which is not a GPU found now: " + x.text);
    }
    fp.collection.kernel_log = source;
  }
  fp.frameworks = CollectFrameworks(ctx, site_packages);
  fp.env = CollectEnv(ctx);
  fp.network = CollectNetwork(ctx);

  // The single-host rules of probe/rules (the same ones `probe diff` runs on each side).
  for (Finding& f : SingleHostCollectionFindings(fp)) {
    bool dup = false;
    for (const Finding& g : ctx.findings()) dup = dup || g.code == f.code;
    if (!dup) ctx.AddFinding(std::move(f.severity), std::move(f.code), std::move(f.message));
  }
  fp.collection.findings = ctx.findings();
  fp.collection.root = fs.RootLabel();
  fp.collection.live = live;
  fp.collection.collected_at = NowRfc3339Utc();
  fp.collection.cutover_version = std::string(CutoverVersion());
  fp.collection.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return fp;
}

std::string RenderTable(const Fingerprint& fp) {
  std::ostringstream o;
  auto s = [](const std::optional<std::string>& v) { return v.value_or("-"); };
  auto n = [](const auto& v) { return v ? std::to_string(*v) : std::string("-"); };
  char line[512];
  o << "Host     " << s(fp.hostname) << "  (root " << fp.collection.root << ")\n";
  o << "OS       " << s(fp.os.pretty_name ? fp.os.pretty_name : fp.os.id) << "  kernel "
    << s(fp.os.kernel) << "  glibc " << s(fp.os.glibc) << "  " << s(fp.os.arch);
  if (fp.os.container.detected) o << "  container " << s(fp.os.container.runtime);
  o << "\n";
  o << "CPU      " << s(fp.cpu.model) << "  " << n(fp.cpu.cores) << " cpus, "
    << n(fp.cpu.numa_nodes) << " NUMA nodes;  memory " << n(fp.memory_mib) << " MiB\n";
  o << "Driver   " << fp.driver.status;
  if (fp.driver.version) o << "  " << *fp.driver.version;
  if (fp.driver.cuda_version) o << "  (CUDA " << *fp.driver.cuda_version << ")";
  if (fp.driver.source) o << "  from " << *fp.driver.source;
  if (fp.driver.kernel_module_version) {
    o << "  kernel module " << *fp.driver.kernel_module_version << " ("
      << s(fp.driver.kernel_module_flavor) << ")";
  }
  if (fp.driver.userspace_version) o << "  libcuda " << *fp.driver.userspace_version;
  if (fp.driver.fabric_manager_version)
    o << "  fabric manager " << *fp.driver.fabric_manager_version;
  o << "\n";
  if (fp.driver.error) o << "         " << *fp.driver.error << "\n";
  if (fp.driver.sharing.virtualization_mode || !fp.driver.sharing.hints.empty()) {
    o << "Sharing  " << s(fp.driver.sharing.virtualization_mode);
    for (const std::string& h : fp.driver.sharing.hints) o << "  " << h;
    o << "\n";
  }
  o << "\nGPUs (" << fp.gpus.size() << ")\n";
  if (!fp.gpus.empty()) {
    std::snprintf(line, sizeof(line), "  %-3s %-28s %-5s %-9s %-18s %-10s %s\n", "#", "name", "cc",
                  "MiB", "bus", "pcie", "uuid");
    o << line;
  }
  for (const GpuInfo& g : fp.gpus) {
    std::string pcie = "-";
    if (g.pcie.gen_current || g.pcie.width_current) {
      pcie = "gen" + n(g.pcie.gen_current) + " x" + n(g.pcie.width_current);
    }
    std::snprintf(line, sizeof(line), "  %-3d %-28s %-5s %-9s %-18s %-10s %s\n", g.index,
                  s(g.name).c_str(), s(g.compute_capability).c_str(), n(g.memory_mib).c_str(),
                  s(g.pci_bus_id).c_str(), pcie.c_str(), s(g.uuid).c_str());
    o << line;
    for (const GpuXidEvent& x : g.xid_events) o << "      " << x.text << "\n";
  }
  o << "\nCUDA toolkits (" << fp.cuda_toolkits.size() << ")\n";
  for (const ToolkitInfo& t : fp.cuda_toolkits) {
    o << "  " << t.version << "  " << t.path << "  (" << t.source << ")\n";
  }
  o << "\nLibraries (" << fp.libraries.size() << ")\n";
  for (const LibraryInfo& l : fp.libraries) {
    std::snprintf(line, sizeof(line), "  %-32s %-14s %-16s %s\n", l.name.c_str(),
                  s(l.version).c_str(), l.origin.c_str(), l.path.c_str());
    o << line;
    std::string deep;
    if (l.loaded_version) deep += "  loaded " + *l.loaded_version;
    if (l.glibc_needed) deep += "  glibc >= " + *l.glibc_needed;
    if (l.cuda_archs && !l.cuda_archs->empty()) {
      deep += "  archs";
      for (const std::string& a : *l.cuda_archs) deep += " " + a;
    }
    if (l.sha256) deep += "  sha256 " + l.sha256->substr(0, 16) + "...";
    if (!deep.empty()) o << "    " << deep.substr(2) << "\n";
  }
  if (!fp.frameworks.empty()) {
    o << "\nFrameworks (" << fp.frameworks.size() << ")\n";
    for (const FrameworkInfo& f : fp.frameworks) {
      o << "  " << f.name << " " << s(f.version) << "  cuda " << s(f.cuda) << "  cudnn "
        << s(f.cudnn) << "  " << f.path << (f.source.empty() ? "" : " (" + f.source + ")")
        << "\n";
    }
  }
  if (!fp.network.infiniband.empty() || !fp.network.gpudirect_modules.empty()) {
    o << "\nNetwork\n";
    for (const InfinibandDevice& d : fp.network.infiniband) {
      o << "  " << d.device << " fw " << s(d.firmware);
      for (const InfinibandPort& p : d.ports) {
        o << "  port " << p.port << " " << s(p.state) << " " << s(p.rate);
      }
      o << "\n";
    }
    for (const std::string& m : fp.network.gpudirect_modules) o << "  module " << m << "\n";
  }
  if (!fp.env.empty()) {
    o << "\nEnvironment\n";
    for (const auto& [k, v] : fp.env) o << "  " << k << "=" << v << "\n";
  }
  o << "\nFindings (" << fp.collection.findings.size() << ")\n";
  for (const Finding& f : fp.collection.findings) {
    o << "  " << f.severity << "  " << f.code << ": " << f.message << "\n";
  }
  std::snprintf(line, sizeof(line), "\nCollected in %.1f ms\n", fp.collection.duration_ms);
  o << line;
  return o.str();
}

}  // namespace cutover::probe
