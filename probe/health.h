// `probe health`: a verdict per GPU (healthy | degraded | failed) from what the fingerprint holds
// (ECC, row remapping, throttling, PCIe link, persistence mode) and the NVIDIA Xid events in the
// kernel log.
//
// Rules (each finding has a severity; a GPU's verdict is its worst finding):
//   failed    row remapping failed (replace the GPU); Xid 48 (double-bit ECC), 64 (row remap
//             failure), 79 (fallen off the bus), 95 (uncontained ECC error)
//   degraded  uncorrected ECC errors (volatile or aggregate); row remap pending (reset the GPU);
//             hardware slowdown, thermal or power-brake throttling; PCIe width below its
//             maximum; Xid 63 (row remap event), 74 (NVLink error), 92 (high single-bit ECC
//             rate), 94 (contained ECC error)
//   info      Xid 13, 31, 43 (usually the application's fault), other Xids; PCIe generation
//             below its maximum (GPUs lower it when idle); persistence mode off; software
//             power capping
// Retired pages (pre-Ampere GPUs, gpus[].retired_pages): a pending retirement is degraded;
// kRetiredPagesFailed or more retired pages (single- and double-bit together) is failed; fewer
// is info.
#ifndef CUTOVER_PROBE_HEALTH_H_
#define CUTOVER_PROBE_HEALTH_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fingerprint.h"

namespace cutover::probe {

// The retired-page count at which a GPU is failed (see health.cc for the reference).
inline constexpr uint64_t kRetiredPagesFailed = 60;

struct XidEvent {
  std::string pci;  // as logged: "0000:18:00"
  int xid = 0;
  std::string text;  // the log line from "NVRM: Xid"
};

// Every "NVRM: Xid (PCI:<bdf>): <n>, ..." line in a kernel log (dmesg, /dev/kmsg records,
// journalctl -k, kern.log). Other lines are ignored.
std::vector<XidEvent> ParseXidEvents(std::string_view log);

// True when a logged PCI address ("0000:18:00") and an NVML bus id ("00000000:18:00.0") name
// the same device (domain, bus and device compared as numbers).
bool SamePciDevice(const std::string& logged, const std::string& bus_id);

// Appends each event to gpus[].xid_events of the GPU it names; returns the events that name
// none of them.
std::vector<XidEvent> AttachXidEvents(const std::vector<XidEvent>& events,
                                      std::vector<GpuInfo>* gpus);

// The kernel log of this host: /dev/kmsg (every record still in the ring buffer), else
// /var/log/kern.log. Sets *source to where it came from, or to why nothing was read.
std::string ReadLiveKernelLog(std::string* source);

struct XidInfo {
  const char* severity;  // "failed" | "degraded" | "info"
  const char* meaning;
};
XidInfo DescribeXid(int xid);

struct HealthFinding {
  std::string severity;  // "failed" | "degraded" | "info"
  std::string what;
  std::string action;
};

struct GpuHealth {
  int index = 0;
  std::string name, uuid, pci_bus_id;
  std::string verdict;  // "healthy" | "degraded" | "failed"
  std::vector<HealthFinding> findings;
};

struct HealthReport {
  std::vector<GpuHealth> gpus;
  std::vector<XidEvent> unmatched_xids;  // events naming no GPU of the fingerprint
  std::string kernel_log;                // where the Xids came from, or why none were read
  // Every GPU healthy and no degrading or failing Xid on a device the fingerprint lacks.
  bool AllHealthy() const;
};

HealthReport JudgeHealth(const Fingerprint& fp, const std::vector<XidEvent>& xids,
                         std::string kernel_log_source);

nlohmann::json HealthToJson(const HealthReport& report);  // "cutover.health/1"
std::string RenderHealthTable(const HealthReport& report);

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_HEALTH_H_
