#include "core/fingerprint.h"

#include <string_view>
#include <type_traits>

namespace cutover {
namespace {

using nlohmann::json;

template <typename T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reads fields of one JSON object, remembering the first type error with its field path.
class Reader {
 public:
  Reader(const json& obj, std::string path, Status* error)
      : obj_(obj), path_(std::move(path)), error_(error) {}

  bool ok() const { return error_->ok(); }
  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  void Fail(std::string_view key, std::string_view want) {
    if (error_->ok()) {
      *error_ = Status::InvalidArgument("fingerprint field " + Path(key) + ": expected " +
                                        std::string(want));
    }
  }
  // The member `key` when present and not null.
  const json* Find(std::string_view key) {
    if (!obj_.is_object()) return nullptr;
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  template <typename T>
  void Get(std::string_view key, std::optional<T>* out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    T value;
    if (Convert(key, *v, &value)) *out = value;
  }
  template <typename T>
  void Get(std::string_view key, T* out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    Convert(key, *v, out);
  }
  void GetStrings(std::string_view key, std::vector<std::string>* out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail(key, "an array of strings");
    for (const json& e : *v) {
      if (!e.is_string()) return Fail(key, "an array of strings");
      out->push_back(e.get<std::string>());
    }
  }
  // Calls fn(Reader&) on the object `key`.
  template <typename Fn>
  void Object(std::string_view key, Fn fn) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_object()) return Fail(key, "an object");
    Reader sub(*v, Path(key), error_);
    fn(sub);
  }
  // Calls fn(Reader&, index) on each element (an object) of the array `key`.
  template <typename Fn>
  void Array(std::string_view key, Fn fn) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail(key, "an array");
    for (size_t i = 0; i < v->size() && ok(); ++i) {
      std::string p = Path(key) + "[" + std::to_string(i) + "]";
      if (!(*v)[i].is_object()) {
        *error_ = Status::InvalidArgument("fingerprint field " + p + ": expected an object");
        return;
      }
      Reader sub((*v)[i], p, error_);
      fn(sub, i);
    }
  }

 private:
  bool Convert(std::string_view key, const json& v, std::string* out) {
    if (!v.is_string()) return Fail(key, "a string"), false;
    *out = v.get<std::string>();
    return true;
  }
  bool Convert(std::string_view key, const json& v, bool* out) {
    if (!v.is_boolean()) return Fail(key, "a boolean"), false;
    *out = v.get<bool>();
    return true;
  }
  bool Convert(std::string_view key, const json& v, double* out) {
    if (!v.is_number()) return Fail(key, "a number"), false;
    *out = v.get<double>();
    return true;
  }
  bool Convert(std::string_view key, const json& v, int* out) {
    if (!v.is_number_integer()) return Fail(key, "an integer"), false;
    *out = v.get<int>();
    return true;
  }
  bool Convert(std::string_view key, const json& v, uint64_t* out) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      return Fail(key, "a non-negative integer"), false;
    }
    *out = v.get<uint64_t>();
    return true;
  }

  const json& obj_;
  std::string path_;
  Status* error_;
};

json FindingsJson(const std::vector<Finding>& findings) {
  json a = json::array();
  for (const Finding& f : findings) {
    a.push_back({{"severity", f.severity}, {"code", f.code}, {"message", f.message}});
  }
  return a;
}

json GpuJson(const GpuInfo& g) {
  json nvlink = json::array();
  for (bool b : g.nvlink_active) nvlink.push_back(b);
  json xids = json::array();
  for (const GpuXidEvent& x : g.xid_events) xids.push_back({{"xid", x.xid}, {"text", x.text}});
  return {
      {"index", g.index},
      {"name", Opt(g.name)},
      {"uuid", Opt(g.uuid)},
      {"pci_bus_id", Opt(g.pci_bus_id)},
      {"pci_device_id", Opt(g.pci_device_id)},
      {"compute_capability", Opt(g.compute_capability)},
      {"memory_mib", Opt(g.memory_mib)},
      {"generation", Opt(g.generation)},
      {"vbios", Opt(g.vbios)},
      {"source", g.source},
      {"ecc",
       {{"enabled", Opt(g.ecc.enabled)},
        {"volatile_uncorrected", Opt(g.ecc.volatile_uncorrected)},
        {"aggregate_uncorrected", Opt(g.ecc.aggregate_uncorrected)}}},
      {"remapped_rows",
       {{"pending", Opt(g.remapped_rows.pending)}, {"failure", Opt(g.remapped_rows.failure)}}},
      {"mig", {{"enabled", Opt(g.mig.enabled)}, {"instances", Opt(g.mig.instances)}}},
      {"pcie",
       {{"gen_current", Opt(g.pcie.gen_current)},
        {"gen_max", Opt(g.pcie.gen_max)},
        {"width_current", Opt(g.pcie.width_current)},
        {"width_max", Opt(g.pcie.width_max)}}},
      {"power_limit_w", Opt(g.power_limit_w)},
      {"throttle_reasons", g.throttle_reasons},
      {"persistence_mode", Opt(g.persistence_mode)},
      {"nvlink_active", nvlink},
      {"retired_pages",
       {{"single_bit", Opt(g.retired_pages.single_bit)},
        {"double_bit", Opt(g.retired_pages.double_bit)},
        {"pending", Opt(g.retired_pages.pending)}}},
      {"xid_events", xids},
  };
}

}  // namespace

json FingerprintToJson(const Fingerprint& fp) {
  json doc;
  doc["schema"] = kFingerprintSchema;
  doc["hostname"] = Opt(fp.hostname);
  const OsInfo& os = fp.os;
  doc["os"] = {
      {"id", Opt(os.id)},
      {"version_id", Opt(os.version_id)},
      {"pretty_name", Opt(os.pretty_name)},
      {"kernel", Opt(os.kernel)},
      {"glibc", Opt(os.glibc)},
      {"arch", Opt(os.arch)},
      {"container",
       {{"detected", os.container.detected},
        {"runtime", Opt(os.container.runtime)},
        {"hints", os.container.hints}}},
  };
  doc["cpu"] = {{"model", Opt(fp.cpu.model)},
                {"cores", Opt(fp.cpu.cores)},
                {"numa_nodes", Opt(fp.cpu.numa_nodes)}};
  doc["memory_mib"] = Opt(fp.memory_mib);
  const DriverInfo& d = fp.driver;
  doc["driver"] = {
      {"status", d.status},
      {"version", Opt(d.version)},
      {"cuda_version", Opt(d.cuda_version)},
      {"source", Opt(d.source)},
      {"error", Opt(d.error)},
      {"kernel_module_version", Opt(d.kernel_module_version)},
      {"kernel_module_flavor", Opt(d.kernel_module_flavor)},
      {"userspace_version", Opt(d.userspace_version)},
      {"fabric_manager_version", Opt(d.fabric_manager_version)},
      {"container_toolkit", d.container_toolkit},
      {"cdi", d.cdi},
      {"sharing",
       {{"virtualization_mode", Opt(d.sharing.virtualization_mode)}, {"hints", d.sharing.hints}}},
  };
  json gpus = json::array();
  for (const GpuInfo& g : fp.gpus) gpus.push_back(GpuJson(g));
  doc["gpus"] = gpus;
  json toolkits = json::array();
  for (const ToolkitInfo& t : fp.cuda_toolkits) {
    toolkits.push_back({{"version", t.version}, {"path", t.path}, {"source", t.source}});
  }
  doc["cuda"] = {{"toolkits", toolkits}};
  json libs = json::array();
  for (const LibraryInfo& l : fp.libraries) {
    libs.push_back({{"name", l.name},
                    {"version", Opt(l.version)},
                    {"path", l.path},
                    {"real_path", Opt(l.real_path)},
                    {"version_source", Opt(l.version_source)},
                    {"origin", l.origin},
                    {"glibc_needed", Opt(l.glibc_needed)},
                    {"sha256", Opt(l.sha256)},
                    {"loaded_version", Opt(l.loaded_version)},
                    {"cuda_archs", l.cuda_archs ? json(*l.cuda_archs) : json(nullptr)},
                    {"ptx_isa", Opt(l.ptx_isa)}});
  }
  doc["libraries"] = libs;
  json fws = json::array();
  for (const FrameworkInfo& f : fp.frameworks) {
    fws.push_back({{"name", f.name},
                   {"version", Opt(f.version)},
                   {"cuda", Opt(f.cuda)},
                   {"cudnn", Opt(f.cudnn)},
                   {"path", f.path},
                   {"requires_dist", f.requires_dist},
                   {"source", f.source},
                   {"git_version", Opt(f.git_version)}});
  }
  doc["frameworks"] = fws;
  doc["env"] = json::object();
  for (const auto& [k, v] : fp.env) doc["env"][k] = v;
  json ib = json::array();
  for (const InfinibandDevice& dev : fp.network.infiniband) {
    json ports = json::array();
    for (const InfinibandPort& p : dev.ports) {
      ports.push_back({{"port", p.port},
                       {"state", Opt(p.state)},
                       {"rate", Opt(p.rate)},
                       {"link_layer", Opt(p.link_layer)}});
    }
    ib.push_back({{"device", dev.device},
                  {"firmware", Opt(dev.firmware)},
                  {"board_id", Opt(dev.board_id)},
                  {"ports", ports}});
  }
  doc["network"] = {{"infiniband", ib},
                    {"nvidia_peermem", fp.network.nvidia_peermem},
                    {"gpudirect_modules", fp.network.gpudirect_modules}};
  const CollectionInfo& c = fp.collection;
  doc["collection"] = {{"findings", FindingsJson(c.findings)},
                       {"duration_ms", c.duration_ms},
                       {"root", c.root},
                       {"live", c.live},
                       {"collected_at", Opt(c.collected_at)},
                       {"cutover_version", Opt(c.cutover_version)},
                       {"kernel_log", Opt(c.kernel_log)}};
  if (c.deep) {
    doc["collection"]["deep"] = {{"hash_cache", Opt(c.deep->hash_cache)},
                                 {"hashes_from_cache", c.deep->hashes_from_cache},
                                 {"hashes_computed", c.deep->hashes_computed},
                                 {"bytes_hashed", c.deep->bytes_hashed},
                                 {"loaded", c.deep->loaded}};
  } else {
    doc["collection"]["deep"] = nullptr;
  }
  return doc;
}

Result<Fingerprint> FingerprintFromJson(const json& doc) {
  if (!doc.is_object()) return Status::InvalidArgument("fingerprint: expected a JSON object");
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string()) {
    return Status::InvalidArgument("fingerprint: no \"schema\" field (expected \"" +
                                   std::string(kFingerprintSchema) + "\")");
  }
  const std::string s = schema->get<std::string>();
  if (s != kFingerprintSchema) {
    constexpr std::string_view kPrefix = "cutover.fingerprint/";
    if (s.rfind(kPrefix, 0) == 0) {
      return Status::InvalidArgument("fingerprint schema \"" + s +
                                     "\" is not one this cutover reads (it reads \"" +
                                     kFingerprintSchema + "\"; a newer cutover may)");
    }
    return Status::InvalidArgument("not a fingerprint: schema is \"" + s + "\"");
  }
  Fingerprint fp;
  Status error;
  Reader r(doc, "", &error);
  r.Get("hostname", &fp.hostname);
  r.Object("os", [&](Reader& o) {
    o.Get("id", &fp.os.id);
    o.Get("version_id", &fp.os.version_id);
    o.Get("pretty_name", &fp.os.pretty_name);
    o.Get("kernel", &fp.os.kernel);
    o.Get("glibc", &fp.os.glibc);
    o.Get("arch", &fp.os.arch);
    o.Object("container", [&](Reader& c) {
      c.Get("detected", &fp.os.container.detected);
      c.Get("runtime", &fp.os.container.runtime);
      c.GetStrings("hints", &fp.os.container.hints);
    });
  });
  r.Object("cpu", [&](Reader& c) {
    c.Get("model", &fp.cpu.model);
    c.Get("cores", &fp.cpu.cores);
    c.Get("numa_nodes", &fp.cpu.numa_nodes);
  });
  r.Get("memory_mib", &fp.memory_mib);
  r.Object("driver", [&](Reader& d) {
    DriverInfo& v = fp.driver;
    d.Get("status", &v.status);
    d.Get("version", &v.version);
    d.Get("cuda_version", &v.cuda_version);
    d.Get("source", &v.source);
    d.Get("error", &v.error);
    d.Get("kernel_module_version", &v.kernel_module_version);
    d.Get("kernel_module_flavor", &v.kernel_module_flavor);
    d.Get("userspace_version", &v.userspace_version);
    d.Get("fabric_manager_version", &v.fabric_manager_version);
    d.Get("container_toolkit", &v.container_toolkit);
    d.Get("cdi", &v.cdi);
    d.Object("sharing", [&](Reader& s) {
      s.Get("virtualization_mode", &v.sharing.virtualization_mode);
      s.GetStrings("hints", &v.sharing.hints);
    });
  });
  r.Array("gpus", [&](Reader& g, size_t) {
    GpuInfo v;
    g.Get("index", &v.index);
    g.Get("name", &v.name);
    g.Get("uuid", &v.uuid);
    g.Get("pci_bus_id", &v.pci_bus_id);
    g.Get("pci_device_id", &v.pci_device_id);
    g.Get("compute_capability", &v.compute_capability);
    g.Get("memory_mib", &v.memory_mib);
    g.Get("generation", &v.generation);
    g.Get("vbios", &v.vbios);
    g.Get("source", &v.source);
    g.Object("ecc", [&](Reader& e) {
      e.Get("enabled", &v.ecc.enabled);
      e.Get("volatile_uncorrected", &v.ecc.volatile_uncorrected);
      e.Get("aggregate_uncorrected", &v.ecc.aggregate_uncorrected);
    });
    g.Object("remapped_rows", [&](Reader& e) {
      e.Get("pending", &v.remapped_rows.pending);
      e.Get("failure", &v.remapped_rows.failure);
    });
    g.Object("mig", [&](Reader& e) {
      e.Get("enabled", &v.mig.enabled);
      e.Get("instances", &v.mig.instances);
    });
    g.Object("pcie", [&](Reader& e) {
      e.Get("gen_current", &v.pcie.gen_current);
      e.Get("gen_max", &v.pcie.gen_max);
      e.Get("width_current", &v.pcie.width_current);
      e.Get("width_max", &v.pcie.width_max);
    });
    g.Get("power_limit_w", &v.power_limit_w);
    g.GetStrings("throttle_reasons", &v.throttle_reasons);
    g.Get("persistence_mode", &v.persistence_mode);
    if (const json* links = g.Find("nvlink_active")) {
      if (!links->is_array()) {
        g.Fail("nvlink_active", "an array of booleans");
      } else {
        for (const json& b : *links) {
          if (!b.is_boolean()) {
            g.Fail("nvlink_active", "an array of booleans");
            break;
          }
          v.nvlink_active.push_back(b.get<bool>());
        }
      }
    }
    g.Object("retired_pages", [&](Reader& e) {
      e.Get("single_bit", &v.retired_pages.single_bit);
      e.Get("double_bit", &v.retired_pages.double_bit);
      e.Get("pending", &v.retired_pages.pending);
    });
    g.Array("xid_events", [&](Reader& x, size_t) {
      GpuXidEvent ev;
      x.Get("xid", &ev.xid);
      x.Get("text", &ev.text);
      v.xid_events.push_back(std::move(ev));
    });
    fp.gpus.push_back(std::move(v));
  });
  r.Object("cuda", [&](Reader& c) {
    c.Array("toolkits", [&](Reader& t, size_t) {
      ToolkitInfo v;
      t.Get("version", &v.version);
      t.Get("path", &v.path);
      t.Get("source", &v.source);
      fp.cuda_toolkits.push_back(std::move(v));
    });
  });
  r.Array("libraries", [&](Reader& l, size_t) {
    LibraryInfo v;
    l.Get("name", &v.name);
    l.Get("version", &v.version);
    l.Get("path", &v.path);
    l.Get("real_path", &v.real_path);
    l.Get("version_source", &v.version_source);
    l.Get("origin", &v.origin);
    l.Get("glibc_needed", &v.glibc_needed);
    l.Get("sha256", &v.sha256);
    l.Get("loaded_version", &v.loaded_version);
    if (l.Find("cuda_archs") != nullptr) {
      std::vector<std::string> archs;
      l.GetStrings("cuda_archs", &archs);
      v.cuda_archs = std::move(archs);
    }
    l.Get("ptx_isa", &v.ptx_isa);
    fp.libraries.push_back(std::move(v));
  });
  r.Array("frameworks", [&](Reader& f, size_t) {
    FrameworkInfo v;
    f.Get("name", &v.name);
    f.Get("version", &v.version);
    f.Get("cuda", &v.cuda);
    f.Get("cudnn", &v.cudnn);
    f.Get("path", &v.path);
    f.GetStrings("requires_dist", &v.requires_dist);
    f.Get("source", &v.source);
    f.Get("git_version", &v.git_version);
    fp.frameworks.push_back(std::move(v));
  });
  if (const json* env = r.Find("env")) {
    if (!env->is_object()) {
      r.Fail("env", "an object");
    } else {
      for (auto it = env->begin(); it != env->end(); ++it) {
        if (!it->is_string()) {
          r.Fail("env." + it.key(), "a string");
          break;
        }
        fp.env[it.key()] = it->get<std::string>();
      }
    }
  }
  r.Object("network", [&](Reader& n) {
    n.Array("infiniband", [&](Reader& d, size_t) {
      InfinibandDevice v;
      d.Get("device", &v.device);
      d.Get("firmware", &v.firmware);
      d.Get("board_id", &v.board_id);
      d.Array("ports", [&](Reader& p, size_t) {
        InfinibandPort port;
        p.Get("port", &port.port);
        p.Get("state", &port.state);
        p.Get("rate", &port.rate);
        p.Get("link_layer", &port.link_layer);
        v.ports.push_back(std::move(port));
      });
      fp.network.infiniband.push_back(std::move(v));
    });
    n.Get("nvidia_peermem", &fp.network.nvidia_peermem);
    n.GetStrings("gpudirect_modules", &fp.network.gpudirect_modules);
  });
  r.Object("collection", [&](Reader& c) {
    CollectionInfo& v = fp.collection;
    c.Array("findings", [&](Reader& f, size_t) {
      Finding finding;
      f.Get("severity", &finding.severity);
      f.Get("code", &finding.code);
      f.Get("message", &finding.message);
      v.findings.push_back(std::move(finding));
    });
    c.Get("duration_ms", &v.duration_ms);
    c.Get("root", &v.root);
    c.Get("live", &v.live);
    c.Get("collected_at", &v.collected_at);
    c.Get("cutover_version", &v.cutover_version);
    c.Get("kernel_log", &v.kernel_log);
    c.Object("deep", [&](Reader& d) {
      DeepInfo deep;
      d.Get("hash_cache", &deep.hash_cache);
      d.Get("hashes_from_cache", &deep.hashes_from_cache);
      d.Get("hashes_computed", &deep.hashes_computed);
      d.Get("bytes_hashed", &deep.bytes_hashed);
      d.Get("loaded", &deep.loaded);
      v.deep = deep;
    });
  });
  if (!error.ok()) return error;
  return fp;
}

Result<Fingerprint> ParseFingerprint(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("fingerprint: not valid JSON");
  return FingerprintFromJson(doc);
}

}  // namespace cutover
