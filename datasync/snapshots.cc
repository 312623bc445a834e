#include "datasync/snapshots.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>

#include "core/random.h"
#include "core/sha256.h"
#include "datasync/manifest.h"
#include "datasync/shard.h"

namespace cutover {
namespace {

constexpr size_t kIdDigits = 16;
constexpr size_t kMinIdPrefix = 4;
constexpr char kLegacyPrefix[] = "snapshots/";

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A legacy snapshot's ref, with the time its manifest's header holds (0 when the manifest cannot
// be read: what reads it in earnest, pull or verify or ls, reports that in its own words; or when
// `read_time` is false: the manifest is not read at all).
Result<SnapshotRef> ReadLegacy(Store& store, std::string_view key, bool read_time = true) {
  std::string name(key.substr(sizeof(kLegacyPrefix) - 1));
  SnapshotRef ref{
      .id = LegacySnapshotId(name), .name = name, .key = std::string(key), .legacy = true};
  if (!read_time) return ref;
  CUTOVER_ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  Result<Manifest> header = ReadManifest(bytes, [](Entry&&) { return Status::Ok(); });
  if (header.ok()) ref.created_ns = header->created_ns;
  return ref;
}

}  // namespace

bool OldestFirst(const SnapshotRef& a, const SnapshotRef& b) {
  if (a.name != b.name) return a.name < b.name;
  if (a.created_ns != b.created_ns) return a.created_ns < b.created_ns;
  return a.id < b.id;
}

namespace {

// The snapshots under `prefix` of snap/, oldest first.
Result<std::vector<SnapshotRef>> ListSeries(Store& store, const std::string& prefix) {
  std::vector<SnapshotRef> out;
  CUTOVER_RETURN_IF_ERROR(store.List(prefix, [&out](std::string_view key, uint64_t) {
    // A stray key under snap/ is not listed as a snapshot (gc, which must not lose what a
    // snapshot names, refuses to run while an object there cannot be read as a manifest).
    if (std::optional<SnapshotRef> ref = ParseSeriesKey(key)) out.push_back(std::move(*ref));
    return Status::Ok();
  }));
  std::sort(out.begin(), out.end(), OldestFirst);
  return out;
}

}  // namespace

SnapshotSelector SnapshotSelector::Id(std::string id) {
  SnapshotSelector s("");
  s.id = std::move(id);
  return s;
}

std::string SnapshotSelector::Label() const { return id.empty() ? name : "id " + id; }

std::string NewSnapshotId() { return RandomHex(kIdDigits / 2); }

std::string LegacySnapshotId(std::string_view name) {
  std::string text = "legacy-snapshot:" + std::string(name);
  return HexEncode(Sha256Digest(text)).substr(0, kIdDigits);
}

Result<std::string> SeriesKey(std::string_view name, int64_t created_ns, std::string_view id) {
  CUTOVER_RETURN_IF_ERROR(SnapshotKey(name).status());
  if (created_ns < 0) return Status::InvalidArgument("snapshot time before 1970");
  if (id.size() != kIdDigits || !IsLowerHex(id)) {
    return Status::InvalidArgument("bad snapshot id \"" + std::string(id) +
                                   "\": expected 16 hex digits");
  }
  char ns[24];
  std::snprintf(ns, sizeof ns, "%020" PRId64, created_ns);
  return std::string(kSeriesPrefix) + std::string(name) + "/" + ns + "-" + std::string(id);
}

std::optional<SnapshotRef> ParseSeriesKey(std::string_view key) {
  if (!key.starts_with(kSeriesPrefix)) return std::nullopt;
  std::string_view rest = key.substr(sizeof(kSeriesPrefix) - 1);
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view name = rest.substr(0, slash), leaf = rest.substr(slash + 1);
  if (leaf.size() != 20 + 1 + kIdDigits || leaf[20] != '-') return std::nullopt;
  std::string_view ns = leaf.substr(0, 20), id = leaf.substr(21);
  if (!std::all_of(ns.begin(), ns.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !IsLowerHex(id) || !SnapshotKey(name).ok()) {
    return std::nullopt;
  }
  uint64_t t = 0;
  for (char c : ns) {
    if (t > (static_cast<uint64_t>(INT64_MAX) - 9) / 10) return std::nullopt;
    t = t * 10 + static_cast<uint64_t>(c - '0');
  }
  return SnapshotRef{.id = std::string(id),
                     .name = std::string(name),
                     .created_ns = static_cast<int64_t>(t),
                     .key = std::string(key)};
}

Result<std::vector<SnapshotRef>> ListSnapshots(Store& store,
                                               const std::optional<std::string>& name,
                                               bool legacy_times) {
  if (name) CUTOVER_RETURN_IF_ERROR(SnapshotKey(*name).status());
  CUTOVER_ASSIGN_OR_RETURN(
      std::vector<SnapshotRef> out,
      ListSeries(store, std::string(kSeriesPrefix) + (name ? *name + "/" : "")));
  std::vector<std::string> legacy;
  if (name) {
    CUTOVER_ASSIGN_OR_RETURN(std::string key, SnapshotKey(*name));
    CUTOVER_ASSIGN_OR_RETURN(bool there, store.Exists(key));
    if (there) legacy.push_back(key);
  } else {
    CUTOVER_RETURN_IF_ERROR(store.List(kLegacyPrefix, [&legacy](std::string_view key, uint64_t) {
      legacy.emplace_back(key);
      return Status::Ok();
    }));
  }
  for (const std::string& key : legacy) {
    Result<SnapshotRef> ref = ReadLegacy(store, key, legacy_times);
    if (!ref.ok() && ref.status().code() == Code::kNotFound) continue;  // forgotten meanwhile
    CUTOVER_RETURN_IF_ERROR(ref.status());
    out.push_back(std::move(ref).value());
  }
  std::sort(out.begin(), out.end(), OldestFirst);
  return out;
}

Result<SnapshotRef> NewestSnapshot(Store& store, std::string_view name) {
  CUTOVER_ASSIGN_OR_RETURN(std::string legacy_key, SnapshotKey(name));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<SnapshotRef> series,
                           ListSeries(store, std::string(kSeriesPrefix) + std::string(name) + "/"));
  CUTOVER_ASSIGN_OR_RETURN(bool legacy, store.Exists(legacy_key));
  if (legacy && series.empty()) {
    // The only member: no need to read its manifest for a time to compare.
    return SnapshotRef{
        .id = LegacySnapshotId(name), .name = std::string(name), .key = legacy_key, .legacy = true};
  }
  if (legacy) {
    Result<SnapshotRef> old = ReadLegacy(store, legacy_key);
    if (old.ok() && old->created_ns > series.back().created_ns) return old;
    if (!old.ok() && old.status().code() != Code::kNotFound) return old.status();
  }
  if (series.empty()) {
    return Status::NotFound("no snapshot " + std::string(name) + " in " + store.Url());
  }
  return series.back();
}

Result<SnapshotRef> FindSnapshot(Store& store, std::string_view id) {
  if (id.size() < kMinIdPrefix || id.size() > kIdDigits || !IsLowerHex(id)) {
    return Status::InvalidArgument("bad snapshot id \"" + std::string(id) +
                                   "\": expected 4 to 16 hex digits (a prefix of an id that "
                                   "`datasync snapshots` lists)");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::vector<SnapshotRef> all, ListSnapshots(store, std::nullopt));
  std::vector<SnapshotRef> match;
  for (SnapshotRef& r : all) {
    if (r.id.starts_with(id)) match.push_back(std::move(r));
  }
  if (match.empty()) {
    return Status::NotFound("no snapshot with id " + std::string(id) + " in " + store.Url());
  }
  if (match.size() > 1) {
    return Status::InvalidArgument("snapshot id " + std::string(id) +
                                   " is ambiguous: " + std::to_string(match.size()) +
                                   " snapshots start with it; give more digits");
  }
  return match.front();
}

Result<SnapshotRef> ResolveSnapshot(Store& store, const SnapshotSelector& selector) {
  if (!selector.id.empty()) return FindSnapshot(store, selector.id);
  return NewestSnapshot(store, selector.name);
}

Result<std::vector<SnapshotRef>> SnapshotsBeyondLast(Store& store, std::string_view name,
                                                     int keep_last) {
  if (keep_last < 1) {
    return Status::InvalidArgument(
        "--keep-last must be at least 1 (forget --id removes a "
        "snapshot by id)");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::vector<SnapshotRef> series,
                           ListSnapshots(store, std::string(name)));
  if (series.size() <= static_cast<size_t>(keep_last)) return std::vector<SnapshotRef>{};
  series.resize(series.size() - static_cast<size_t>(keep_last));
  return series;
}

namespace {

// What a diff compares of one entry: its content as a digest of its chunk ids, and the rest.
struct EntrySignature {
  EntryType type = EntryType::kFile;
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  uint64_t size = 0;
  Sha256Hash content{};  // over the chunk ids and lengths, or the symlink's target

  bool SameContent(const EntrySignature& o) const {
    return type == o.type && size == o.size && content == o.content;
  }
};

EntrySignature Sign(const Entry& e, Sha256& h) {
  EntrySignature s{.type = e.type, .mode = e.mode, .mtime_ns = e.mtime_ns, .size = e.size};
  h.Update(e.target);
  for (const ChunkRef& c : e.chunks) {
    h.Update(c.id.data(), c.id.size());
    h.Update(&c.length, sizeof c.length);
  }
  s.content = h.Final();
  return s;
}

Result<std::string> GetManifest(Store& store, const SnapshotRef& ref) {
  Result<std::string> bytes = store.Get(ref.key);
  if (!bytes.ok() && bytes.status().code() == Code::kNotFound) {
    return Status::NotFound("no snapshot with id " + ref.id + " in " + store.Url());
  }
  return bytes;
}

void SortWalkOrder(std::vector<std::string>* paths) {
  std::sort(paths->begin(), paths->end(),
            [](const std::string& a, const std::string& b) { return WalkOrderLess(a, b); });
}

}  // namespace

Result<SnapshotDiff> DiffSnapshots(Store& store, const SnapshotRef& from, const SnapshotRef& to) {
  std::unordered_map<std::string, EntrySignature> before;
  Sha256 hasher;
  {
    CUTOVER_ASSIGN_OR_RETURN(std::string bytes, GetManifest(store, from));
    Result<Manifest> header = ReadManifest(bytes, [&](Entry&& e) {
      EntrySignature sig = Sign(e, hasher);
      before.emplace(std::move(e.path), sig);
      return Status::Ok();
    });
    if (!header.ok()) {
      return Status::InvalidArgument("snapshot " + from.id + ": " + header.status().message());
    }
  }
  SnapshotDiff d;
  CUTOVER_ASSIGN_OR_RETURN(std::string bytes, GetManifest(store, to));
  Result<Manifest> header = ReadManifest(bytes, [&](Entry&& e) {
    auto it = before.find(e.path);
    if (it == before.end()) {
      d.added.push_back(std::move(e.path));
      return Status::Ok();
    }
    EntrySignature now = Sign(e, hasher);
    if (!now.SameContent(it->second)) {
      d.changed.push_back(std::move(e.path));
    } else if (now.mode != it->second.mode || now.mtime_ns != it->second.mtime_ns) {
      d.metadata.push_back(std::move(e.path));
    }
    before.erase(it);
    return Status::Ok();
  });
  if (!header.ok()) {
    return Status::InvalidArgument("snapshot " + to.id + ": " + header.status().message());
  }
  for (auto& [path, sig] : before) d.removed.push_back(path);
  SortWalkOrder(&d.removed);  // the others came in walk order
  return d;
}

}  // namespace cutover
