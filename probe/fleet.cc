#include "probe/fleet.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "core/file_util.h"
#include "core/json.h"

namespace cutover::probe {
namespace {

constexpr char kNone[] = "-";

// Distinct values joined with ", " in sorted order, or "-".
std::string Distinct(const std::set<std::string>& values) {
  if (values.empty()) return kNone;
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

}  // namespace

const std::vector<std::string>& FleetFields() {
  static const std::vector<std::string> kFields = {
      "os",    "kernel", "driver",       "driver_cuda", "cuda_toolkit", "cudart",     "cublas",
      "cudnn", "nccl",   "nccl_plugins", "gpus",        "vbios",        "ib_firmware"};
  return kFields;
}

namespace {

// Collects the stack fields while nlohmann's SAX parser walks the document: no DOM is built, so a
// 20 KB fingerprint costs a scan and a few dozen small strings. `path` is the JSON path of the
// value at hand, with "[]" for any array element ("/libraries/[]/name").
class StackSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  struct Lib {
    std::string name, version, sha256;
  };
  std::map<std::string, std::string> scalars;  // "/os/id" -> value
  std::set<std::string> toolkits, vbios, ib_firmware, plugins;
  std::map<std::string, std::set<std::string>> libs;
  std::map<std::string, int> gpu_names;
  bool too_deep = false;

  bool null() override { return Value(kNone); }
  bool boolean(bool v) override { return Value(v ? "true" : "false"); }
  bool number_integer(number_integer_t v) override { return Value(std::to_string(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Value(std::to_string(v)); }
  bool number_float(number_float_t, const string_t& text) override { return Value(text); }
  bool string(string_t& v) override { return Value(v); }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (!Push()) return false;
    if (path_ == "/libraries/[]") lib_ = Lib{};
    if (path_ == "/gpus/[]") gpu_name_ = kNone;
    return true;
  }
  bool key(string_t& k) override {
    path_.resize(frames_.back().base);
    path_ += '/';
    path_ += k;
    // A repeated key replaces the value before it, as in the DOM: forget what the earlier one
    // left (a "schema" string followed by a "schema" object is no schema at all).
    scalars.erase(path_);
    scalars.erase(scalars.lower_bound(path_ + "/"), scalars.lower_bound(path_ + "0"));
    return true;
  }
  bool end_object() override {
    Pop();
    if (path_ == "/libraries/[]") FlushLib();
    if (path_ == "/gpus/[]") ++gpu_names[gpu_name_];
    return true;
  }
  bool start_array(std::size_t) override {
    if (!Push()) return false;
    path_ += "/[]";
    return true;
  }
  bool end_array() override {
    Pop();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    size_t base;  // path_ length of the container itself
  };

  bool Push() {
    if (frames_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      too_deep = true;
      return false;
    }
    frames_.push_back({path_.size()});
    return true;
  }
  void Pop() {
    if (frames_.empty()) return;
    path_.resize(frames_.back().base);
    frames_.pop_back();
  }
  bool Value(std::string_view v) {
    if (frames_.size() <= 2) {  // top-level and one level down: hostname, os.*, driver.*
      scalars[path_] = std::string(v);
    } else if (path_ == "/libraries/[]/name") {
      lib_.name = v;
    } else if (path_ == "/libraries/[]/version") {
      lib_.version = v;
    } else if (path_ == "/libraries/[]/sha256") {
      lib_.sha256 = v;
    } else if (path_ == "/gpus/[]/name") {
      gpu_name_ = v;
    } else if (path_ == "/gpus/[]/vbios") {
      if (v != kNone) vbios.emplace(v);
    } else if (path_ == "/cuda/toolkits/[]/version") {
      if (v != kNone) toolkits.emplace(v);
    } else if (path_ == "/network/infiniband/[]/firmware") {
      if (v != kNone) ib_firmware.emplace(v);
    }
    return true;
  }
  void FlushLib() {
    if (lib_.name.rfind("nccl-net", 0) == 0) {
      std::string p = lib_.name + " " + (lib_.version.empty() ? kNone : lib_.version);
      if (!lib_.sha256.empty() && lib_.sha256 != kNone) p += " sha256:" + lib_.sha256.substr(0, 12);
      plugins.insert(p);
    } else if (!lib_.name.empty()) {
      libs[lib_.name].insert(lib_.version.empty() ? kNone : lib_.version);
    }
  }

  std::vector<Frame> frames_;
  std::string path_;
  Lib lib_;
  std::string gpu_name_;
};

}  // namespace

Result<FleetHost> ReadFleetHost(std::string_view text, const std::string& file) {
  StackSax sax;
  bool parsed = nlohmann::json::sax_parse(text.begin(), text.end(), &sax,
                                          nlohmann::json::input_format_t::json, true);
  if (!parsed) {
    if (sax.too_deep) {
      return Status::InvalidArgument(file + ": nested deeper than " +
                                     std::to_string(kMaxJsonDepth) + " levels");
    }
    // The DOM parser words the error with its line and column.
    Result<nlohmann::json> doc = ParseJson(text, file);
    return doc.ok() ? Status::InvalidArgument(file + ": not valid JSON") : doc.status();
  }
  auto scalar = [&](const char* path) {
    auto it = sax.scalars.find(path);
    return it == sax.scalars.end() ? std::string(kNone) : it->second;
  };
  // The same checks and words as every other reader of a fingerprint.
  nlohmann::json head = nlohmann::json::object();
  if (auto it = sax.scalars.find("/schema"); it != sax.scalars.end()) head["schema"] = it->second;
  CUTOVER_RETURN_IF_ERROR(CheckSchema(head, "cutover.fingerprint", 1, file));
  FleetHost h;
  h.file = file;
  h.hostname = scalar("/hostname");
  if (h.hostname == kNone) h.hostname = file;
  std::string driver = scalar("/driver/version");
  if (driver == kNone) driver = "(" + scalar("/driver/status") + ")";
  std::string gpus;
  for (const auto& [name, n] : sax.gpu_names) {
    gpus += (gpus.empty() ? "" : ", ") + std::to_string(n) + "x " + name;
  }
  if (gpus.empty()) gpus = "none";
  auto lib = [&](const char* name) {
    auto it = sax.libs.find(name);
    return it == sax.libs.end() ? std::string(kNone) : Distinct(it->second);
  };
  h.stack = {scalar("/os/id") + " " + scalar("/os/version_id"),
             scalar("/os/kernel"),
             driver,
             scalar("/driver/cuda_version"),
             Distinct(sax.toolkits),
             lib("cudart"),
             lib("cublas"),
             lib("cudnn"),
             lib("nccl"),
             Distinct(sax.plugins),
             gpus,
             Distinct(sax.vbios),
             Distinct(sax.ib_firmware)};
  return h;
}

Result<std::vector<std::string>> FleetFiles(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return Status::InvalidArgument(p + ": no such file or directory");
    if (!fs::is_directory(st)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
      if (it->is_regular_file(ec) && it->path().extension() == ".json") {
        found.push_back(it->path().string());
      }
    }
    if (ec) return Status::InvalidArgument(p + ": cannot list: " + ec.message());
    std::sort(found.begin(), found.end());
    if (found.empty()) return Status::InvalidArgument(p + ": no *.json files in it");
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty()) return Status::InvalidArgument("no fingerprint files given");
  return out;
}

FleetReport AnalyzeFleet(const std::vector<std::string>& files, int threads) {
  std::vector<Result<FleetHost>> read(files.size(), Status::Internal("not read"));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < files.size(); i = next.fetch_add(1)) {
      Result<std::string> text = ReadFile(files[i]);
      read[i] = text.ok() ? ReadFleetHost(*text, files[i]) : Result<FleetHost>(text.status());
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  std::vector<FleetHost> hosts;
  std::vector<FleetUnreadable> unreadable;
  for (size_t i = 0; i < files.size(); ++i) {
    if (read[i].ok()) {
      hosts.push_back(std::move(read[i]).value());
    } else {
      unreadable.push_back({files[i], read[i].status().message()});
    }
  }
  FleetReport report = GroupFleet(std::move(hosts));
  report.unreadable = std::move(unreadable);
  return report;
}

FleetReport GroupFleet(std::vector<FleetHost> hosts) {
  FleetReport report;
  std::map<std::vector<std::string>, size_t> group_of;  // stack -> group index
  for (FleetHost& h : hosts) {
    size_t host = report.hosts.size();
    report.hosts.push_back(std::move(h));
    auto [it, fresh] = group_of.emplace(report.hosts[host].stack, report.groups.size());
    if (fresh) report.groups.emplace_back();
    report.groups[it->second].hosts.push_back(host);
  }
  std::stable_sort(
      report.groups.begin(), report.groups.end(),
      [](const FleetGroup& a, const FleetGroup& b) { return a.hosts.size() > b.hosts.size(); });
  if (!report.groups.empty()) {
    const auto& majority = report.hosts[report.groups[0].hosts[0]].stack;
    for (size_t g = 1; g < report.groups.size(); ++g) {
      const auto& stack = report.hosts[report.groups[g].hosts[0]].stack;
      for (size_t f = 0; f < stack.size(); ++f) {
        if (stack[f] != majority[f]) report.groups[g].differs.push_back(f);
      }
    }
  }
  return report;
}

nlohmann::json FleetToJson(const FleetReport& r) {
  const auto& fields = FleetFields();
  nlohmann::json groups = nlohmann::json::array();
  for (size_t g = 0; g < r.groups.size(); ++g) {
    const FleetGroup& group = r.groups[g];
    const auto& stack = r.hosts[group.hosts[0]].stack;
    nlohmann::json s = nlohmann::json::object();
    for (size_t f = 0; f < fields.size(); ++f) s[fields[f]] = stack[f];
    nlohmann::json hosts = nlohmann::json::array();
    for (size_t h : group.hosts)
      hosts.push_back({{"hostname", r.hosts[h].hostname}, {"file", r.hosts[h].file}});
    nlohmann::json differs = nlohmann::json::object();
    for (size_t f : group.differs) {
      differs[fields[f]] = {{"value", stack[f]},
                            {"majority", r.hosts[r.groups[0].hosts[0]].stack[f]}};
    }
    groups.push_back({{"majority", g == 0},
                      {"count", group.hosts.size()},
                      {"stack", s},
                      {"differs", differs},
                      {"hosts", hosts}});
  }
  nlohmann::json unreadable = nlohmann::json::array();
  for (const auto& u : r.unreadable) unreadable.push_back({{"file", u.file}, {"error", u.error}});
  return {{"schema", "cutover.fleet/1"},  {"hosts", r.hosts.size()}, {"stacks", r.groups.size()},
          {"consistent", r.consistent()}, {"groups", groups},        {"unreadable", unreadable}};
}

std::string RenderFleetTable(const FleetReport& r, size_t max_hosts) {
  const auto& fields = FleetFields();
  std::string out = "fleet: " + std::to_string(r.hosts.size()) + " hosts, " +
                    std::to_string(r.groups.size()) + " stack" + (r.groups.size() == 1 ? "" : "s") +
                    ": " + (r.consistent() ? "consistent" : "NOT consistent") + "\n";
  for (size_t g = 0; g < r.groups.size(); ++g) {
    const FleetGroup& group = r.groups[g];
    const auto& stack = r.hosts[group.hosts[0]].stack;
    out += "\nstack " + std::to_string(g + 1) + ": " + std::to_string(group.hosts.size()) +
           " hosts" + (g == 0 ? " (majority)" : "") + "\n";
    if (g == 0) {
      for (size_t f = 0; f < fields.size(); ++f) out += "  " + fields[f] + "\t" + stack[f] + "\n";
    } else {
      const auto& majority = r.hosts[r.groups[0].hosts[0]].stack;
      for (size_t f : group.differs) {
        out += "  " + fields[f] + "\t" + stack[f] + "\t(majority: " + majority[f] + ")\n";
      }
    }
    out += "  hosts\t";
    for (size_t i = 0; i < group.hosts.size() && i < max_hosts; ++i) {
      out += (i ? ", " : "") + r.hosts[group.hosts[i]].hostname;
    }
    if (group.hosts.size() > max_hosts) {
      out += " and " + std::to_string(group.hosts.size() - max_hosts) + " more";
    }
    out += "\n";
  }
  for (const auto& u : r.unreadable) out += "unreadable: " + u.error + "\n";
  return out;
}

nlohmann::json JudgeClusterNodes(const nlohmann::json& nodes) {
  std::vector<FleetHost> hosts;
  std::vector<FleetUnreadable> unreadable;
  for (const nlohmann::json& node : nodes) {
    const std::string name = node.value("name", std::string("?"));
    if (!node.contains("fingerprint")) {
      unreadable.push_back({name, "no fingerprint"});
      continue;
    }
    Result<FleetHost> h = ReadFleetHost(node["fingerprint"].dump(), name);
    if (h.ok()) {
      hosts.push_back(std::move(h).value());
    } else {
      unreadable.push_back({name, h.status().message()});
    }
  }
  FleetReport report = GroupFleet(std::move(hosts));
  report.unreadable = std::move(unreadable);
  return FleetToJson(report);
}

}  // namespace cutover::probe
