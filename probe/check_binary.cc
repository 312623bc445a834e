#include "probe/check_binary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/file_util.h"
#include "probe/elf.h"

namespace cutover::probe {
namespace {

constexpr const char* kFatbinSections[] = {".nv_fatbin", "__nv_relfatbin"};

// "9.0" -> {9, 0}; "12.4" -> {12, 4}.
std::optional<std::pair<unsigned, unsigned>> ParseMajorMinor(std::string_view v) {
  unsigned major = 0, minor = 0;
  size_t dot = v.find('.');
  std::string_view a = v.substr(0, dot);
  std::string_view b = dot == std::string_view::npos ? std::string_view("0") : v.substr(dot + 1);
  b = b.substr(0, b.find('.'));
  if (a.empty() || b.empty() || a.size() > 4 || b.size() > 4) return std::nullopt;
  for (char c : a) {
    if (c < '0' || c > '9') return std::nullopt;
    major = major * 10 + static_cast<unsigned>(c - '0');
  }
  for (char c : b) {
    if (c < '0' || c > '9') return std::nullopt;
    minor = minor * 10 + static_cast<unsigned>(c - '0');
  }
  return std::make_pair(major, minor);
}

std::string PtxVersion(const FatbinEntry& e) {
  return std::to_string(e.ptx_major) + "." + std::to_string(e.ptx_minor);
}

const char* VariantName(ArchVariant v) {
  switch (v) {
    case ArchVariant::kArchSpecific:
      return "arch-specific";
    case ArchVariant::kFamily:
      return "family";
    case ArchVariant::kPlain:
      break;
  }
  return "plain";
}

GpuVerdict Judge(const BinaryImage& image, const GpuInfo& gpu,
                 const std::optional<std::pair<unsigned, unsigned>>& driver_cuda) {
  GpuVerdict v;
  v.index = gpu.index;
  v.name = gpu.name.value_or("");
  v.compute_capability = gpu.compute_capability.value_or("");
  auto cc = ParseMajorMinor(v.compute_capability);
  if (!cc) {
    v.verdict = "unknown";
    v.reason = "the fingerprint gives no compute capability for this GPU";
    return v;
  }
  for (const FatbinEntry& e : image.entries) {
    if (e.kind == FatbinKind::kElf && ArchRunsOn(e, cc->first, cc->second)) {
      v.verdict = "runs";
      v.via = "sass " + e.ArchName();
      return v;
    }
  }
  std::vector<std::string> why;
  bool driver_unknown = false;
  for (const FatbinEntry& e : image.entries) {
    if (e.kind != FatbinKind::kPtx || !ArchRunsOn(e, cc->first, cc->second)) continue;
    std::optional<std::string> need = CudaForPtxIsa(e.ptx_major, e.ptx_minor);
    if (!need) {
      why.push_back(e.ArchName() + " is PTX ISA " + PtxVersion(e) + ", newer than any CUDA known");
      continue;
    }
    if (!driver_cuda) {
      driver_unknown = true;
      why.push_back(e.ArchName() + " needs a driver for CUDA " + *need +
                    " to JIT; the target's driver CUDA version is unknown");
      continue;
    }
    auto n = ParseMajorMinor(*need);
    if (*driver_cuda >= *n) {
      v.verdict = "runs";
      v.via = "ptx " + e.ArchName() + " (JIT, PTX ISA " + PtxVersion(e) + ")";
      return v;
    }
    why.push_back(e.ArchName() + " is PTX ISA " + PtxVersion(e) + ", which needs CUDA " + *need +
                  "; the driver supports CUDA " + std::to_string(driver_cuda->first) + "." +
                  std::to_string(driver_cuda->second));
  }
  v.verdict = driver_unknown ? "unknown" : "fails";
  if (why.empty()) {
    std::string archs;
    for (const FatbinEntry& e : image.entries) {
      std::string name = e.ArchName();
      if (archs.find(name) == std::string::npos) archs += (archs.empty() ? "" : ", ") + name;
    }
    why.push_back("no SASS or PTX for compute capability " + v.compute_capability + " (has " +
                  archs + ")");
  }
  for (size_t i = 0; i < why.size(); ++i) v.reason += (i ? "; " : "") + why[i];
  return v;
}

}  // namespace

const std::vector<PtxIsaRelease>& PtxIsaTable() {
  // From the PTX ISA release history: ISA 6.0 came with CUDA 9.0, ..., 9.0 with CUDA 13.0.
  static const std::vector<PtxIsaRelease> kTable = {
      {6, 0, 9, 0},   {6, 1, 9, 1},   {6, 2, 9, 2},   {6, 3, 10, 0},  {6, 4, 10, 1},
      {6, 5, 10, 2},  {7, 0, 11, 0},  {7, 1, 11, 1},  {7, 2, 11, 2},  {7, 3, 11, 3},
      {7, 4, 11, 4},  {7, 5, 11, 5},  {7, 6, 11, 6},  {7, 7, 11, 7},  {7, 8, 11, 8},
      {8, 0, 12, 0},  {8, 1, 12, 1},  {8, 2, 12, 2},  {8, 3, 12, 3},  {8, 4, 12, 4},
      {8, 5, 12, 5},  {8, 6, 12, 7},  {8, 7, 12, 8},  {8, 8, 12, 9},  {9, 0, 13, 0},
      {9, 1, 13, 1},
  };
  return kTable;
}

std::optional<std::string> CudaForPtxIsa(unsigned major, unsigned minor) {
  for (const PtxIsaRelease& r : PtxIsaTable()) {
    if (r.ptx_major == major && r.ptx_minor == minor) {
      return std::to_string(r.cuda_major) + "." + std::to_string(r.cuda_minor);
    }
  }
  return std::nullopt;
}

Result<BinaryImage> ReadBinaryImage(const std::string& path, std::string_view bytes) {
  Result<ElfFile> elf = ParseElf(bytes);
  if (!elf.ok()) return Status::InvalidArgument(path + ": " + elf.status().message());
  BinaryImage image;
  image.path = path;
  for (const char* name : kFatbinSections) {
    const ElfSection* s = elf->Find(name);
    if (s == nullptr) continue;
    image.sections.push_back(name);
    Result<std::vector<FatbinEntry>> entries = ParseFatbin(SectionBytes(bytes, *s));
    if (!entries.ok()) {
      return Status::InvalidArgument(path + ": " + name + ": " + entries.status().message());
    }
    image.entries.insert(image.entries.end(), entries->begin(), entries->end());
  }
  return image;
}

Result<BinaryImage> ReadBinaryFile(const std::string& path) {
  Result<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return Status::InvalidArgument(path + ": " + bytes.status().message());
  return ReadBinaryImage(path, *bytes);
}

bool ArchRunsOn(const FatbinEntry& e, unsigned cc_major, unsigned cc_minor) {
  unsigned major = e.arch / 10, minor = e.arch % 10;
  switch (e.variant) {
    case ArchVariant::kArchSpecific:
      return major == cc_major && minor == cc_minor;
    case ArchVariant::kFamily:
      return major == cc_major && minor <= cc_minor;
    case ArchVariant::kPlain:
      break;
  }
  if (e.kind == FatbinKind::kPtx) return major < cc_major || (major == cc_major && minor <= cc_minor);
  return major == cc_major && minor <= cc_minor;
}

GpuVerdict JudgeImage(const BinaryImage& image, const GpuInfo& gpu,
                      const std::optional<std::string>& driver_cuda_version) {
  std::optional<std::pair<unsigned, unsigned>> driver_cuda;
  if (driver_cuda_version) driver_cuda = ParseMajorMinor(*driver_cuda_version);
  return Judge(image, gpu, driver_cuda);
}

std::optional<FatbinEntry> EntryFromArchName(std::string_view name,
                                             const std::optional<std::string>& ptx_isa) {
  FatbinEntry e;
  if (name.rfind("sm_", 0) == 0) {
    e.kind = FatbinKind::kElf;
    name.remove_prefix(3);
  } else if (name.rfind("compute_", 0) == 0) {
    e.kind = FatbinKind::kPtx;
    name.remove_prefix(8);
  } else {
    return std::nullopt;
  }
  if (!name.empty() && (name.back() == 'a' || name.back() == 'f')) {
    e.variant = name.back() == 'a' ? ArchVariant::kArchSpecific : ArchVariant::kFamily;
    name.remove_suffix(1);
  }
  if (name.empty() || name.size() > 4) return std::nullopt;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    e.arch = e.arch * 10 + static_cast<unsigned>(c - '0');
  }
  if (e.arch == 0) return std::nullopt;
  if (e.kind == FatbinKind::kPtx) {
    auto isa = ptx_isa ? ParseMajorMinor(*ptx_isa) : std::nullopt;
    e.ptx_major = isa ? isa->first : PtxIsaTable().front().ptx_major;
    e.ptx_minor = isa ? isa->second : PtxIsaTable().front().ptx_minor;
  }
  return e;
}

bool CheckBinaryReport::AnyFailure() const {
  for (const FileVerdict& f : files) {
    for (const GpuVerdict& g : f.gpus) {
      if (g.verdict != "runs") return true;
    }
  }
  return false;
}

CheckBinaryReport CheckBinaries(std::vector<BinaryImage> images, const Fingerprint& target) {
  CheckBinaryReport report;
  report.driver_cuda_version = target.driver.cuda_version;
  std::optional<std::pair<unsigned, unsigned>> driver_cuda;
  if (target.driver.cuda_version) driver_cuda = ParseMajorMinor(*target.driver.cuda_version);
  for (BinaryImage& image : images) {
    FileVerdict f;
    if (image.HasGpuCode()) {
      for (const GpuInfo& gpu : target.gpus) f.gpus.push_back(Judge(image, gpu, driver_cuda));
    }
    f.image = std::move(image);
    report.files.push_back(std::move(f));
  }
  return report;
}

nlohmann::json CheckBinaryToJson(const CheckBinaryReport& report) {
  nlohmann::json doc;
  doc["schema"] = kCheckBinarySchema;
  doc["target"]["driver_cuda_version"] = report.driver_cuda_version
                                             ? nlohmann::json(*report.driver_cuda_version)
                                             : nlohmann::json(nullptr);
  nlohmann::json files = nlohmann::json::array();
  for (const FileVerdict& f : report.files) {
    nlohmann::json file;
    file["path"] = f.image.path;
    file["status"] = f.image.HasGpuCode() ? "gpu_code" : "no_gpu_code";
    file["sections"] = f.image.sections;
    std::vector<std::string> sass;
    nlohmann::json ptx = nlohmann::json::array();
    nlohmann::json entries = nlohmann::json::array();
    for (const FatbinEntry& e : f.image.entries) {
      nlohmann::json j;
      j["kind"] = e.kind == FatbinKind::kPtx ? "ptx" : "sass";
      j["arch"] = e.ArchName();
      j["variant"] = VariantName(e.variant);
      j["compressed"] = e.compressed;
      j["size"] = e.payload_size;
      if (e.kind == FatbinKind::kPtx) {
        j["ptx_version"] = PtxVersion(e);
        std::optional<std::string> need = CudaForPtxIsa(e.ptx_major, e.ptx_minor);
        j["min_cuda"] = need ? nlohmann::json(*need) : nlohmann::json(nullptr);
        nlohmann::json p = {{"arch", e.ArchName()}, {"ptx_version", PtxVersion(e)},
                            {"min_cuda", j["min_cuda"]}};
        if (std::find(ptx.begin(), ptx.end(), p) == ptx.end()) ptx.push_back(p);
      } else if (std::find(sass.begin(), sass.end(), e.ArchName()) == sass.end()) {
        sass.push_back(e.ArchName());
      }
      entries.push_back(std::move(j));
    }
    file["sass"] = sass;
    file["ptx"] = ptx;
    file["entries"] = entries;
    nlohmann::json gpus = nlohmann::json::array();
    for (const GpuVerdict& g : f.gpus) {
      nlohmann::json j = {{"index", g.index}, {"name", g.name},
                          {"compute_capability", g.compute_capability}, {"verdict", g.verdict}};
      if (!g.via.empty()) j["via"] = g.via;
      if (!g.reason.empty()) j["reason"] = g.reason;
      gpus.push_back(std::move(j));
    }
    file["gpus"] = gpus;
    files.push_back(std::move(file));
  }
  doc["files"] = files;
  doc["ok"] = !report.AnyFailure();
  return doc;
}

std::string RenderCheckBinaryTable(const CheckBinaryReport& report) {
  std::ostringstream out;
  out << "target driver CUDA: " << report.driver_cuda_version.value_or("unknown") << "\n";
  for (const FileVerdict& f : report.files) {
    out << "\n" << f.image.path << "\n";
    if (!f.image.HasGpuCode()) {
      out << "  no GPU code (no .nv_fatbin or __nv_relfatbin section)\n";
      continue;
    }
    std::string sass, ptx;
    for (const FatbinEntry& e : f.image.entries) {
      if (e.kind == FatbinKind::kElf) {
        if (sass.find(e.ArchName()) == std::string::npos) sass += " " + e.ArchName();
      } else {
        std::string p = " " + e.ArchName() + " (PTX ISA " + PtxVersion(e) + ")";
        if (ptx.find(p) == std::string::npos) ptx += p;
      }
    }
    out << "  SASS:" << (sass.empty() ? " none" : sass) << "\n";
    out << "  PTX: " << (ptx.empty() ? " none" : ptx) << "\n";
    if (f.gpus.empty()) out << "  (the target has no GPUs)\n";
    for (const GpuVerdict& g : f.gpus) {
      char head[160];
      std::snprintf(head, sizeof head, "  GPU %-2d %-28.28s cc %-5s %-8s", g.index, g.name.c_str(),
                    g.compute_capability.empty() ? "?" : g.compute_capability.c_str(),
                    g.verdict.c_str());
      out << head << (g.verdict == "runs" ? g.via : g.reason) << "\n";
    }
  }
  return out.str();
}

}  // namespace cutover::probe
