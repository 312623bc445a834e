#include "probe/health.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "core/file_util.h"

namespace cutover::probe {
namespace {

int Rank(const std::string& severity) {
  if (severity == "failed") return 2;
  if (severity == "degraded") return 1;
  return 0;
}

// "00000000:18:00.0" and "0000:18:00" name the same device: compare domain, bus and device as
// numbers.
}  // namespace

bool SamePciDevice(const std::string& logged, const std::string& bus_id) {
  auto parts = [](const std::string& s, unsigned long out[3]) {
    std::string t = s.substr(0, s.find('.'));
    size_t c2 = t.rfind(':');
    if (c2 == std::string::npos || c2 == 0) return false;
    size_t c1 = t.rfind(':', c2 - 1);
    std::string dom = c1 == std::string::npos ? "0" : t.substr(0, c1);
    std::string bus =
        t.substr(c1 == std::string::npos ? 0 : c1 + 1, c2 - (c1 == std::string::npos ? 0 : c1 + 1));
    std::string dev = t.substr(c2 + 1);
    const std::string* fields[3] = {&dom, &bus, &dev};
    for (int i = 0; i < 3; ++i) {
      const std::string& f = *fields[i];
      if (f.empty() || f.size() > 8) return false;
      auto r = std::from_chars(f.data(), f.data() + f.size(), out[i], 16);
      if (r.ec != std::errc() || r.ptr != f.data() + f.size()) return false;
    }
    return true;
  };
  unsigned long a[3], b[3];
  return parts(logged, a) && parts(bus_id, b) && a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

std::vector<XidEvent> AttachXidEvents(const std::vector<XidEvent>& events,
                                      std::vector<GpuInfo>* gpus) {
  std::vector<XidEvent> unmatched;
  for (const XidEvent& x : events) {
    bool found = false;
    for (GpuInfo& g : *gpus) {
      if (g.pci_bus_id && SamePciDevice(x.pci, *g.pci_bus_id)) {
        g.xid_events.push_back({x.xid, x.text});
        found = true;
        break;
      }
    }
    if (!found) unmatched.push_back(x);
  }
  return unmatched;
}

std::string ReadLiveKernelLog(std::string* source) {
  int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) {
    std::string log;
    char buf[8192];
    while (true) {
      ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n > 0) {
        log.append(buf, static_cast<size_t>(n));
        if (log.back() != '\n') log += '\n';
        continue;
      }
      if (n < 0 && errno == EPIPE) continue;  // a record was overwritten while reading
      break;                                  // EAGAIN: no more records
    }
    ::close(fd);
    *source = "/dev/kmsg";
    return log;
  }
  std::string why = std::string("/dev/kmsg: ") + std::strerror(errno);
  Result<std::string> kern = ReadFile("/var/log/kern.log");
  if (kern.ok()) {
    *source = "/var/log/kern.log";
    return *kern;
  }
  *source = "not read (" + why + "; /var/log/kern.log: " + kern.status().message() +
            "): Xid events not checked; run as root or pass --kernel-log";
  return "";
}

std::vector<XidEvent> ParseXidEvents(std::string_view log) {
  std::vector<XidEvent> out;
  constexpr std::string_view kMark = "NVRM: Xid (PCI:";
  size_t pos = 0;
  while ((pos = log.find(kMark, pos)) != std::string_view::npos) {
    size_t eol = log.find('\n', pos);
    std::string_view line = log.substr(pos, eol == std::string_view::npos ? log.npos : eol - pos);
    pos += kMark.size();
    size_t close = line.find("): ", kMark.size());
    if (close == std::string_view::npos) continue;
    std::string_view pci = line.substr(kMark.size(), close - kMark.size());
    std::string_view rest = line.substr(close + 3);
    int xid = 0;
    auto r = std::from_chars(rest.data(), rest.data() + rest.size(), xid);
    if (r.ec != std::errc() || xid <= 0 || pci.empty() || pci.size() > 32) continue;
    while (!line.empty() &&
           (line.back() == '\r' || std::isspace(static_cast<unsigned char>(line.back())))) {
      line.remove_suffix(1);
    }
    out.push_back({std::string(pci), xid, std::string(line.substr(0, 400))});
  }
  return out;
}

XidInfo DescribeXid(int xid) {
  switch (xid) {
    case 13:
      return {"info", "graphics engine exception (usually the application)"};
    case 31:
      return {"info", "GPU memory page fault (usually the application)"};
    case 43:
      return {"info", "GPU stopped processing (the application's context was killed)"};
    case 48:
      return {"failed", "double-bit ECC error"};
    case 63:
      return {"degraded", "row remapping event (ECC page retirement or remap recorded)"};
    case 64:
      return {"failed", "row remapping failure"};
    case 74:
      return {"degraded", "NVLink error"};
    case 79:
      return {"failed", "GPU has fallen off the bus"};
    case 92:
      return {"degraded", "high single-bit ECC error rate"};
    case 94:
      return {"degraded", "contained ECC error (restart the application)"};
    case 95:
      return {"failed", "uncontained ECC error (reset the GPU)"};
    default:
      return {"info", "see NVIDIA's Xid catalogue"};
  }
}

bool HealthReport::AllHealthy() const {
  // A GPU that fell off the bus may be missing from the fingerprint: its Xid still counts.
  for (const XidEvent& x : unmatched_xids) {
    if (Rank(DescribeXid(x.xid).severity) > 0) return false;
  }
  return std::all_of(gpus.begin(), gpus.end(),
                     [](const GpuHealth& g) { return g.verdict == "healthy"; });
}

HealthReport JudgeHealth(const Fingerprint& fp, const std::vector<XidEvent>& xids,
                         std::string kernel_log_source) {
  HealthReport report;
  report.kernel_log = std::move(kernel_log_source);
  std::vector<bool> matched(xids.size(), false);
  for (const GpuInfo& gpu : fp.gpus) {
    GpuHealth h;
    h.index = gpu.index;
    h.name = gpu.name.value_or("-");
    h.uuid = gpu.uuid.value_or("-");
    h.pci_bus_id = gpu.pci_bus_id.value_or("-");
    auto add = [&h](std::string severity, std::string what, std::string action) {
      h.findings.push_back({std::move(severity), std::move(what), std::move(action)});
    };
    if (gpu.remapped_rows.failure.value_or(false)) {
      add("failed", "row remapping failed", "replace the GPU (RMA)");
    }
    if (gpu.remapped_rows.pending.value_or(false)) {
      add("degraded", "row remapping pending", "reset the GPU to apply the remap");
    }
    // Dynamic page retirement (pre-Ampere GPUs; NVIDIA's "Dynamic Page Retirement" guide,
    // docs.nvidia.com/deploy/dynamic-page-retirement): a retirement pending until the next
    // driver reload is degraded; kRetiredPagesFailed (60, the retired-page count that guide's
    // RMA policy names as we recall it; the number is unverified here) or more is failed.
    const RetiredPages& rp = gpu.retired_pages;
    uint64_t retired = rp.single_bit.value_or(0) + rp.double_bit.value_or(0);
    if (retired >= kRetiredPagesFailed) {
      add("failed",
          std::to_string(retired) + " retired pages (" + std::to_string(rp.single_bit.value_or(0)) +
              " single-bit, " + std::to_string(rp.double_bit.value_or(0)) + " double-bit)",
          "replace the GPU (RMA)");
    } else if (retired > 0) {
      add("info", std::to_string(retired) + " retired pages", "watch for new ones");
    }
    if (rp.pending.value_or(false)) {
      add("degraded", "page retirement pending", "reload the driver or reset the GPU to retire it");
    }
    if (gpu.ecc.volatile_uncorrected.value_or(0) > 0) {
      add("degraded",
          std::to_string(*gpu.ecc.volatile_uncorrected) + " uncorrected ECC errors since boot",
          "drain the GPU and reset it; replace it if they recur");
    } else if (gpu.ecc.aggregate_uncorrected.value_or(0) > 0) {
      add("degraded",
          std::to_string(*gpu.ecc.aggregate_uncorrected) + " uncorrected ECC errors in its life",
          "watch for new ones; compare with the fleet");
    }
    for (const std::string& t : gpu.throttle_reasons) {
      if (t == "hw_slowdown" || t == "hw_thermal_slowdown" || t == "hw_power_brake_slowdown" ||
          t == "sw_thermal_slowdown") {
        add("degraded", "throttled: " + t, "check cooling, power delivery and the board");
      } else if (t == "sw_power_cap") {
        add("info", "throttled: sw_power_cap (at its power limit)", "");
      }
    }
    if (gpu.pcie.width_current && gpu.pcie.width_max &&
        *gpu.pcie.width_current < *gpu.pcie.width_max) {
      add("degraded",
          "PCIe link x" + std::to_string(*gpu.pcie.width_current) + " of x" +
              std::to_string(*gpu.pcie.width_max),
          "reseat the GPU or riser; check the slot");
    }
    if (gpu.pcie.gen_current && gpu.pcie.gen_max && *gpu.pcie.gen_current < *gpu.pcie.gen_max) {
      add("info",
          "PCIe gen " + std::to_string(*gpu.pcie.gen_current) + " of " +
              std::to_string(*gpu.pcie.gen_max) + " (normal while idle; check under load)",
          "");
    }
    if (gpu.persistence_mode.has_value() && !*gpu.persistence_mode) {
      add("info", "persistence mode off (slower first CUDA call, state lost between jobs)",
          "nvidia-persistenced, or nvidia-smi -pm 1");
    }
    for (size_t i = 0; i < xids.size(); ++i) {
      if (!gpu.pci_bus_id || !SamePciDevice(xids[i].pci, *gpu.pci_bus_id)) continue;
      matched[i] = true;
      XidInfo d = DescribeXid(xids[i].xid);
      add(d.severity, "Xid " + std::to_string(xids[i].xid) + ": " + d.meaning,
          Rank(d.severity) > 0 ? "see the kernel log line: " + xids[i].text : "");
    }
    int worst = 0;
    for (const auto& f : h.findings) worst = std::max(worst, Rank(f.severity));
    h.verdict = worst == 2 ? "failed" : worst == 1 ? "degraded" : "healthy";
    report.gpus.push_back(std::move(h));
  }
  for (size_t i = 0; i < xids.size(); ++i) {
    if (!matched[i]) report.unmatched_xids.push_back(xids[i]);
  }
  return report;
}

nlohmann::json HealthToJson(const HealthReport& r) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const GpuHealth& g : r.gpus) {
    nlohmann::json findings = nlohmann::json::array();
    for (const auto& f : g.findings) {
      findings.push_back({{"severity", f.severity}, {"what", f.what}, {"action", f.action}});
    }
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"uuid", g.uuid},
                    {"pci_bus_id", g.pci_bus_id},
                    {"verdict", g.verdict},
                    {"findings", findings}});
  }
  nlohmann::json unmatched = nlohmann::json::array();
  for (const auto& x : r.unmatched_xids) {
    unmatched.push_back({{"pci", x.pci}, {"xid", x.xid}, {"text", x.text}});
  }
  return {{"schema", "cutover.health/1"},
          {"healthy", r.AllHealthy()},
          {"kernel_log", r.kernel_log},
          {"gpus", gpus},
          {"unmatched_xids", unmatched}};
}

std::string RenderHealthTable(const HealthReport& r) {
  std::string out = "GPU\tVERDICT\tNAME\tBUS\n";
  for (const GpuHealth& g : r.gpus) {
    out += std::to_string(g.index) + "\t" + g.verdict + "\t" + g.name + "\t" + g.pci_bus_id + "\n";
    for (const auto& f : g.findings) {
      out += "  " + f.severity + ": " + f.what + (f.action.empty() ? "" : " -> " + f.action) + "\n";
    }
  }
  for (const auto& x : r.unmatched_xids) {
    out += "Xid " + std::to_string(x.xid) + " on " + x.pci + " (no such GPU now): " + x.text + "\n";
  }
  out += "kernel log: " + r.kernel_log + "\n";
  size_t bad = std::count_if(r.gpus.begin(), r.gpus.end(),
                             [](const GpuHealth& g) { return g.verdict != "healthy"; });
  out += std::to_string(r.gpus.size()) + " GPUs, " + std::to_string(bad) + " not healthy\n";
  return out;
}

}  // namespace cutover::probe
