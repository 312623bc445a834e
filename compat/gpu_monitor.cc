#include "compat/gpu_monitor.h"

#include <dlfcn.h>

#include <algorithm>

namespace cutover {
namespace {

// The NVML subset this file reads (nvml.h); layouts as NVML documents them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlClockMem = 2;
constexpr int kNvmlTemperatureGpu = 0;

struct Nvml {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  // nvmlDeviceGetComputeRunningProcesses: count 0 and no buffer ask for the count only.
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned*, void*) = nullptr;
};

template <typename Fn>
void Bind(void* lib, Fn* slot, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = ::dlsym(lib, n)) {
      *slot = reinterpret_cast<Fn>(p);
      return;
    }
  }
}

class NvmlMonitor : public GpuMonitor {
 public:
  // The library stays loaded after shutdown: NVML may keep threads of its own until exit.
  NvmlMonitor(Nvml api, nvmlDevice_t dev) : api_(api), dev_(dev) {}
  ~NvmlMonitor() override { api_.shutdown(); }

  GpuSample Sample() override {
    GpuSample s;
    unsigned v = 0;
    if (api_.clock && api_.clock(dev_, kNvmlClockSm, &v) == kNvmlSuccess) s.sm_mhz = v;
    if (api_.clock && api_.clock(dev_, kNvmlClockMem, &v) == kNvmlSuccess) s.mem_mhz = v;
    unsigned long long r = 0;
    if (api_.reasons && api_.reasons(dev_, &r) == kNvmlSuccess) s.reasons = static_cast<int64_t>(r);
    if (api_.temperature && api_.temperature(dev_, kNvmlTemperatureGpu, &v) == kNvmlSuccess) {
      s.temperature_c = v;
    }
    if (api_.power && api_.power(dev_, &v) == kNvmlSuccess) s.power_w = v / 1000.0;
    unsigned count = 0;
    if (api_.processes) {
      const nvmlReturn_t rc = api_.processes(dev_, &count, nullptr);
      if (rc == kNvmlSuccess || rc == kNvmlInsufficientSize) s.processes = static_cast<int>(count);
    }
    return s;
  }

 private:
  Nvml api_;
  nvmlDevice_t dev_;
};

}  // namespace

void AccumulateGpu(const GpuSample& s, Interference* f) {
  f->measured = true;
  auto lower = [](double v, double* into) {
    if (v > 0) *into = *into < 0 ? v : std::min(*into, v);
  };
  auto upper = [](double v, double* into) {
    if (v >= 0) *into = std::max(*into, v);
  };
  lower(s.sm_mhz, &f->sm_clock_min_mhz);
  upper(s.sm_mhz, &f->sm_clock_max_mhz);
  lower(s.mem_mhz, &f->mem_clock_min_mhz);
  if (s.reasons >= 0) {
    f->throttle_reasons =
        std::max<int64_t>(0, f->throttle_reasons) | (s.reasons & kSlowingClockReasons);
  }
  upper(s.temperature_c, &f->temperature_max_c);
  upper(s.power_w, &f->power_max_w);
  if (s.processes >= 0)
    f->other_processes = std::max(f->other_processes, std::max(0, s.processes - 1));
}

Result<std::unique_ptr<GpuMonitor>> OpenNvmlMonitor(const std::string& pci_bus_id,
                                                    const std::string& library) {
  ::dlerror();
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = ::dlerror();
    return Status::Environment("NVML: " + std::string(e != nullptr ? e : library + ": not loaded"));
  }
  Nvml api;
  Bind(lib, &api.init, {"nvmlInit_v2", "nvmlInit"});
  Bind(lib, &api.shutdown, {"nvmlShutdown"});
  Bind(lib, &api.error_string, {"nvmlErrorString"});
  Bind(lib, &api.by_pci, {"nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId"});
  Bind(lib, &api.clock, {"nvmlDeviceGetClockInfo"});
  Bind(lib, &api.reasons,
       {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  Bind(lib, &api.temperature, {"nvmlDeviceGetTemperature"});
  Bind(lib, &api.power, {"nvmlDeviceGetPowerUsage"});
  Bind(lib, &api.processes,
       {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
        "nvmlDeviceGetComputeRunningProcesses"});
  if (!api.init || !api.shutdown || !api.by_pci) {
    ::dlclose(lib);
    return Status::Environment("NVML: " + library +
                               " lacks nvmlInit, nvmlShutdown or "
                               "nvmlDeviceGetHandleByPciBusId");
  }
  auto reason = [&api](nvmlReturn_t rc) {
    return api.error_string ? std::string(api.error_string(rc)) : "error " + std::to_string(rc);
  };
  if (const nvmlReturn_t rc = api.init(); rc != kNvmlSuccess) {
    return Status::Environment("NVML: nvmlInit: " + reason(rc));
  }
  nvmlDevice_t dev = nullptr;
  if (const nvmlReturn_t rc = api.by_pci(pci_bus_id.c_str(), &dev); rc != kNvmlSuccess) {
    api.shutdown();
    return Status::Environment("NVML: no device at PCI bus id " + pci_bus_id + ": " + reason(rc));
  }
  return std::unique_ptr<GpuMonitor>(std::make_unique<NvmlMonitor>(api, dev));
}

GpuSampling::GpuSampling(GpuMonitor* monitor, Interference* into, std::chrono::milliseconds period)
    : monitor_(monitor), into_(into), period_(period) {
  if (monitor_ == nullptr) return;
  thread_ = std::thread([this] {
    for (;;) {
      AccumulateGpu(monitor_->Sample(), into_);
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, period_, [this] { return stop_; })) break;
    }
    // One more at the end: the state the case ended in.
    AccumulateGpu(monitor_->Sample(), into_);
  });
}

GpuSampling::~GpuSampling() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace cutover
