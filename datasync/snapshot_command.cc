#include "datasync/snapshot_command.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/time_util.h"
#include "core/units.h"
#include "datasync/manifest.h"
#include "datasync/shard.h"
#include "datasync/snapshots.h"
#include "datasync/store_config.h"
#include "datasync/store_flags.h"

namespace cutover {
namespace {

using json = nlohmann::json;

// A store that has a config object, opened with the flags; InvalidArgument naming the URL when
// there is none (a URL with no store behind it).
Result<std::unique_ptr<Store>> OpenExistingStore(const std::string& verb, const std::string& url,
                                                 const StoreFlags& flags) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStoreWith(url, flags, 8));
  Result<ChunkerParams> config = ReadStoreConfig(*store);
  if (!config.ok() && config.status().code() == Code::kNotFound) {
    return Status::InvalidArgument(verb + ": no datasync store at " + store->Url() +
                                   " (it has no config object; a first push makes one)");
  }
  if (!config.ok()) return config.status();
  return store;
}

// A snapshot's (or part's) header and its file count and bytes, read as a stream (never all its
// entries at once) and checked against the store's chunker.
struct SnapshotSummary {
  Manifest header;
  uint64_t files = 0;
  uint64_t bytes = 0;
};
Result<SnapshotSummary> Summarize(Store& store, const std::string& key,
                                  const std::function<Status(const Entry&)>& on_entry = nullptr) {
  CUTOVER_ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  SnapshotSummary sum;
  Result<Manifest> header = ReadManifest(bytes, [&](Entry&& e) {
    if (e.type == EntryType::kFile) ++sum.files;
    sum.bytes += e.size;
    return on_entry ? on_entry(e) : Status::Ok();
  });
  if (!header.ok()) return header.status().WithContext("ls: " + key);
  CUTOVER_RETURN_IF_ERROR(CheckManifestChunker(store, header->chunker).WithContext("ls: " + key));
  sum.header = std::move(header).value();
  return sum;
}

json RefJson(const SnapshotRef& r) {
  json j = {{"id", r.id},
            {"name", r.name},
            {"created", LocalRfc3339(r.created_ns)},
            {"created_ns", r.created_ns}};
  if (r.legacy) j["legacy"] = true;
  return j;
}

struct LsArgs {
  std::string store;
  std::string id;
  StoreFlags store_flags;
};

// `ls STORE --id ID`: one snapshot's entries.
Result<int> RunLsSnapshot(const GlobalOptions& g, Store& store, const std::string& id) {
  CUTOVER_ASSIGN_OR_RETURN(SnapshotRef ref, FindSnapshot(store, id));
  json entries = json::array();
  std::string table = "TYPE\tMODE\tSIZE\tMODIFIED\tPATH\n";
  CUTOVER_ASSIGN_OR_RETURN(SnapshotSummary sum, Summarize(store, ref.key, [&](const Entry& e) {
                             char mode[8];
                             std::snprintf(mode, sizeof mode, "%04o", e.mode);
                             std::string line = std::string(EntryTypeName(e.type)) + "\t" + mode +
                                                "\t" + std::to_string(e.size) + "\t" +
                                                LocalRfc3339(e.mtime_ns) + "\t" + e.path;
                             if (e.type == EntryType::kSymlink) line += " -> " + e.target;
                             table += line + "\n";
                             if (g.json || !g.out.empty()) {
                               json j = {{"path", e.path},
                                         {"type", EntryTypeName(e.type)},
                                         {"mode", e.mode},
                                         {"size", e.size},
                                         {"mtime_ns", e.mtime_ns}};
                               if (e.type == EntryType::kSymlink) j["target"] = e.target;
                               entries.push_back(std::move(j));
                             }
                             return Status::Ok();
                           }));
  json doc = {{"schema", "cutover.datasync-ls-snapshot/1"},
              {"store", store.Url()},
              {"snapshot", RefJson(ref)},
              {"files", sum.files},
              {"bytes", sum.bytes},
              {"entries", std::move(entries)}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

Result<int> RunLs(const GlobalOptions& g, const LsArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenExistingStore("ls", a.store, a.store_flags));
  if (!a.id.empty()) return RunLsSnapshot(g, *store, a.id);
  // Every manifest is read once, for its counts; a legacy one's time comes from that read too.
  CUTOVER_ASSIGN_OR_RETURN(std::vector<SnapshotRef> refs,
                           ListSnapshots(*store, std::nullopt, /*legacy_times=*/false));
  std::vector<std::pair<SnapshotRef, SnapshotSummary>> rows;
  for (SnapshotRef& r : refs) {
    Result<SnapshotSummary> read = Summarize(*store, r.key);
    if (!read.ok() && read.status().code() == Code::kNotFound) continue;  // forgotten meanwhile
    CUTOVER_ASSIGN_OR_RETURN(SnapshotSummary sum, std::move(read));
    if (r.legacy) r.created_ns = sum.header.created_ns;
    rows.emplace_back(std::move(r), std::move(sum));
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return OldestFirst(a.first, b.first); });
  json list = json::array();
  std::string table = "ID\tNAME\tCREATED\tFILES\tBYTES\n";
  for (const auto& [r, sum] : rows) {
    json j = RefJson(r);
    j["files"] = sum.files;
    j["bytes"] = sum.bytes;
    list.push_back(std::move(j));
    table += r.id + "\t" + r.name + "\t" + LocalRfc3339(r.created_ns) + "\t" +
             std::to_string(sum.files) + "\t" + FormatBytes(sum.bytes) + "\n";
  }
  // Parts of sharded pushes not merged yet.
  std::vector<std::string> part_keys;
  CUTOVER_RETURN_IF_ERROR(store->List(kPartsPrefix, [&part_keys](std::string_view key, uint64_t) {
    part_keys.emplace_back(key);
    return Status::Ok();
  }));
  std::sort(part_keys.begin(), part_keys.end());
  json parts = json::array();
  if (!part_keys.empty()) table += "PART\tSHARD\tCREATED\tFILES\tBYTES\n";
  for (const std::string& key : part_keys) {
    std::string name;
    ShardSpec spec;
    if (!ParsePartKey(key, &name, &spec)) continue;  // merge names it; ls only lists
    CUTOVER_ASSIGN_OR_RETURN(SnapshotSummary sum, Summarize(*store, key));
    const Manifest& m = sum.header;
    parts.push_back({{"name", name},
                     {"index", spec.index},
                     {"count", spec.count},
                     {"files", sum.files},
                     {"bytes", sum.bytes},
                     {"created", LocalRfc3339(m.created_ns)},
                     {"created_ns", m.created_ns}});
    table += name + "\t" + std::to_string(spec.index) + "/" + std::to_string(spec.count) + "\t" +
             LocalRfc3339(m.created_ns) + "\t" + std::to_string(sum.files) + "\t" +
             FormatBytes(sum.bytes) + "\n";
  }
  json doc = {{"schema", "cutover.datasync-ls/1"},
              {"store", store->Url()},
              {"snapshots", std::move(list)},
              {"parts", std::move(parts)}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct SnapshotsArgs {
  std::string store;
  std::string name;
  StoreFlags store_flags;
};

// `snapshots STORE [--name N]`: ids, names and times from the keys alone (no manifest is read
// but those written before ids).
Result<int> RunSnapshots(const GlobalOptions& g, const SnapshotsArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenExistingStore("snapshots", a.store, a.store_flags));
  std::optional<std::string> name;
  if (!a.name.empty()) name = a.name;
  CUTOVER_ASSIGN_OR_RETURN(std::vector<SnapshotRef> refs, ListSnapshots(*store, name));
  json list = json::array();
  std::string table = "ID\tNAME\tCREATED\n";
  for (const SnapshotRef& r : refs) {
    list.push_back(RefJson(r));
    table += r.id + "\t" + r.name + "\t" + LocalRfc3339(r.created_ns) +
             (r.legacy ? "\t(written before snapshot ids)" : "") + "\n";
  }
  json doc = {
      {"schema", "cutover.datasync-snapshots/1"}, {"store", store->Url()}, {"snapshots", list}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct ForgetArgs {
  std::string store;
  std::vector<std::string> ids;
  std::string name;
  int keep_last = 0;
  bool dry_run = false;
  StoreFlags store_flags;
};

Result<int> RunForget(const GlobalOptions& g, const ForgetArgs& a) {
  if (a.ids.empty() == a.name.empty()) {
    return Status::InvalidArgument(
        "forget: give --id ID... or --name NAME --keep-last K (one of the two)");
  }
  if (!a.name.empty() && a.keep_last == 0) {
    return Status::InvalidArgument("forget: --name needs --keep-last K");
  }
  if (a.name.empty() && a.keep_last != 0) {
    return Status::InvalidArgument("forget: --keep-last needs --name");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenExistingStore("forget", a.store, a.store_flags));
  std::vector<SnapshotRef> doomed;
  if (!a.name.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(doomed, SnapshotsBeyondLast(*store, a.name, a.keep_last));
  } else {
    for (const std::string& id : a.ids) {  // all resolved before any is removed
      Result<SnapshotRef> ref = FindSnapshot(*store, id);
      if (!ref.ok()) return ref.status().WithContext("forget");
      doomed.push_back(std::move(ref).value());
    }
  }
  json list = json::array();
  std::string table;
  for (const SnapshotRef& r : doomed) {
    if (!a.dry_run) {
      Status s = store->Delete(r.key);
      if (!s.ok()) return s.WithContext("forget: snapshot " + r.id);
    }
    list.push_back(RefJson(r));
    table += std::string(a.dry_run ? "would forget " : "forgot ") + r.id + "\t" + r.name + "\t" +
             LocalRfc3339(r.created_ns) + "\n";
  }
  if (doomed.empty()) {
    table += "nothing to forget\n";
  } else if (!a.dry_run) {
    table += "run `cutover datasync gc " + store->Url() +
             "` to delete the chunks only these snapshots used\n";
  }
  json doc = {{"schema", "cutover.datasync-forget/1"},
              {"store", store->Url()},
              {"dry_run", a.dry_run},
              {"forgotten", list}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct DiffArgs {
  std::string store;
  std::string from, to;
  StoreFlags store_flags;
};

Result<int> RunDiff(const GlobalOptions& g, const DiffArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenExistingStore("diff", a.store, a.store_flags));
  Result<SnapshotRef> from = FindSnapshot(*store, a.from);
  if (!from.ok()) return from.status().WithContext("diff");
  Result<SnapshotRef> to = FindSnapshot(*store, a.to);
  if (!to.ok()) return to.status().WithContext("diff");
  Result<SnapshotDiff> d = DiffSnapshots(*store, *from, *to);
  if (!d.ok()) return d.status().WithContext("diff");
  std::string table;
  // One line per path, marked as restic marks them: + added, - removed, M content, U metadata.
  for (const auto& [mark, paths] :
       {std::pair<const char*, const std::vector<std::string>*>{"+", &d->added},
        {"-", &d->removed},
        {"M", &d->changed},
        {"U", &d->metadata}}) {
    for (const std::string& p : *paths) table += std::string(mark) + "  " + p + "\n";
  }
  table += "snapshot " + from->id + " -> " + to->id + ": " + std::to_string(d->added.size()) +
           " added, " + std::to_string(d->removed.size()) + " removed, " +
           std::to_string(d->changed.size()) + " changed, " + std::to_string(d->metadata.size()) +
           " with other metadata only\n";
  json doc = {{"schema", "cutover.datasync-diff/1"},
              {"store", store->Url()},
              {"from", RefJson(*from)},
              {"to", RefJson(*to)},
              {"added", d->added},
              {"removed", d->removed},
              {"changed", d->changed},
              {"metadata", d->metadata}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

}  // namespace

void AddSnapshotCommands(CLI::App& datasync, CommandContext& ctx) {
  auto ls_args = std::make_shared<LsArgs>();
  CLI::App* ls = datasync.add_subcommand(
      "ls", "List a store's snapshots with their files and bytes, or (--id) one snapshot's files");
  AddStoreArgs(ls, &ls_args->store, &ls_args->store_flags, kStoreEncrypt);
  ls->add_option("--id", ls_args->id, "List this snapshot's entries (an id or unique prefix)");
  SetCommand(ls, ctx, [&ctx, ls_args]() { return RunLs(ctx.global, *ls_args); });

  auto snaps = std::make_shared<SnapshotsArgs>();
  CLI::App* sn = datasync.add_subcommand(
      "snapshots",
      "List a store's snapshots (every push makes one, with its own id; a name is the series "
      "of its pushes, newest last)");
  AddStoreArgs(sn, &snaps->store, &snaps->store_flags, kStoreEncrypt);
  sn->add_option("--name", snaps->name, "Only this name's series");
  SetCommand(sn, ctx, [&ctx, snaps]() { return RunSnapshots(ctx.global, *snaps); });

  auto forget = std::make_shared<ForgetArgs>();
  CLI::App* fg = datasync.add_subcommand(
      "forget",
      "Remove snapshots by id, or all but the newest K of a name; `gc` then deletes the chunks "
      "no remaining snapshot uses");
  AddStoreArgs(fg, &forget->store, &forget->store_flags, kStoreEncrypt);
  fg->add_option("--id", forget->ids, "A snapshot id (or unique prefix); repeatable");
  fg->add_option("--name", forget->name, "The series to thin out (with --keep-last)");
  fg->add_option("--keep-last", forget->keep_last, "Keep the newest K snapshots of --name")
      ->check(IntRange(1, 1000000));
  fg->add_flag("--dry-run", forget->dry_run, "Say what would be forgotten; remove nothing");
  SetCommand(fg, ctx, [&ctx, forget]() { return RunForget(ctx.global, *forget); });

  auto diff = std::make_shared<DiffArgs>();
  CLI::App* df = datasync.add_subcommand(
      "diff",
      "The paths added (+), removed (-), changed in content (M) or only in mode or time (U) "
      "from snapshot ID1 to ID2");
  AddStoreArgs(df, &diff->store, &diff->store_flags, kStoreEncrypt);
  df->add_option("ID1", diff->from, "The older snapshot's id (or unique prefix)")->required();
  df->add_option("ID2", diff->to, "The newer snapshot's id (or unique prefix)")->required();
  SetCommand(df, ctx, [&ctx, diff]() { return RunDiff(ctx.global, *diff); });
}

}  // namespace cutover
