// What the GPU did beside a case's timed repetitions (compat/soak.h), to explain a spread on a
// GPU: SM and memory clocks, the clock-event (throttle) reasons, temperature, power, and how
// many other processes had the device (a count, never who). The source is NVML, loaded at run
// time (libnvidia-ml.so.1, as the driver installs it): the binary links no NVIDIA library.
//
//   CUTOVER_ASSIGN_OR_RETURN(auto nvml, OpenNvmlMonitor("0000:3b:00.0"));
//   { GpuSampling watch(nvml.get(), &result.timing.interference); RunTheCase(); }
//
// Thread-safety: a GpuMonitor is sampled by one thread at a time; GpuSampling owns a thread
// that samples until it is destroyed, and writes `into` only from that thread (the caller reads
// it after the destructor).
#ifndef CUTOVER_COMPAT_GPU_MONITOR_H_
#define CUTOVER_COMPAT_GPU_MONITOR_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "compat/record.h"
#include "core/status.h"

namespace cutover {

// One reading; -1 where the device or driver does not say.
struct GpuSample {
  double sm_mhz = -1, mem_mhz = -1;
  int64_t reasons = -1;  // NVML's clock-event reasons bit mask
  double temperature_c = -1, power_w = -1;
  int processes = -1;  // compute processes on the device, this one included
};

// The clock-event reasons that slow a busy GPU: SW power cap (0x4), HW slowdown (0x8), sync
// boost (0x10), SW thermal (0x20), HW thermal (0x40), HW power brake (0x80). Idle (0x1), the
// application clock setting (0x2) and the display clock setting (0x100) are not interference.
inline constexpr int64_t kSlowingClockReasons = 0xfc;

class GpuMonitor {
 public:
  virtual ~GpuMonitor() = default;
  virtual GpuSample Sample() = 0;
};

// Folds one sample into `f`'s GPU fields (clock minima and maxima, the OR of the slowing
// reasons, peaks of temperature and power, the most other processes seen: processes - 1, since
// the sampling process holds a context on the device) and marks `f` measured.
void AccumulateGpu(const GpuSample& s, Interference* f);

// NVML for the device at `pci_bus_id` ("0000:3b:00.0", as the CUDA plugin reports it; NVML and
// CUDA number devices differently). Environment with the reason when `library` cannot be loaded
// or initialized or has no such device.
Result<std::unique_ptr<GpuMonitor>> OpenNvmlMonitor(
    const std::string& pci_bus_id, const std::string& library = "libnvidia-ml.so.1");

// Samples `monitor` every `period` on a thread of its own (once at once, once at the end) and
// folds every sample into `into` with AccumulateGpu, until destroyed. A null monitor samples
// nothing.
class GpuSampling {
 public:
  GpuSampling(GpuMonitor* monitor, Interference* into,
              std::chrono::milliseconds period = std::chrono::milliseconds(20));
  ~GpuSampling();
  GpuSampling(const GpuSampling&) = delete;
  GpuSampling& operator=(const GpuSampling&) = delete;

 private:
  GpuMonitor* monitor_;
  Interference* into_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace cutover

#endif  // CUTOVER_COMPAT_GPU_MONITOR_H_
