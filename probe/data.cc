#include "probe/data.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

std::string_view StripNvidia(std::string_view s) {
  constexpr std::string_view kPrefix = "nvidia ";
  if (s.substr(0, kPrefix.size()) == kPrefix) s.remove_prefix(kPrefix.size());
  return s;
}

struct Branch {
  int branch;
  std::string cuda;
};

std::vector<Branch> LoadBranches() {
  std::vector<Branch> out;
  auto doc = nlohmann::json::parse(EmbeddedData("cuda_drivers.json"), nullptr, false);
  if (doc.is_discarded() || !doc.contains("branches") || !doc["branches"].is_array()) return out;
  for (const auto& b : doc["branches"]) {
    if (!b.is_object() || !b.contains("branch") || !b["branch"].is_number_integer() ||
        !b.contains("cuda") || !b["cuda"].is_string()) {
      continue;
    }
    out.push_back({b["branch"].get<int>(), b["cuda"].get<std::string>()});
  }
  std::sort(out.begin(), out.end(),
            [](const Branch& a, const Branch& b) { return a.branch < b.branch; });
  return out;
}

}  // namespace

Result<GpuTable> ParseGpuTable(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("GPU table: not a JSON object");
  }
  if (doc.value("schema", "") != "cutover.gpu-table/1") {
    return Status::InvalidArgument("GPU table: schema is not \"cutover.gpu-table/1\"");
  }
  GpuTable table;
  if (doc.contains("version") && doc["version"].is_number_integer()) {
    table.version = doc["version"].get<int>();
  }
  if (!doc.contains("gpus") || !doc["gpus"].is_array()) {
    return Status::InvalidArgument("GPU table: no \"gpus\" array");
  }
  size_t i = 0;
  for (const auto& row : doc["gpus"]) {
    std::string where = "GPU table: gpus[" + std::to_string(i++) + "]";
    if (!row.is_object()) return Status::InvalidArgument(where + ": expected an object");
    GpuModel m;
    auto id = ParseHex(row.value("device_id", ""));
    if (!id) return Status::InvalidArgument(where + ": bad device_id");
    m.device_id = *id;
    m.name = row.value("name", "");
    m.pci_name = row.value("pci_name", "");
    m.generation = row.value("generation", "");
    m.compute_capability = row.value("compute_capability", "");
    if (row.contains("memory_mib") && row["memory_mib"].is_number_unsigned()) {
      m.memory_mib = row["memory_mib"].get<uint64_t>();
    }
    if (m.name.empty() || m.compute_capability.empty()) {
      return Status::InvalidArgument(where + ": name and compute_capability are required");
    }
    table.models.push_back(std::move(m));
  }
  return table;
}

const GpuTable& BuiltinGpuTable() {
  static const GpuTable* table = [] {
    Result<GpuTable> t = ParseGpuTable(EmbeddedData("gpus.json"));
    return new GpuTable(t.ok() ? std::move(t).value() : GpuTable{});
  }();
  return *table;
}

const GpuModel* FindGpuModel(const GpuTable& table, std::optional<unsigned> device_id,
                             std::string_view model_name) {
  if (device_id) {
    for (const GpuModel& m : table.models) {
      if (m.device_id == *device_id) return &m;
    }
  }
  std::string want = AsciiLower(TrimField(model_name));
  if (want.empty()) return nullptr;
  for (const GpuModel& m : table.models) {
    std::string have = AsciiLower(m.name);
    if (have == want || StripNvidia(have) == StripNvidia(want)) return &m;
  }
  return nullptr;
}

std::optional<std::string> CudaForDriver(std::string_view driver_version) {
  static const std::vector<Branch>* branches = new std::vector<Branch>(LoadBranches());
  if (!IsDottedVersion(driver_version)) return std::nullopt;
  int major = std::atoi(VersionPrefix(driver_version, 1).c_str());
  const Branch* best = nullptr;
  for (const Branch& b : *branches) {
    if (b.branch <= major) best = &b;
  }
  if (best == nullptr) return std::nullopt;
  return best->cuda;
}

}  // namespace cutover::probe
