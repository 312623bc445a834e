#include "datasync/shard.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "core/units.h"
#include "datasync/snapshots.h"

namespace cutover {
namespace {

// Parses a decimal in 1..kMaxShards; 0 for anything else.
uint32_t ShardNumber(std::string_view s) {
  if (s.empty() || s.size() > 4 || s[0] == '0') return 0;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v <= kMaxShards ? v : 0;
}

std::string JoinNumbers(const std::vector<uint32_t>& v) {
  std::string out;
  for (uint32_t n : v) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

}  // namespace

Result<ShardSpec> ParseShard(std::string_view text) {
  size_t slash = text.find('/');
  ShardSpec s;
  if (slash != std::string_view::npos) {
    s.index = ShardNumber(text.substr(0, slash));
    s.count = ShardNumber(text.substr(slash + 1));
  }
  if (slash == std::string_view::npos || s.index == 0 || s.count == 0 || s.index > s.count) {
    return Status::InvalidArgument(
        "--shard: expected I/N with 1 <= I <= N <= " + std::to_string(kMaxShards) +
        " (e.g. 2/4), got \"" + std::string(text) + "\"");
  }
  return s;
}

bool InShard(std::string_view path, const ShardSpec& shard) {
  ChunkId h = Sha256Of(path);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | h[static_cast<size_t>(i)];
  return v % shard.count + 1 == shard.index;
}

Result<std::string> PartKey(std::string_view name, const ShardSpec& shard) {
  CUTOVER_RETURN_IF_ERROR(SnapshotKey(name).status());
  return std::string(kPartsPrefix) + std::string(name) + "/" + std::to_string(shard.index) +
         "-of-" + std::to_string(shard.count);
}

bool ParsePartKey(std::string_view key, std::string* name, ShardSpec* shard) {
  if (!key.starts_with(kPartsPrefix)) return false;
  key.remove_prefix(sizeof(kPartsPrefix) - 1);
  size_t slash = key.find('/');
  if (slash == std::string_view::npos || slash == 0) return false;
  std::string_view n = key.substr(0, slash), rest = key.substr(slash + 1);
  size_t of = rest.find("-of-");
  if (of == std::string_view::npos) return false;
  ShardSpec s{ShardNumber(rest.substr(0, of)), ShardNumber(rest.substr(of + 4))};
  if (s.index == 0 || s.count == 0 || s.index > s.count || !SnapshotKey(n).ok()) return false;
  *name = std::string(n);
  *shard = s;
  return true;
}

void TreeDigest::Add(std::string_view path, EntryType type) {
  // NUL cannot occur in a path, so "path NUL type NUL" frames each entry unambiguously.
  std::string_view t = EntryTypeName(type);
  stream_.Update(path.data(), path.size());
  stream_.Update("", 1);
  stream_.Update(t.data(), t.size());
  stream_.Update("", 1);
  ++entries_;
}

bool WalkOrderLess(std::string_view a, std::string_view b) {
  // Bytewise, except that '/' sorts before every other byte: "a" < "a/b" < "a-c".
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = a[i] == '/' ? 0 : static_cast<unsigned char>(a[i]);
    unsigned char y = b[i] == '/' ? 0 : static_cast<unsigned char>(b[i]);
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

Result<MergeResult> MergeParts(Store& store, std::string_view name, const MergeOptions& options) {
  CUTOVER_RETURN_IF_ERROR(SnapshotKey(name).status());
  const std::string prefix = std::string(kPartsPrefix) + std::string(name) + "/";
  // The push lock keeps gc off the parts' chunks from the read to the publish.
  std::unique_ptr<StoreLock> lock;
  if (!options.dry_run) {
    CUTOVER_ASSIGN_OR_RETURN(lock, StoreLock::Acquire(store, "push", options.lock));
  }

  std::map<uint32_t, std::map<uint32_t, std::string>> by_count;  // count -> index -> key
  CUTOVER_RETURN_IF_ERROR(store.List(prefix, [&](std::string_view key, uint64_t) -> Status {
    std::string n;
    ShardSpec s;
    if (!ParsePartKey(key, &n, &s) || n != name) {
      return Status::FailedPrecondition(std::string(key) + " is not a part key (" + prefix +
                                        "<I>-of-<N>); remove it before merging");
    }
    by_count[s.count][s.index] = std::string(key);
    return Status::Ok();
  }));
  if (by_count.empty()) {
    return Status::NotFound("the store holds no parts of snapshot " + std::string(name) +
                            " (push them with --shard I/N first)");
  }
  if (by_count.size() > 1) {
    std::vector<uint32_t> counts;
    for (const auto& [count, parts] : by_count) counts.push_back(count);
    return Status::FailedPrecondition(
        "the parts of snapshot " + std::string(name) + " are of different shard counts (" +
        JoinNumbers(counts) + "): remove the stale ones under " + prefix + " and merge again");
  }
  const uint32_t count = by_count.begin()->first;
  const std::map<uint32_t, std::string>& keys = by_count.begin()->second;
  if (keys.size() != count) {
    std::vector<uint32_t> missing;
    for (uint32_t i = 1; i <= count; ++i) {
      if (keys.count(i) == 0) missing.push_back(i);
    }
    return Status::FailedPrecondition("snapshot " + std::string(name) + " lacks part(s) " +
                                      JoinNumbers(missing) + " of " + std::to_string(count) +
                                      ": push them with --shard I/" + std::to_string(count) +
                                      " and merge again");
  }

  Manifest merged;
  merged.name = std::string(name);
  std::optional<ShardInfo> first;
  MergeResult out;
  for (const auto& [index, key] : keys) {
    CUTOVER_ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
    Result<Manifest> m = DecodeManifest(bytes);
    if (!m.ok()) {
      return Status::Corruption("part " + key + " cannot be decoded: " + m.status().message());
    }
    const std::string part = std::to_string(index) + "/" + std::to_string(count);
    if (!m->shard.has_value() || m->shard->index != index || m->shard->count != count ||
        m->name != name) {
      return Status::Corruption("part " + key + " does not describe itself as part " + part +
                                " of snapshot " + std::string(name));
    }
    for (const Entry& e : m->entries) {
      if (!InShard(e.path, ShardSpec{index, count})) {
        return Status::Corruption("part " + key + " holds \"" + e.path +
                                  "\", which belongs to another shard");
      }
    }
    if (!first.has_value()) {
      first = m->shard;
      merged.chunker = m->chunker;
      merged.created_ns = m->created_ns;
    } else if (m->shard->tree_entries != first->tree_entries ||
               m->shard->tree_digest != first->tree_digest) {
      return Status::FailedPrecondition(
          "part " + part + " saw another tree than part 1/" + std::to_string(count) + " (" +
          std::to_string(m->shard->tree_entries) + " entries against " +
          std::to_string(first->tree_entries) +
          "): the source changed between the shard pushes, or they pushed different "
          "directories; push every part again");
    } else if (!(m->chunker == merged.chunker)) {
      return Status::FailedPrecondition("part " + part + " was cut with other chunker parameters");
    }
    merged.created_ns = std::min(merged.created_ns, m->created_ns);
    for (Entry& e : m->entries) merged.entries.push_back(std::move(e));
    ++out.parts;
  }
  if (merged.entries.size() != first->tree_entries) {
    return Status::Corruption("the parts of snapshot " + std::string(name) + " hold " +
                              std::to_string(merged.entries.size()) + " entries of a tree of " +
                              std::to_string(first->tree_entries));
  }
  std::sort(merged.entries.begin(), merged.entries.end(),
            [](const Entry& a, const Entry& b) { return WalkOrderLess(a.path, b.path); });
  for (const Entry& e : merged.entries) {
    if (e.type == EntryType::kFile) ++out.files;
    if (e.type == EntryType::kDir) ++out.dirs;
    if (e.type == EntryType::kSymlink) ++out.symlinks;
    out.bytes += e.size;
    out.chunks += e.chunks.size();
  }
  CUTOVER_ASSIGN_OR_RETURN(std::string encoded, EncodeManifest(merged));
  if (options.dry_run) return out;
  out.snapshot_id = NewSnapshotId();
  CUTOVER_ASSIGN_OR_RETURN(std::string snapshot_key,
                           SeriesKey(name, merged.created_ns, out.snapshot_id));
  CUTOVER_RETURN_IF_ERROR(lock->Check());
  CUTOVER_RETURN_IF_ERROR(store.Put(snapshot_key, encoded));
  if (!options.keep_parts) {
    for (const auto& [index, key] : keys) {
      Status s = store.Delete(key);
      if (s.ok()) {
        ++out.parts_removed;
      } else {
        out.parts_left.push_back(key + ": " + s.message());
      }
    }
  }
  CUTOVER_RETURN_IF_ERROR(lock->Release());
  return out;
}

nlohmann::json MergeResultToJson(const MergeResult& r, const MergeOptions& opts,
                                 std::string_view name, std::string_view store_url) {
  return {{"schema", "cutover.datasync-merge/1"},
          {"snapshot", name},
          {"store", store_url},
          {"dry_run", opts.dry_run},
          {"parts", r.parts},
          {"files", r.files},
          {"dirs", r.dirs},
          {"symlinks", r.symlinks},
          {"bytes", r.bytes},
          {"chunks", r.chunks},
          {"parts_removed", r.parts_removed},
          {"parts_left", r.parts_left}};
}

std::string RenderMergeResult(const MergeResult& r, const MergeOptions& opts, std::string_view name,
                              std::string_view store_url) {
  const std::string counts = std::to_string(r.files) + " files, " + std::to_string(r.dirs) +
                             " dirs, " + std::to_string(r.symlinks) + " symlinks, " +
                             FormatBytes(r.bytes);
  if (opts.dry_run) {
    return "dry run: merging " + std::to_string(r.parts) + " parts would publish snapshot " +
           std::string(name) + " (" + counts + "); nothing was written\n";
  }
  std::string table = "merged " + std::to_string(r.parts) + " parts into snapshot " +
                      std::string(name) + " on " + std::string(store_url) + ": " + counts +
                      "; removed " + std::to_string(r.parts_removed) + " parts\n";
  for (const std::string& left : r.parts_left) table += "warning: part left: " + left + "\n";
  return table;
}

}  // namespace cutover
