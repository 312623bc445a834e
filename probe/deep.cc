#include "probe/deep.h"

#include <dlfcn.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/sha256.h"
#include "core/subprocess.h"
#include "probe/collect.h"
#include "probe/fatbin.h"
#include "probe/parsers.h"

namespace cutover::probe {
namespace {

constexpr char kHashCacheSchema[] = "cutover.hash-cache/1";
constexpr char kHashCacheFile[] = "sha256-cache.json";
constexpr uint64_t kHeaderWindow = 64 << 10;
constexpr size_t kHashChunk = 8 << 20;
// libraryPropertyType (library_types.h): MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
constexpr int kMajorVersion = 0, kMinorVersion = 1, kPatchLevel = 2;

std::string Dotted(long a, long b) { return std::to_string(a) + "." + std::to_string(b); }
std::string Dotted(long a, long b, long c) { return Dotted(a, b) + "." + std::to_string(c); }

// What the child sends back: "V<version>", "N" (no version call), or "E<why>".
std::string AskLoadedVersion(const std::string& name, const std::string& path) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = ::dlerror();
    return std::string("Edlopen failed: ") + (err != nullptr ? err : "unknown error");
  }
  auto sym = [h](const char* s) { return ::dlsym(h, s); };
  auto missing = [](const char* s) { return std::string("Eno symbol ") + s; };
  using Property = int (*)(int, int*);
  auto by_property = [&](const char* fn) -> std::string {
    auto get = reinterpret_cast<Property>(sym(fn));
    if (get == nullptr) return missing(fn);
    int major = 0, minor = 0, patch = 0;
    int rc = get(kMajorVersion, &major);
    if (rc == 0) rc = get(kMinorVersion, &minor);
    if (rc == 0) rc = get(kPatchLevel, &patch);
    if (rc != 0) return "E" + std::string(fn) + " returned " + std::to_string(rc);
    return "V" + Dotted(major, minor, patch);
  };
  if (name == "cudnn" || name == "cudnn_graph") {
    auto get = reinterpret_cast<size_t (*)()>(sym("cudnnGetVersion"));
    if (get == nullptr) return missing("cudnnGetVersion");
    long v = static_cast<long>(get());
    // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 and older major*1000 + ...
    if (v >= 90000) return "V" + Dotted(v / 10000, v % 10000 / 100, v % 100);
    return "V" + Dotted(v / 1000, v % 1000 / 100, v % 100);
  }
  if (name == "nccl") {
    auto get = reinterpret_cast<int (*)(int*)>(sym("ncclGetVersion"));
    if (get == nullptr) return missing("ncclGetVersion");
    int v = 0;
    if (int rc = get(&v); rc != 0) return "EncclGetVersion returned " + std::to_string(rc);
    // NCCL 2.9 and newer encode major*10000 + minor*100 + patch; older major*1000 + ...
    if (v >= 20900) return "V" + Dotted(v / 10000, v % 10000 / 100, v % 100);
    return "V" + Dotted(v / 1000, v % 1000 / 100, v % 100);
  }
  if (name == "cublas") return by_property("cublasGetProperty");
  if (name == "cublasLt") {
    if (sym("cublasLtGetProperty") != nullptr) return by_property("cublasLtGetProperty");
    auto get = reinterpret_cast<size_t (*)()>(sym("cublasLtGetVersion"));
    if (get == nullptr) return missing("cublasLtGetVersion");
    long v = static_cast<long>(get());
    return "V" + Dotted(v / 10000, v % 10000 / 100, v % 100);
  }
  if (name == "cufft") return by_property("cufftGetProperty");
  if (name == "cusparse") return by_property("cusparseGetProperty");
  if (name == "cudart") {
    auto get = reinterpret_cast<int (*)(int*)>(sym("cudaRuntimeGetVersion"));
    if (get == nullptr) return missing("cudaRuntimeGetVersion");
    int v = 0;
    if (int rc = get(&v); rc != 0) return "EcudaRuntimeGetVersion returned " + std::to_string(rc);
    return "V" + Dotted(v / 1000, v % 1000 / 10);
  }
  if (name == "nvrtc") {
    auto get = reinterpret_cast<int (*)(int*, int*)>(sym("nvrtcVersion"));
    if (get == nullptr) return missing("nvrtcVersion");
    int major = 0, minor = 0;
    if (int rc = get(&major, &minor); rc != 0)
      return "EnvrtcVersion returned " + std::to_string(rc);
    return "V" + Dotted(major, minor);
  }
  if (name == "nvinfer") {
    auto major = reinterpret_cast<int (*)()>(sym("getInferLibMajorVersion"));
    auto minor = reinterpret_cast<int (*)()>(sym("getInferLibMinorVersion"));
    auto patch = reinterpret_cast<int (*)()>(sym("getInferLibPatchVersion"));
    if (major == nullptr || minor == nullptr || patch == nullptr) {
      return missing("getInferLibMajorVersion");
    }
    return "V" + Dotted(major(), minor(), patch());
  }
  return "N";
}

bool HasVersionCall(const std::string& name) {
  static const std::set<std::string> kNames = {"cudnn",    "cudnn_graph", "nccl",     "cublas",
                                               "cublasLt", "cufft",       "cusparse", "cudart",
                                               "nvrtc",    "nvinfer"};
  return kNames.count(name) != 0;
}

int Components(std::string_view v) {
  return v.empty() ? 0 : static_cast<int>(std::count(v.begin(), v.end(), '.')) + 1;
}

}  // namespace

Result<std::string_view> FileSource::Read(uint64_t off, uint64_t len) {
  if (off >= window_off_ && RangeInside(window_.size(), off - window_off_, len)) {
    return std::string_view(window_).substr(off - window_off_, len);
  }
  size_t want = static_cast<size_t>(std::max<uint64_t>(len, kHeaderWindow));
  CUTOVER_ASSIGN_OR_RETURN(window_, fs_.ReadAt(path_, off, want));
  window_off_ = off;
  bytes_read_ += window_.size();
  if (window_.size() < len) {
    window_.clear();
    return Status::IoError(path_ + ": short read at " + std::to_string(off));
  }
  return std::string_view(window_).substr(0, len);
}

std::string HashCache::DefaultDir(const std::map<std::string, std::string>& env) {
  auto it = env.find("XDG_CACHE_HOME");
  if (it != env.end() && !it->second.empty() && it->second[0] == '/') {
    return JoinPath(it->second, "cutover");
  }
  it = env.find("HOME");
  if (it != env.end() && !it->second.empty() && it->second[0] == '/') {
    return JoinPath(it->second, ".cache/cutover");
  }
  return "";
}

std::string HashCache::Key(const FileInfo& i) {
  return std::to_string(i.device) + ":" + std::to_string(i.inode) + ":" + std::to_string(i.size) +
         ":" + std::to_string(i.mtime_ns);
}

std::string HashCache::path() const { return JoinPath(dir_, kHashCacheFile); }

HashCache HashCache::Load(const std::string& dir, std::vector<Finding>* findings) {
  HashCache c;
  c.dir_ = dir;
  Result<std::string> text = ::cutover::ReadFile(c.path());
  if (!text.ok()) {
    if (text.status().code() != Code::kNotFound) {
      findings->push_back({"warning", "deep.hash_cache_corrupt",
                           text.status().message() + "; hashes are computed again"});
    }
    return c;
  }
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, false);
  auto bad = [&](const std::string& why) {
    findings->push_back(
        {"warning", "deep.hash_cache_corrupt",
         c.path() + ": " + why + "; hashes are computed again and it is rewritten"});
    c.entries_.clear();
    c.dirty_ = true;
    return c;
  };
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  if (doc.value("schema", "") != kHashCacheSchema) {
    return bad(std::string("schema is not \"") + kHashCacheSchema + "\"");
  }
  auto it = doc.find("entries");
  if (it == doc.end() || !it->is_object()) return bad("no \"entries\" object");
  for (auto e = it->begin(); e != it->end(); ++e) {
    if (!e->is_string() || !Sha256FromHex(e->get<std::string>()).ok()) {
      return bad("entry " + e.key() + " is not a SHA-256 hex digest");
    }
    c.entries_[e.key()] = e->get<std::string>();
  }
  return c;
}

std::optional<std::string> HashCache::Find(const FileInfo& info) {
  std::string key = Key(info);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  used_[key] = it->second;
  return it->second;
}

void HashCache::Put(const FileInfo& info, std::string hex) {
  std::string key = Key(info);
  entries_[key] = hex;
  used_[key] = std::move(hex);
  dirty_ = true;
}

Status HashCache::Save() const {
  if (!dirty_ && used_.size() == entries_.size()) return Status::Ok();
  CUTOVER_RETURN_IF_ERROR(MakeDirs(dir_, 0700));
  nlohmann::json doc = {{"schema", kHashCacheSchema}, {"entries", used_}};
  return WriteFileAtomic(path(), doc.dump(1) + "\n", 0600);
}

Result<std::optional<std::string>> LoadedLibraryVersion(const std::string& name,
                                                        const std::string& path, int timeout_ms) {
  if (!HasVersionCall(name)) return std::optional<std::string>();
  Result<std::string> out = RunInChild(
      "loading " + path, [&]() { return AskLoadedVersion(name, path); }, timeout_ms);
  if (!out.ok()) return Status::Environment(out.status().message());
  if (out->empty()) return Status::Environment(path + ": the child sent no answer");
  if ((*out)[0] == 'V') return std::optional<std::string>(out->substr(1));
  if ((*out)[0] == 'N') return std::optional<std::string>();
  return Status::Environment(path + ": " + out->substr(1));
}

Result<std::string> HashFile(const FileSystem& fs, const std::string& path, uint64_t* bytes) {
  Sha256 h;
  uint64_t off = 0;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(std::string chunk, fs.ReadAt(path, off, kHashChunk));
    h.Update(chunk);
    off += chunk.size();
    *bytes += chunk.size();
    if (chunk.size() < kHashChunk) break;
  }
  return HexEncode(h.Final());
}

Result<ElfFacts> ReadElfFacts(const FileSystem& fs, const std::string& path, bool archs) {
  CUTOVER_ASSIGN_OR_RETURN(FileInfo info, fs.Stat(path));
  FileSource src(fs, path, info.size);
  Result<ElfFile> elf = ParseElf(src);
  if (!elf.ok()) return Status(elf.status().code(), path + ": " + elf.status().message());
  ElfFacts facts;
  Result<std::vector<ElfVersionNeed>> needs = ReadVersionNeeds(src, *elf);
  if (!needs.ok()) return Status(needs.status().code(), path + ": " + needs.status().message());
  facts.glibc_needed = HighestGlibcVersion(*needs);
  if (archs) {
    std::set<std::string> names;
    for (const char* section : {".nv_fatbin", "__nv_relfatbin"}) {
      const ElfSection* s = elf->Find(section);
      if (s == nullptr || s->type == 8 /* SHT_NOBITS */) continue;
      Result<std::vector<FatbinEntry>> entries = ParseFatbin(src, s->offset, s->size);
      if (!entries.ok()) {
        return Status(entries.status().code(),
                      path + ": " + section + ": " + entries.status().message());
      }
      for (const FatbinEntry& e : *entries) {
        names.insert(e.ArchName());
        if (e.kind != FatbinKind::kPtx) continue;
        std::string isa = std::to_string(e.ptx_major) + "." + std::to_string(e.ptx_minor);
        if (!facts.ptx_isa || CompareVersions(isa, *facts.ptx_isa) > 0) facts.ptx_isa = isa;
      }
    }
    facts.cuda_archs.assign(names.begin(), names.end());
  }
  return facts;
}

std::optional<DeepInfo> InspectLibraries(CollectContext& ctx, const DeepOptions& deep,
                                         std::vector<LibraryInfo>* libraries) {
  const FileSystem& fs = ctx.fs();
  std::optional<DeepInfo> info;
  std::optional<HashCache> cache;
  if (deep.enabled) {
    info.emplace();
    if (!deep.load) {
      ctx.AddFinding("info", "deep.files_only",
                     "--deep on " + fs.RootLabel() +
                         ": sha256 and GPU architectures are read from the files; "
                         "loaded_version is not asked (loading an image's libraries would run "
                         "its code on this host)");
    }
    if (deep.cache_dir.empty()) {
      ctx.AddFinding("warning", "deep.hash_cache_unwritable",
                     "neither XDG_CACHE_HOME nor HOME is set: every library is hashed again");
    } else {
      cache = HashCache::Load(deep.cache_dir, &ctx.mutable_findings());
      info->hash_cache = cache->path();
    }
  }
  for (LibraryInfo& lib : *libraries) {
    const std::string real = lib.real_path.value_or(lib.path);
    Result<FileInfo> st = fs.Stat(real);
    if (!st.ok()) {
      ctx.AddFinding("warning", "file.unreadable", st.status().message());
      continue;
    }
    Result<ElfFacts> facts = ReadElfFacts(fs, real, deep.enabled);
    if (facts.ok()) {
      lib.glibc_needed = facts->glibc_needed;
      if (deep.enabled) {
        lib.cuda_archs = facts->cuda_archs;
        lib.ptx_isa = facts->ptx_isa;
      }
    } else if (facts.status().code() == Code::kInvalidArgument &&
               facts.status().message().find(": not an ELF file") == std::string::npos) {
      // A file that is no ELF at all (a linker script, a placeholder in an image) says nothing
      // about glibc, and one that cannot be read is reported by --deep's hash; a corrupt ELF
      // is worth a warning.
      ctx.AddFinding("warning", "library.corrupt_elf", facts.status().message());
    }
    if (!deep.enabled) continue;
    lib.real_path = real;  // with --deep always set, even when `path` is the file itself
    std::optional<std::string> hex = cache ? cache->Find(*st) : std::nullopt;
    if (hex) {
      ++info->hashes_from_cache;
    } else {
      Result<std::string> h = HashFile(fs, real, &info->bytes_hashed);
      if (!h.ok()) {
        ctx.AddFinding("warning", "file.unreadable", h.status().message());
      } else {
        hex = *h;
        ++info->hashes_computed;
        if (cache) cache->Put(*st, *hex);
      }
    }
    lib.sha256 = hex;
    if (!deep.load || !HasVersionCall(lib.name)) continue;
    Result<std::optional<std::string>> loaded =
        LoadedLibraryVersion(lib.name, real, deep.load_timeout_ms);
    if (!loaded.ok()) {
      ctx.AddFinding("warning", "library.load_failed", loaded.status().message());
      continue;
    }
    ++info->loaded;
    lib.loaded_version = *loaded;
    if (lib.loaded_version && lib.version) {
      int n = std::min(Components(*lib.loaded_version), Components(*lib.version));
      if (VersionPrefix(*lib.loaded_version, n) != VersionPrefix(*lib.version, n)) {
        ctx.AddFinding("warning", "library.loaded_version_differs",
                       lib.path + " reports version " + *lib.loaded_version + " when loaded, but " +
                           lib.version_source.value_or("its files") + " said " + *lib.version +
                           ": the version from files is wrong for this copy");
      }
    }
  }
  if (cache) {
    Status s = cache->Save();
    if (!s.ok()) {
      ctx.AddFinding("warning", "deep.hash_cache_unwritable",
                     cache->path() + ": " + s.message() + "; hashes are computed again next time");
    }
  }
  return info;
}

}  // namespace cutover::probe
