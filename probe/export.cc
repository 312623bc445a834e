#include "probe/export.h"

#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace cutover::probe {
namespace {

// The shortest text that reads back as `v` ("700", "0.0125").
std::string FormatDouble(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string FormatLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first;
    out += "=\"";
    out += EscapePrometheusLabelValue(labels[i].second);
    out += '"';
  }
  out += '}';
  return out;
}

// One metric family: its HELP and TYPE lines and its samples, written together.
struct Family {
  std::string name;
  std::string help;
  std::vector<std::string> samples;  // "{labels} value" after the name

  void Add(const Labels& labels, const std::string& value) {
    samples.push_back(FormatLabels(labels) + " " + value);
  }
};

class Exposition {
 public:
  // Returns the family `name`, created (in first-use order) with `help` on first use.
  Family& Gauge(const std::string& name, const std::string& help) {
    for (Family& f : families_) {
      if (f.name == name) return f;
    }
    families_.push_back({name, help, {}});
    return families_.back();
  }

  std::string Text() const {
    std::string out;
    for (const Family& f : families_) {
      if (f.samples.empty()) continue;
      out += "# HELP " + f.name + " " + f.help + "\n";
      out += "# TYPE " + f.name + " gauge\n";
      for (const std::string& s : f.samples) out += f.name + s + "\n";
    }
    return out;
  }

 private:
  std::vector<Family> families_;
};

std::string Bool(bool b) { return b ? "1" : "0"; }

// "12.4" -> {12, 4}; "550.54.14" -> {550, 54, 14}; nullopt when a part is not a number.
std::optional<std::vector<std::string>> NumericParts(std::string_view version) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = version.find('.', start);
    std::string_view part =
        version.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (part.empty()) return std::nullopt;
    for (char c : part) {
      if (c < '0' || c > '9') return std::nullopt;
    }
    parts.emplace_back(part);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

// A Kubernetes label value from a product name: spaces become '-' (as GFD does); any other
// character a label value may not hold becomes '_'.
std::string LabelValue(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    out += c == ' ' ? '-' : ok ? c : '_';
  }
  return out;
}

}  // namespace

std::string EscapePrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderPrometheus(const Fingerprint& fp) {
  Exposition ex;
  const std::string driver = fp.driver.version.value_or("");
  const std::string cuda = fp.driver.cuda_version.value_or("");
  for (const GpuInfo& g : fp.gpus) {
    const std::string index = std::to_string(g.index);
    const std::string uuid = g.uuid.value_or("");
    const Labels id = {{"index", index}, {"uuid", uuid}};
    ex.Gauge("cutover_gpu_info",
             "A GPU of this host (value 1); its identity, driver and the driver's CUDA version "
             "in labels.")
        .Add({{"index", index},
              {"name", g.name.value_or("")},
              {"uuid", uuid},
              {"pci_bus_id", g.pci_bus_id.value_or("")},
              {"compute_capability", g.compute_capability.value_or("")},
              {"driver", driver},
              {"cuda", cuda}},
             "1");
    Family& memory = ex.Gauge("cutover_gpu_memory_bytes", "Memory of the GPU in bytes.");
    if (g.memory_mib) memory.Add(id, std::to_string(*g.memory_mib * 1024 * 1024));
    Family& ecc = ex.Gauge("cutover_gpu_ecc_enabled", "1 when ECC is enabled on the GPU.");
    if (g.ecc.enabled) ecc.Add(id, Bool(*g.ecc.enabled));
    Family& uncorrected =
        ex.Gauge("cutover_gpu_ecc_uncorrected_errors",
                 "Uncorrected ECC errors: since the driver loaded (counter=\"volatile\") or in the "
                 "GPU's life (counter=\"aggregate\").");
    if (g.ecc.volatile_uncorrected) {
      uncorrected.Add({{"index", index}, {"uuid", uuid}, {"counter", "volatile"}},
                      std::to_string(*g.ecc.volatile_uncorrected));
    }
    if (g.ecc.aggregate_uncorrected) {
      uncorrected.Add({{"index", index}, {"uuid", uuid}, {"counter", "aggregate"}},
                      std::to_string(*g.ecc.aggregate_uncorrected));
    }
    Family& pending =
        ex.Gauge("cutover_gpu_remapped_rows_pending", "1 when a row remap waits for a GPU reset.");
    if (g.remapped_rows.pending) pending.Add(id, Bool(*g.remapped_rows.pending));
    Family& failed = ex.Gauge("cutover_gpu_remapped_rows_failed",
                              "1 when a row remap failed (the GPU needs replacing).");
    if (g.remapped_rows.failure) failed.Add(id, Bool(*g.remapped_rows.failure));
    Family& retired = ex.Gauge("cutover_gpu_retired_pages",
                               "Memory pages retired by dynamic page retirement (pre-Ampere "
                               "GPUs), by cause (single_bit or double_bit ECC errors).");
    if (g.retired_pages.single_bit) {
      retired.Add({{"index", index}, {"uuid", uuid}, {"cause", "single_bit"}},
                  std::to_string(*g.retired_pages.single_bit));
    }
    if (g.retired_pages.double_bit) {
      retired.Add({{"index", index}, {"uuid", uuid}, {"cause", "double_bit"}},
                  std::to_string(*g.retired_pages.double_bit));
    }
    Family& retired_pending = ex.Gauge("cutover_gpu_retired_pages_pending",
                                       "1 when a page retirement waits for a driver reload.");
    if (g.retired_pages.pending) retired_pending.Add(id, Bool(*g.retired_pages.pending));
    if (!g.xid_events.empty()) {
      std::map<int, int> by_xid;
      for (const GpuXidEvent& x : g.xid_events) ++by_xid[x.xid];
      Family& xids = ex.Gauge("cutover_gpu_xid_events",
                              "NVIDIA Xid events naming the GPU in the kernel log read at "
                              "collection, by Xid number.");
      for (const auto& [xid, n] : by_xid) {
        xids.Add({{"index", index}, {"uuid", uuid}, {"xid", std::to_string(xid)}},
                 std::to_string(n));
      }
    }
    Family& mig = ex.Gauge("cutover_gpu_mig_enabled", "1 when MIG mode is enabled on the GPU.");
    if (g.mig.enabled) mig.Add(id, Bool(*g.mig.enabled));
    const std::pair<const char*, std::optional<int>> pcie[] = {
        {"cutover_gpu_pcie_gen_current", g.pcie.gen_current},
        {"cutover_gpu_pcie_gen_max", g.pcie.gen_max},
        {"cutover_gpu_pcie_width_current", g.pcie.width_current},
        {"cutover_gpu_pcie_width_max", g.pcie.width_max},
    };
    const char* pcie_help[] = {
        "PCIe generation the GPU's link runs at now.",
        "Highest PCIe generation the GPU's link supports.",
        "PCIe lanes the GPU's link runs with now.",
        "Most PCIe lanes the GPU's link supports.",
    };
    for (size_t i = 0; i < 4; ++i) {
      Family& f = ex.Gauge(pcie[i].first, pcie_help[i]);
      if (pcie[i].second) f.Add(id, std::to_string(*pcie[i].second));
    }
    Family& power = ex.Gauge("cutover_gpu_power_limit_watts", "Power limit of the GPU in watts.");
    if (g.power_limit_w) power.Add(id, FormatDouble(*g.power_limit_w));
    Family& persistence =
        ex.Gauge("cutover_gpu_persistence_mode", "1 when persistence mode is enabled on the GPU.");
    if (g.persistence_mode) persistence.Add(id, Bool(*g.persistence_mode));
    // Clock throttling is known only when NVML was asked; files say nothing about it.
    if (g.source == "nvml") {
      bool throttled = false;
      for (const std::string& reason : g.throttle_reasons) {
        if (reason != "gpu_idle") throttled = true;
      }
      ex.Gauge("cutover_gpu_throttled",
               "1 when the GPU's clocks are held down for any reason but idling.")
          .Add(id, Bool(throttled));
      Family& reasons = ex.Gauge("cutover_gpu_throttle_reason",
                                 "A reason NVML gives for the GPU's clocks being held down "
                                 "(value 1).");
      for (const std::string& reason : g.throttle_reasons) {
        reasons.Add({{"index", index}, {"uuid", uuid}, {"reason", reason}}, "1");
      }
    }
  }
  Labels driver_labels = {{"status", fp.driver.status}, {"version", driver}, {"cuda", cuda}};
  driver_labels.emplace_back("kernel_module_flavor", fp.driver.kernel_module_flavor.value_or(""));
  driver_labels.emplace_back("fabric_manager", fp.driver.fabric_manager_version.value_or(""));
  ex.Gauge("cutover_driver_info",
           "The NVIDIA driver of this host (value 1): status, version, the CUDA version it "
           "supports, kernel module flavor and fabric manager version in labels.")
      .Add(driver_labels, "1");
  ex.Gauge("cutover_probe_collection_seconds", "Seconds cutover probe took to collect.")
      .Add({}, FormatDouble(fp.collection.duration_ms / 1000.0));
  return ex.Text();
}

std::string GpuFamily(std::string_view compute_capability) {
  std::optional<std::vector<std::string>> parts = NumericParts(compute_capability);
  if (!parts || parts->size() != 2 || (*parts)[0].size() > 3 || (*parts)[1].size() > 3) {
    return "undefined";
  }
  int major = std::stoi((*parts)[0]);
  int minor = std::stoi((*parts)[1]);
  switch (major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return minor < 5 ? "volta" : "turing";
    case 8:
      return "ampere";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    default:
      return "undefined";
  }
}

std::string RenderGfdLabels(const Fingerprint& fp) {
  std::map<std::string, std::string> labels;
  const std::string p = "nvidia.com/";
  if (fp.driver.version) {
    std::optional<std::vector<std::string>> v = NumericParts(*fp.driver.version);
    if (v && (v->size() == 2 || v->size() == 3)) {
      std::string rev = v->size() == 3 ? (*v)[2] : "";
      labels[p + "cuda.driver.major"] = (*v)[0];
      labels[p + "cuda.driver.minor"] = (*v)[1];
      labels[p + "cuda.driver.rev"] = rev;
      labels[p + "cuda.driver-version.major"] = (*v)[0];
      labels[p + "cuda.driver-version.minor"] = (*v)[1];
      labels[p + "cuda.driver-version.revision"] = rev;
      labels[p + "cuda.driver-version.full"] = *fp.driver.version;
    }
  }
  if (fp.driver.cuda_version) {
    std::optional<std::vector<std::string>> v = NumericParts(*fp.driver.cuda_version);
    if (v && v->size() >= 2) {
      labels[p + "cuda.runtime.major"] = (*v)[0];
      labels[p + "cuda.runtime.minor"] = (*v)[1];
      labels[p + "cuda.runtime-version.major"] = (*v)[0];
      labels[p + "cuda.runtime-version.minor"] = (*v)[1];
      labels[p + "cuda.runtime-version.full"] = (*v)[0] + "." + (*v)[1];
    }
  }
  if (!fp.gpus.empty()) {
    const GpuInfo& g = fp.gpus.front();
    labels[p + "gpu.count"] = std::to_string(fp.gpus.size());
    if (g.name) labels[p + "gpu.product"] = LabelValue(*g.name);
    if (g.memory_mib) labels[p + "gpu.memory"] = std::to_string(*g.memory_mib);
    if (g.compute_capability) {
      std::optional<std::vector<std::string>> cc = NumericParts(*g.compute_capability);
      if (cc && cc->size() == 2) {
        labels[p + "gpu.compute.major"] = (*cc)[0];
        labels[p + "gpu.compute.minor"] = (*cc)[1];
        labels[p + "gpu.family"] = GpuFamily(*g.compute_capability);
      }
    }
    // NVML answers a MIG mode only for GPUs that can do MIG; files do not tell, so the label
    // is given only when NVML was asked about every GPU.
    bool all_nvml = true, capable = false;
    for (const GpuInfo& gpu : fp.gpus) {
      if (gpu.source != "nvml") all_nvml = false;
      if (gpu.mig.enabled) capable = true;
    }
    if (capable || all_nvml) labels[p + "mig.capable"] = capable ? "true" : "false";
  }
  std::string out;
  for (const auto& [key, value] : labels) out += key + "=" + value + "\n";
  return out;
}

}  // namespace cutover::probe
