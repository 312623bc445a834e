#include "core/fingerprint.h"

#include <concepts>
#include <string_view>
#include <type_traits>

namespace cutover {
namespace {

using nlohmann::json;

// Reads the fields of one JSON object into a struct (the Reader side of the field table below),
// remembering the first type error with its field path. An absent or null member leaves the
// struct's default.
class Reader {
 public:
  Reader(const json& obj, std::string path, Status* error)
      : obj_(obj), path_(std::move(path)), error_(error) {}

  template <typename V>
  void Field(std::string_view key, V& out) {
    if (const json* v = Find(key)) Convert(key, *v, &out);
  }
  template <typename V>
  void Field(std::string_view key, std::optional<V>& out) {
    const json* v = Find(key);
    V value{};
    if (v != nullptr && Convert(key, *v, &value)) out = std::move(value);
  }
  template <typename S>
  void Object(std::string_view key, S& out) {
    Nested(key, [&](Reader& sub) { Fields(sub, out); });
  }
  template <typename S>
  void Object(std::string_view key, std::optional<S>& out) {
    Nested(key, [&](Reader& sub) { Fields(sub, out.emplace()); });
  }
  template <typename S>
  void Array(std::string_view key, std::vector<S>& out) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return Fail(key, "an array");
    for (size_t i = 0; i < v->size() && error_->ok(); ++i) {
      std::string p = Path(key) + "[" + std::to_string(i) + "]";
      if (!(*v)[i].is_object()) {
        *error_ = Status::InvalidArgument("fingerprint field " + p + ": expected an object");
        return;
      }
      Reader sub((*v)[i], p, error_);
      Fields(sub, out.emplace_back());
    }
  }
  template <typename Fn>
  void Nested(std::string_view key, Fn fn) {
    const json* v = Find(key);
    if (v == nullptr) return;
    if (!v->is_object()) return Fail(key, "an object");
    Reader sub(*v, Path(key), error_);
    fn(sub);
  }

 private:
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
  const json* Find(std::string_view key) const {
    if (!obj_.is_object()) return nullptr;
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }

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
  // A list of strings or of booleans: all or nothing.
  template <typename E>
  bool Convert(std::string_view key, const json& v, std::vector<E>* out) {
    constexpr bool kStrings = std::is_same_v<E, std::string>;
    const char* want = kStrings ? "an array of strings" : "an array of booleans";
    if (!v.is_array()) return Fail(key, want), false;
    std::vector<E> items;
    for (const json& e : v) {
      if (kStrings ? !e.is_string() : !e.is_boolean()) return Fail(key, want), false;
      items.push_back(e.get<E>());
    }
    *out = std::move(items);
    return true;
  }
  bool Convert(std::string_view key, const json& v, std::map<std::string, std::string>* out) {
    if (!v.is_object()) return Fail(key, "an object"), false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!it->is_string()) return Fail(std::string(key) + "." + it.key(), "a string"), false;
      (*out)[it.key()] = it->get<std::string>();
    }
    return true;
  }

  const json& obj_;
  std::string path_;
  Status* error_;
};

// The field table: Fields(io, x) names every member of x once, for both directions. `io` is a
// Writer (x const, building JSON) or a Reader (x mutable, filled from JSON), each with:
//   io.Field(key, member)        a value, an optional value (null when empty), a list or a map
//   io.Object(key, member)       a nested struct (or an optional one: null when empty)
//   io.Array(key, member)        a std::vector of structs
//   io.Nested(key, fn)           an object with no struct of its own; fn(sub_io) fills it
template <typename T, typename U>
concept Is = std::same_as<std::remove_const_t<T>, U>;

template <typename IO, Is<Finding> T>
void Fields(IO& io, T& f) {
  io.Field("severity", f.severity);
  io.Field("code", f.code);
  io.Field("message", f.message);
}

template <typename IO, Is<ContainerInfo> T>
void Fields(IO& io, T& c) {
  io.Field("detected", c.detected);
  io.Field("runtime", c.runtime);
  io.Field("hints", c.hints);
}

template <typename IO, Is<OsInfo> T>
void Fields(IO& io, T& os) {
  io.Field("id", os.id);
  io.Field("version_id", os.version_id);
  io.Field("pretty_name", os.pretty_name);
  io.Field("kernel", os.kernel);
  io.Field("glibc", os.glibc);
  io.Field("arch", os.arch);
  io.Object("container", os.container);
}

template <typename IO, Is<CpuInfo> T>
void Fields(IO& io, T& cpu) {
  io.Field("model", cpu.model);
  io.Field("cores", cpu.cores);
  io.Field("numa_nodes", cpu.numa_nodes);
}

template <typename IO, Is<DriverInfo> T>
void Fields(IO& io, T& d) {
  io.Field("status", d.status);
  io.Field("version", d.version);
  io.Field("cuda_version", d.cuda_version);
  io.Field("source", d.source);
  io.Field("error", d.error);
  io.Field("kernel_module_version", d.kernel_module_version);
  io.Field("kernel_module_flavor", d.kernel_module_flavor);
  io.Field("userspace_version", d.userspace_version);
  io.Field("fabric_manager_version", d.fabric_manager_version);
  io.Field("container_toolkit", d.container_toolkit);
  io.Field("cdi", d.cdi);
  io.Nested("sharing", [&](auto& s) {
    s.Field("virtualization_mode", d.sharing.virtualization_mode);
    s.Field("hints", d.sharing.hints);
  });
}

template <typename IO, Is<GpuXidEvent> T>
void Fields(IO& io, T& x) {
  io.Field("xid", x.xid);
  io.Field("text", x.text);
}

template <typename IO, Is<GpuInfo> T>
void Fields(IO& io, T& g) {
  io.Field("index", g.index);
  io.Field("name", g.name);
  io.Field("uuid", g.uuid);
  io.Field("pci_bus_id", g.pci_bus_id);
  io.Field("pci_device_id", g.pci_device_id);
  io.Field("compute_capability", g.compute_capability);
  io.Field("memory_mib", g.memory_mib);
  io.Field("generation", g.generation);
  io.Field("vbios", g.vbios);
  io.Field("source", g.source);
  io.Nested("ecc", [&](auto& e) {
    e.Field("enabled", g.ecc.enabled);
    e.Field("volatile_uncorrected", g.ecc.volatile_uncorrected);
    e.Field("aggregate_uncorrected", g.ecc.aggregate_uncorrected);
  });
  io.Nested("remapped_rows", [&](auto& e) {
    e.Field("pending", g.remapped_rows.pending);
    e.Field("failure", g.remapped_rows.failure);
  });
  io.Nested("mig", [&](auto& e) {
    e.Field("enabled", g.mig.enabled);
    e.Field("instances", g.mig.instances);
  });
  io.Nested("pcie", [&](auto& e) {
    e.Field("gen_current", g.pcie.gen_current);
    e.Field("gen_max", g.pcie.gen_max);
    e.Field("width_current", g.pcie.width_current);
    e.Field("width_max", g.pcie.width_max);
  });
  io.Field("power_limit_w", g.power_limit_w);
  io.Field("throttle_reasons", g.throttle_reasons);
  io.Field("persistence_mode", g.persistence_mode);
  io.Field("nvlink_active", g.nvlink_active);
  io.Nested("retired_pages", [&](auto& e) {
    e.Field("single_bit", g.retired_pages.single_bit);
    e.Field("double_bit", g.retired_pages.double_bit);
    e.Field("pending", g.retired_pages.pending);
  });
  io.Array("xid_events", g.xid_events);
}

template <typename IO, Is<ToolkitInfo> T>
void Fields(IO& io, T& t) {
  io.Field("version", t.version);
  io.Field("path", t.path);
  io.Field("source", t.source);
}

template <typename IO, Is<LibraryInfo> T>
void Fields(IO& io, T& l) {
  io.Field("name", l.name);
  io.Field("version", l.version);
  io.Field("path", l.path);
  io.Field("real_path", l.real_path);
  io.Field("version_source", l.version_source);
  io.Field("origin", l.origin);
  io.Field("glibc_needed", l.glibc_needed);
  io.Field("sha256", l.sha256);
  io.Field("loaded_version", l.loaded_version);
  io.Field("cuda_archs", l.cuda_archs);
  io.Field("ptx_isa", l.ptx_isa);
}

template <typename IO, Is<FrameworkInfo> T>
void Fields(IO& io, T& f) {
  io.Field("name", f.name);
  io.Field("version", f.version);
  io.Field("cuda", f.cuda);
  io.Field("cudnn", f.cudnn);
  io.Field("path", f.path);
  io.Field("requires_dist", f.requires_dist);
  io.Field("source", f.source);
  io.Field("git_version", f.git_version);
}

template <typename IO, Is<InfinibandPort> T>
void Fields(IO& io, T& p) {
  io.Field("port", p.port);
  io.Field("state", p.state);
  io.Field("rate", p.rate);
  io.Field("link_layer", p.link_layer);
}

template <typename IO, Is<InfinibandDevice> T>
void Fields(IO& io, T& d) {
  io.Field("device", d.device);
  io.Field("firmware", d.firmware);
  io.Field("board_id", d.board_id);
  io.Array("ports", d.ports);
}

template <typename IO, Is<DeepInfo> T>
void Fields(IO& io, T& d) {
  io.Field("hash_cache", d.hash_cache);
  io.Field("hashes_from_cache", d.hashes_from_cache);
  io.Field("hashes_computed", d.hashes_computed);
  io.Field("bytes_hashed", d.bytes_hashed);
  io.Field("loaded", d.loaded);
}

template <typename IO, Is<CollectionInfo> T>
void Fields(IO& io, T& c) {
  io.Array("findings", c.findings);
  io.Field("duration_ms", c.duration_ms);
  io.Field("root", c.root);
  io.Field("live", c.live);
  io.Field("collected_at", c.collected_at);
  io.Field("cutover_version", c.cutover_version);
  io.Field("kernel_log", c.kernel_log);
  io.Object("deep", c.deep);
}

template <typename IO, Is<Fingerprint> T>
void Fields(IO& io, T& fp) {
  io.Field("hostname", fp.hostname);
  io.Object("os", fp.os);
  io.Object("cpu", fp.cpu);
  io.Field("memory_mib", fp.memory_mib);
  io.Object("driver", fp.driver);
  io.Array("gpus", fp.gpus);
  io.Nested("cuda", [&](auto& c) { c.Array("toolkits", fp.cuda_toolkits); });
  io.Array("libraries", fp.libraries);
  io.Array("frameworks", fp.frameworks);
  io.Field("env", fp.env);
  io.Nested("network", [&](auto& n) {
    n.Array("infiniband", fp.network.infiniband);
    n.Field("nvidia_peermem", fp.network.nvidia_peermem);
    n.Field("gpudirect_modules", fp.network.gpudirect_modules);
  });
  io.Object("collection", fp.collection);
}

// Writes the fields of a struct into one JSON object; an empty optional is null.
class Writer {
 public:
  explicit Writer(json* obj) : obj_(obj) {}

  template <typename V>
  void Field(std::string_view key, const V& v) {
    (*obj_)[std::string(key)] = v;
  }
  template <typename V>
  void Field(std::string_view key, const std::optional<V>& v) {
    (*obj_)[std::string(key)] = v ? json(*v) : json(nullptr);
  }
  template <typename S>
  void Object(std::string_view key, const S& s) {
    Nested(key, [&](Writer& w) { Fields(w, s); });
  }
  template <typename S>
  void Object(std::string_view key, const std::optional<S>& s) {
    if (s) return Object(key, *s);
    (*obj_)[std::string(key)] = nullptr;
  }
  template <typename S>
  void Array(std::string_view key, const std::vector<S>& items) {
    json a = json::array();
    for (const S& s : items) {
      json e = json::object();
      Writer w(&e);
      Fields(w, s);
      a.push_back(std::move(e));
    }
    (*obj_)[std::string(key)] = std::move(a);
  }
  template <typename Fn>
  void Nested(std::string_view key, Fn fn) {
    json sub = json::object();
    Writer w(&sub);
    fn(w);
    (*obj_)[std::string(key)] = std::move(sub);
  }

 private:
  json* obj_;
};

}  // namespace

json FingerprintToJson(const Fingerprint& fp) {
  json doc = json::object();
  Writer w(&doc);
  Fields(w, fp);
  doc["schema"] = kFingerprintSchema;
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
  Fields(r, fp);
  if (!error.ok()) return error;
  return fp;
}

Result<Fingerprint> ParseFingerprint(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Status::InvalidArgument("fingerprint: not valid JSON");
  return FingerprintFromJson(doc);
}

}  // namespace cutover
