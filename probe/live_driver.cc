#include "probe/live_driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "core/subprocess.h"

namespace cutover::probe {
namespace {

// NVML ABI subset (nvml.h). Only what the probe reads; layouts as NVML documents them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEnableState_t = int;  // 0 disabled, 1 enabled
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlMemoryErrorUncorrected = 1;
constexpr int kNvmlVolatileEcc = 0;
constexpr int kNvmlAggregateEcc = 1;
constexpr unsigned kNvmlMaxNvLinks = 18;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
// nvmlPageRetirementCause_t.
constexpr int kNvmlRetiredMultipleSingleBit = 0;
constexpr int kNvmlRetiredDoubleBit = 1;

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // (device id << 16) | vendor id
  unsigned int pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct NvmlApi {
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvmlReturn_t (*SystemGetCudaDriverVersion)(int*) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*DeviceGetVbiosVersion)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetEccMode)(nvmlDevice_t, nvmlEnableState_t*, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned*, unsigned*, unsigned*,
                                        unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerManagementLimit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetCurrentClocksThrottleReasons)(nvmlDevice_t,
                                                        unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetNvLinkState)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  // nvmlDeviceGetRetiredPages_v2(device, cause, *count, addresses, timestamps): count 0 and
  // null buffers ask for the count only (NVML_ERROR_INSUFFICIENT_SIZE when some exist).
  nvmlReturn_t (*DeviceGetRetiredPages)(nvmlDevice_t, int, unsigned*, unsigned long long*,
                                        unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*DeviceGetVirtualizationMode)(nvmlDevice_t, int*) = nullptr;
};

// One entry of a symbol table: the names to try in order, whether the library is unusable
// without it, and where to store it.
struct SymbolEntry {
  std::vector<const char*> names;
  bool required;
  std::function<void(void*)> bind;
};

template <typename Fn>
SymbolEntry Sym(Fn* slot, std::vector<const char*> names, bool required) {
  return SymbolEntry{std::move(names), required,
                     [slot](void* p) { *slot = reinterpret_cast<Fn>(p); }};
}

std::vector<SymbolEntry> NvmlSymbols(NvmlApi& a) {
  return {
      Sym(&a.Init, {"nvmlInit_v2", "nvmlInit"}, true),
      Sym(&a.Shutdown, {"nvmlShutdown"}, true),
      Sym(&a.ErrorString, {"nvmlErrorString"}, false),
      Sym(&a.SystemGetDriverVersion, {"nvmlSystemGetDriverVersion"}, true),
      Sym(&a.SystemGetCudaDriverVersion,
          {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"}, false),
      Sym(&a.DeviceGetCount, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, true),
      Sym(&a.DeviceGetHandleByIndex,
          {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}, true),
      Sym(&a.DeviceGetName, {"nvmlDeviceGetName"}, false),
      Sym(&a.DeviceGetUUID, {"nvmlDeviceGetUUID"}, false),
      Sym(&a.DeviceGetPciInfo, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}, false),
      Sym(&a.DeviceGetCudaComputeCapability, {"nvmlDeviceGetCudaComputeCapability"}, false),
      Sym(&a.DeviceGetMemoryInfo, {"nvmlDeviceGetMemoryInfo"}, false),
      Sym(&a.DeviceGetVbiosVersion, {"nvmlDeviceGetVbiosVersion"}, false),
      Sym(&a.DeviceGetEccMode, {"nvmlDeviceGetEccMode"}, false),
      Sym(&a.DeviceGetTotalEccErrors, {"nvmlDeviceGetTotalEccErrors"}, false),
      Sym(&a.DeviceGetRemappedRows, {"nvmlDeviceGetRemappedRows"}, false),
      Sym(&a.DeviceGetMigMode, {"nvmlDeviceGetMigMode"}, false),
      Sym(&a.DeviceGetMaxMigDeviceCount, {"nvmlDeviceGetMaxMigDeviceCount"}, false),
      Sym(&a.DeviceGetMigDeviceHandleByIndex, {"nvmlDeviceGetMigDeviceHandleByIndex"}, false),
      Sym(&a.DeviceGetCurrPcieLinkGeneration, {"nvmlDeviceGetCurrPcieLinkGeneration"}, false),
      Sym(&a.DeviceGetMaxPcieLinkGeneration, {"nvmlDeviceGetMaxPcieLinkGeneration"}, false),
      Sym(&a.DeviceGetCurrPcieLinkWidth, {"nvmlDeviceGetCurrPcieLinkWidth"}, false),
      Sym(&a.DeviceGetMaxPcieLinkWidth, {"nvmlDeviceGetMaxPcieLinkWidth"}, false),
      Sym(&a.DeviceGetPowerManagementLimit, {"nvmlDeviceGetPowerManagementLimit"}, false),
      Sym(&a.DeviceGetCurrentClocksThrottleReasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
          false),
      Sym(&a.DeviceGetPersistenceMode, {"nvmlDeviceGetPersistenceMode"}, false),
      Sym(&a.DeviceGetNvLinkState, {"nvmlDeviceGetNvLinkState"}, false),
      Sym(&a.DeviceGetRetiredPages, {"nvmlDeviceGetRetiredPages_v2"}, false),
      Sym(&a.DeviceGetRetiredPagesPendingStatus, {"nvmlDeviceGetRetiredPagesPendingStatus"}, false),
      Sym(&a.DeviceGetVirtualizationMode, {"nvmlDeviceGetVirtualizationMode"}, false),
  };
}

// Opens `library` and binds `table`. Environment "<library>: <dlerror>" when it cannot be
// opened, "<library>: required symbol <name> missing" when a required symbol is absent. The
// names of absent optional symbols go to *missing.
Result<void*> LoadLibrary(const std::string& library, std::vector<SymbolEntry>& table,
                          std::vector<std::string>* missing) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = ::dlerror();
    std::string why = err != nullptr ? err : "cannot be loaded";
    // dlerror already names the library ("libfoo.so.1: cannot open shared object file: ...").
    if (why.rfind(library, 0) != 0) why = library + ": " + why;
    return Status::Environment(why);
  }
  for (SymbolEntry& e : table) {
    void* sym = nullptr;
    for (const char* name : e.names) {
      sym = ::dlsym(handle, name);
      if (sym != nullptr) break;
    }
    if (sym == nullptr) {
      if (e.required) {
        ::dlclose(handle);
        return Status::Environment(library + ": required symbol " + e.names.front() + " missing");
      }
      missing->push_back(e.names.front());
      continue;
    }
    e.bind(sym);
  }
  return handle;
}

std::string CudaVersionString(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string NvmlError(const NvmlApi& api, nvmlReturn_t rc) {
  const char* s = api.ErrorString != nullptr ? api.ErrorString(rc) : nullptr;
  return s != nullptr ? std::string(s) + " (" + std::to_string(rc) + ")"
                      : "NVML error " + std::to_string(rc);
}

template <typename T>
std::optional<T> Opt(nvmlReturn_t rc, T v) {
  return rc == kNvmlSuccess ? std::optional<T>(v) : std::nullopt;
}

GpuInfo QueryGpu(const NvmlApi& api, unsigned index, nvmlDevice_t dev) {
  GpuInfo g;
  g.index = static_cast<int>(index);
  g.source = "nvml";
  char buf[256];
  if (api.DeviceGetName && api.DeviceGetName(dev, buf, sizeof(buf)) == kNvmlSuccess) {
    g.name = std::string(buf, strnlen(buf, sizeof(buf)));
  }
  if (api.DeviceGetUUID && api.DeviceGetUUID(dev, buf, sizeof(buf)) == kNvmlSuccess) {
    g.uuid = std::string(buf, strnlen(buf, sizeof(buf)));
  }
  if (api.DeviceGetVbiosVersion &&
      api.DeviceGetVbiosVersion(dev, buf, sizeof(buf)) == kNvmlSuccess) {
    g.vbios = std::string(buf, strnlen(buf, sizeof(buf)));
  }
  nvmlPciInfo_t pci{};
  if (api.DeviceGetPciInfo && api.DeviceGetPciInfo(dev, &pci) == kNvmlSuccess) {
    g.pci_bus_id = std::string(pci.busId, strnlen(pci.busId, sizeof(pci.busId)));
    char id[16];
    std::snprintf(id, sizeof(id), "0x%04x", pci.pciDeviceId >> 16);
    g.pci_device_id = id;
  }
  int major = 0, minor = 0;
  if (api.DeviceGetCudaComputeCapability &&
      api.DeviceGetCudaComputeCapability(dev, &major, &minor) == kNvmlSuccess) {
    g.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  }
  nvmlMemory_t mem{};
  if (api.DeviceGetMemoryInfo && api.DeviceGetMemoryInfo(dev, &mem) == kNvmlSuccess) {
    g.memory_mib = mem.total / (1024 * 1024);
  }
  nvmlEnableState_t cur = 0, pend = 0;
  if (api.DeviceGetEccMode && api.DeviceGetEccMode(dev, &cur, &pend) == kNvmlSuccess) {
    g.ecc.enabled = cur != 0;
  }
  if (api.DeviceGetTotalEccErrors) {
    unsigned long long n = 0;
    nvmlReturn_t rc =
        api.DeviceGetTotalEccErrors(dev, kNvmlMemoryErrorUncorrected, kNvmlVolatileEcc, &n);
    g.ecc.volatile_uncorrected = Opt<uint64_t>(rc, n);
    n = 0;
    rc = api.DeviceGetTotalEccErrors(dev, kNvmlMemoryErrorUncorrected, kNvmlAggregateEcc, &n);
    g.ecc.aggregate_uncorrected = Opt<uint64_t>(rc, n);
  }
  if (api.DeviceGetRemappedRows) {
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (api.DeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure) == kNvmlSuccess) {
      g.remapped_rows.pending = pending != 0;
      g.remapped_rows.failure = failure != 0;
    }
  }
  unsigned mig_cur = 0, mig_pend = 0;
  if (api.DeviceGetMigMode && api.DeviceGetMigMode(dev, &mig_cur, &mig_pend) == kNvmlSuccess) {
    g.mig.enabled = mig_cur != 0;
    if (mig_cur != 0 && api.DeviceGetMaxMigDeviceCount && api.DeviceGetMigDeviceHandleByIndex) {
      unsigned max = 0;
      if (api.DeviceGetMaxMigDeviceCount(dev, &max) == kNvmlSuccess) {
        int count = 0;
        for (unsigned i = 0; i < max && i < 64; ++i) {
          nvmlDevice_t mig = nullptr;
          if (api.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) == kNvmlSuccess) ++count;
        }
        g.mig.instances = count;
      }
    } else if (mig_cur == 0) {
      g.mig.instances = 0;
    }
  }
  unsigned v = 0;
  auto get_uint = [&](auto fn) -> std::optional<int> {
    if (fn == nullptr) return std::nullopt;
    v = 0;
    if (fn(dev, &v) != kNvmlSuccess) return std::nullopt;
    return static_cast<int>(v);
  };
  g.pcie.gen_current = get_uint(api.DeviceGetCurrPcieLinkGeneration);
  g.pcie.gen_max = get_uint(api.DeviceGetMaxPcieLinkGeneration);
  g.pcie.width_current = get_uint(api.DeviceGetCurrPcieLinkWidth);
  g.pcie.width_max = get_uint(api.DeviceGetMaxPcieLinkWidth);
  if (auto mw = get_uint(api.DeviceGetPowerManagementLimit)) g.power_limit_w = *mw / 1000.0;
  unsigned long long reasons = 0;
  if (api.DeviceGetCurrentClocksThrottleReasons &&
      api.DeviceGetCurrentClocksThrottleReasons(dev, &reasons) == kNvmlSuccess) {
    g.throttle_reasons = ThrottleReasonNames(reasons);
  }
  nvmlEnableState_t pm = 0;
  if (api.DeviceGetPersistenceMode && api.DeviceGetPersistenceMode(dev, &pm) == kNvmlSuccess) {
    g.persistence_mode = pm != 0;
  }
  if (api.DeviceGetNvLinkState) {
    for (unsigned link = 0; link < kNvmlMaxNvLinks; ++link) {
      nvmlEnableState_t active = 0;
      if (api.DeviceGetNvLinkState(dev, link, &active) != kNvmlSuccess) break;
      g.nvlink_active.push_back(active != 0);
    }
  }
  if (api.DeviceGetRetiredPages) {
    auto count = [&](int cause) -> std::optional<uint64_t> {
      unsigned n = 0;
      nvmlReturn_t rc = api.DeviceGetRetiredPages(dev, cause, &n, nullptr, nullptr);
      if (rc != kNvmlSuccess && rc != kNvmlInsufficientSize) return std::nullopt;
      return n;
    };
    g.retired_pages.single_bit = count(kNvmlRetiredMultipleSingleBit);
    g.retired_pages.double_bit = count(kNvmlRetiredDoubleBit);
  }
  nvmlEnableState_t rp_pending = 0;
  if (api.DeviceGetRetiredPagesPendingStatus &&
      api.DeviceGetRetiredPagesPendingStatus(dev, &rp_pending) == kNvmlSuccess) {
    g.retired_pages.pending = rp_pending != 0;
  }
  return g;
}

// nvmlGpuVirtualizationMode_t as a name.
std::string VirtualizationModeName(int mode) {
  switch (mode) {
    case 0:
      return "none";
    case 1:
      return "passthrough";
    case 2:
      return "vgpu";
    case 3:
      return "host_vgpu";
    case 4:
      return "host_vsga";
    default:
      return "unknown(" + std::to_string(mode) + ")";
  }
}

}  // namespace

std::vector<std::string> ThrottleReasonNames(unsigned long long mask) {
  // nvml.h nvmlClocksThrottleReason* / nvmlClocksEventReason* bits.
  static const struct {
    unsigned long long bit;
    const char* name;
  } kBits[] = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  std::vector<std::string> out;
  unsigned long long known = 0;
  for (const auto& b : kBits) {
    known |= b.bit;
    if (mask & b.bit) out.emplace_back(b.name);
  }
  if (mask & ~known) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "other_0x%llx", mask & ~known);
    out.emplace_back(buf);
  }
  return out;
}

LiveDriverResult QueryLiveDriverInProcess(const LiveDriverOptions& options) {
  LiveDriverResult r;
  // The CUDA driver API: cuDriverGetVersion needs no cuInit.
  std::optional<std::string> cuda_from_libcuda;
  {
    int (*get_version)(int*) = nullptr;
    std::vector<SymbolEntry> table = {Sym(&get_version, {"cuDriverGetVersion"}, true)};
    std::vector<std::string> missing;
    Result<void*> h = LoadLibrary(options.cuda_library, table, &missing);
    if (!h.ok()) {
      r.findings.push_back({"warning", "driver.libcuda_unavailable", h.status().message()});
    } else {
      int v = 0;
      int rc = get_version(&v);
      if (rc == 0 && v > 0) {
        cuda_from_libcuda = CudaVersionString(v);
      } else {
        r.findings.push_back({"warning", "driver.libcuda_error",
                              "cuDriverGetVersion returned CUresult " + std::to_string(rc)});
      }
    }
  }

  NvmlApi api;
  std::vector<SymbolEntry> table = NvmlSymbols(api);
  std::vector<std::string> missing;
  Result<void*> handle = LoadLibrary(options.nvml_library, table, &missing);
  if (!handle.ok()) {
    bool absent =
        handle.status().message().find("cannot open shared object file") != std::string::npos ||
        handle.status().message().find("No such file") != std::string::npos;
    r.driver.status = absent ? "missing" : "error";
    r.driver.error = handle.status().message();
    if (cuda_from_libcuda) {
      r.driver.cuda_version = cuda_from_libcuda;
      r.driver.source = "libcuda";
    }
    return r;
  }
  for (const std::string& name : missing) {
    r.findings.push_back(
        {"info", "nvml.symbol_missing",
         options.nvml_library + ": optional symbol " + name + " missing; its fields are null"});
  }
  nvmlReturn_t rc = api.Init();
  if (rc != kNvmlSuccess) {
    r.driver.status = "error";
    r.driver.error = "nvmlInit failed: " + NvmlError(api, rc);
    r.driver.cuda_version = cuda_from_libcuda;
    return r;
  }
  r.driver.status = "ok";
  r.driver.source = "nvml";
  char buf[96] = {};
  rc = api.SystemGetDriverVersion(buf, sizeof(buf));
  if (rc == kNvmlSuccess) {
    r.driver.version = std::string(buf, strnlen(buf, sizeof(buf)));
  } else {
    r.findings.push_back({"warning", "nvml.driver_version",
                          "nvmlSystemGetDriverVersion failed: " + NvmlError(api, rc)});
  }
  int cuda = 0;
  if (api.SystemGetCudaDriverVersion && api.SystemGetCudaDriverVersion(&cuda) == kNvmlSuccess &&
      cuda > 0) {
    r.driver.cuda_version = CudaVersionString(cuda);
  } else {
    r.driver.cuda_version = cuda_from_libcuda;
  }
  unsigned count = 0;
  rc = api.DeviceGetCount(&count);
  if (rc != kNvmlSuccess) {
    r.findings.push_back(
        {"error", "nvml.device_count", "nvmlDeviceGetCount failed: " + NvmlError(api, rc)});
    count = 0;
  }
  for (unsigned i = 0; i < count && i < 256; ++i) {
    nvmlDevice_t dev = nullptr;
    rc = api.DeviceGetHandleByIndex(i, &dev);
    if (rc != kNvmlSuccess) {
      r.findings.push_back({"error", "nvml.device_handle",
                            "GPU " + std::to_string(i) +
                                ": nvmlDeviceGetHandleByIndex failed: " + NvmlError(api, rc)});
      continue;
    }
    r.gpus.push_back(QueryGpu(api, i, dev));
    int mode = 0;
    if (api.DeviceGetVirtualizationMode &&
        api.DeviceGetVirtualizationMode(dev, &mode) == kNvmlSuccess) {
      // The host's mode: the first GPU's, unless a later one is virtualized and it is not.
      std::optional<std::string>& host = r.driver.sharing.virtualization_mode;
      if (!host || *host == "none") host = VirtualizationModeName(mode);
    }
  }
  api.Shutdown();
  return r;
}

LiveDriverResult QueryLiveDriver(const LiveDriverOptions& options) {
  Result<std::string> out = RunInChild(
      "NVML query",
      [&options]() {
        LiveDriverResult r = QueryLiveDriverInProcess(options);
        Fingerprint fp;
        fp.driver = r.driver;
        fp.gpus = r.gpus;
        fp.collection.findings = r.findings;
        return FingerprintToJson(fp).dump();
      },
      options.timeout_ms);
  LiveDriverResult r;
  if (!out.ok()) {
    r.driver.status = "error";
    r.driver.error = out.status().message();
    r.findings.push_back({"error", "driver.query_failed", out.status().message()});
    return r;
  }
  Result<Fingerprint> fp = ParseFingerprint(*out);
  if (!fp.ok()) {
    r.driver.status = "error";
    r.driver.error = "NVML query returned an unreadable answer: " + fp.status().message();
    return r;
  }
  r.driver = fp->driver;
  r.gpus = std::move(fp->gpus);
  r.findings = std::move(fp->collection.findings);
  return r;
}

}  // namespace cutover::probe
