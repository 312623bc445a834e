#include "datasync/command.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "core/progress.h"
#include "core/time_util.h"
#include "core/units.h"
#include "datasync/check.h"
#include "datasync/encrypted_store.h"
#include "datasync/gc.h"
#include "datasync/manifest.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/shard.h"
#include "datasync/snapshot_command.h"
#include "datasync/state.h"
#include "datasync/store.h"
#include "datasync/store_config.h"
#include "datasync/store_flags.h"
#include "datasync/verify.h"

namespace cutover {
namespace {

struct PushArgs {
  std::string src;
  std::string store;
  std::string name;
  uint64_t min = ChunkerParams{}.min_size;
  uint64_t avg = ChunkerParams{}.avg_size;
  uint64_t max = ChunkerParams{}.max_size;
  int jobs = 8;
  std::string bandwidth = "10Gbit";  // plan only
  bool dry_run = false;              // push only
  std::string shard;                 // push only: "I/N"
  StoreFlags store_flags;
};

struct PullArgs {
  std::string store;
  std::string name;
  std::string id;
  std::string dest;
  int jobs = 8;
  bool dry_run = false;
  bool delete_extra = false;
  StoreFlags store_flags;
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string UserName() {
  if (struct passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return std::to_string(::getuid());
}

// The progress options: as ProgressOptionsFromGlobal, except that plain lines on a non-terminal
// stderr are only written when asked for (--progress=plain), so scripted runs keep stderr clean.
Result<ProgressOptions> TransferProgress(const GlobalOptions& g) {
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions o, ProgressOptionsFromGlobal(g));
  if (o.mode == ProgressMode::kLines && g.progress != "plain") o.mode = ProgressMode::kNone;
  return o;
}

Result<std::unique_ptr<DatasyncState>> OpenState(const GlobalOptions& g) {
  return DatasyncState::Open(ResolveDbPath(g));
}

// Says that a lock was found stale because its holder is gone (LockOptions::on_gone).
void SayLockGone(const std::string& line) { std::fprintf(stderr, "cutover: %s\n", line.c_str()); }

// --name or --id, exactly one: the snapshot a pull or verify reads.
Result<SnapshotSelector> Selector(const std::string& verb, const std::string& name,
                                  const std::string& id) {
  if (name.empty() == id.empty()) {
    return Status::InvalidArgument(verb + ": give --name NAME (the newest snapshot of that name) "
                                          "or --id ID, one of the two");
  }
  if (!id.empty()) return SnapshotSelector::Id(id);
  return SnapshotSelector(name);
}

// Records one transfer in the audit table; a failure to record is reported, never fatal.
void Audit(DatasyncState* state, AuditRecord r, const Status& outcome) {
  if (state == nullptr) return;
  r.who = UserName();
  r.result = outcome.ok() ? "ok" : outcome.message();
  Status s = state->RecordAudit(r);
  if (!s.ok()) std::fprintf(stderr, "cutover: audit: %s\n", s.message().c_str());
}

Result<int> RunPush(const GlobalOptions& g, const PushArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(ChunkerParams params, ChunkerParams::Make(a.min, a.avg, a.max));
  std::optional<ShardSpec> shard;
  if (!a.shard.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(shard, ParseShard(a.shard));
  }
  // What this push publishes: the snapshot, or its part for a later merge.
  const std::string what =
      shard ? "part " + a.shard + " of snapshot " + a.name : "snapshot " + a.name;
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStoreWith(a.store, a.store_flags, a.jobs));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, TransferProgress(g));
  Progress progress(popts, "push", 0);
  progress.StartTimer();
  PushOptions opts;
  opts.name = a.name;
  opts.chunker = params;
  opts.jobs = a.jobs;
  opts.state = state.get();
  opts.dry_run = a.dry_run;
  opts.shard = shard;
  opts.lock.on_gone = SayLockGone;
  opts.on_total = [&progress](uint64_t t) { progress.SetTotal(t); };
  opts.on_confirmed = [&progress](uint64_t n) { progress.Add(n); };
  AuditRecord audit{
      NowNs(), "", "push", a.src, store->Url(), shard ? a.name + " part " + a.shard : a.name,
      0,       ""};
  Result<PushResult> pushed = Push(a.src, *store, opts);
  progress.Finish(pushed.status());
  if (pushed.ok()) audit.bytes = pushed->uploaded_bytes;
  if (!a.dry_run) Audit(state.get(), audit, pushed.status());  // a dry run writes no state
  if (!pushed.ok()) return pushed.status();
  const PushResult& r = *pushed;
  nlohmann::json doc = {{"schema", "cutover.datasync-push/1"},
                        {"snapshot", a.name},
                        {"id", r.snapshot_id},
                        {"store", store->Url()},
                        {"files", r.files},
                        {"dirs", r.dirs},
                        {"symlinks", r.symlinks},
                        {"bytes", r.bytes},
                        {"chunks", r.chunks},
                        {"uploaded_objects", r.uploaded_objects},
                        {"uploaded_bytes", r.uploaded_bytes},
                        {"files_read", r.files_read},
                        {"files_cached", r.files_cached},
                        {"hashed_bytes", r.hashed_bytes},
                        {"scanned_bytes", r.scanned_bytes},
                        {"skipped", r.skipped}};
  if (shard) doc["shard"] = {{"index", shard->index}, {"count", shard->count}};
  if (a.dry_run) {
    // What Push counted as uploaded is what a real push would upload.
    doc["dry_run"] = true;
    doc["would_upload_objects"] = std::exchange(doc["uploaded_objects"], 0);
    doc["would_upload_bytes"] = std::exchange(doc["uploaded_bytes"], 0);
    std::string table =
        "dry run: " + what + " of " + std::to_string(r.files) + " files (" + FormatBytes(r.bytes) +
        ") would upload " + std::to_string(r.uploaded_objects) + " objects (" +
        FormatBytes(r.uploaded_bytes) + ") to " + store->Url() + "; nothing was written\n";
    CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
    return 0;
  }
  std::string table = "pushed " + what + (r.snapshot_id.empty() ? "" : " " + r.snapshot_id) +
                      " to " + store->Url() + ": " + std::to_string(r.files) +
                      " files, " + std::to_string(r.dirs) + " dirs, " + std::to_string(r.symlinks) +
                      " symlinks, " + std::to_string(r.bytes) + " bytes; uploaded " +
                      std::to_string(r.uploaded_objects) + " objects (" +
                      std::to_string(r.uploaded_bytes) + " bytes)\n";
  for (const std::string& s : r.skipped) table += "skipped " + s + "\n";
  if (shard) {
    table += "when every part of " + std::to_string(shard->count) +
             " is pushed, publish them: cutover datasync merge " + store->Url() + " --name " +
             a.name + "\n";
  }
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

Result<int> RunPull(const GlobalOptions& g, const PullArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStoreWith(a.store, a.store_flags, a.jobs));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, TransferProgress(g));
  Progress progress(popts, "pull", 0);
  progress.StartTimer();
  PullOptions opts;
  opts.jobs = a.jobs;
  opts.dry_run = a.dry_run;
  opts.on_total = [&progress](uint64_t t) { progress.SetTotal(t); };
  opts.on_confirmed = [&progress](uint64_t n) { progress.Add(n); };
  opts.state = a.dry_run ? nullptr : state.get();
  opts.delete_extra = a.delete_extra;
  CUTOVER_ASSIGN_OR_RETURN(SnapshotSelector which, Selector("pull", a.name, a.id));
  AuditRecord audit{NowNs(), "", "pull", store->Url(), a.dest, which.Label(), 0, ""};
  auto r = Pull(*store, which, a.dest, opts);
  progress.Finish(r.status());
  if (r.ok()) audit.bytes = r->downloaded_bytes;
  if (!a.dry_run) Audit(state.get(), audit, r.status());  // a dry run writes no state
  if (!r.ok() && r.status().code() == Code::kCorruption) {
    // Corrupt data in the store is a finding about the store (exit 1), not bad input.
    std::fprintf(stderr, "cutover: %s\n", r.status().message().c_str());
    return 1;
  }
  if (!r.ok()) return r.status();
  nlohmann::json doc = {{"schema", "cutover.datasync-pull/1"},
                        {"snapshot", r->snapshot.name},
                        {"id", r->snapshot.id},
                        {"store", store->Url()},
                        {"dest", a.dest},
                        {"files", r->files},
                        {"dirs", r->dirs},
                        {"symlinks", r->symlinks},
                        {"bytes", r->bytes},
                        {"downloaded_bytes", r->downloaded_bytes},
                        {"reused_bytes", r->reused_bytes}};
  std::string deleted;
  if (a.delete_extra) {
    doc[a.dry_run ? "would_delete" : "deleted"] = r->deleted;
    for (const std::string& path : r->deleted) {
      deleted += (a.dry_run ? "would delete " : "deleted ") + path + "\n";
    }
  }
  if (a.dry_run) {
    doc["dry_run"] = true;
    doc["would_download_bytes"] = std::exchange(doc["downloaded_bytes"], 0);
    std::string table = "dry run: pulling snapshot " + r->snapshot.name + " " + r->snapshot.id +
                        " (" + std::to_string(r->files) +
                        " files, " + FormatBytes(r->bytes) + ") into " + a.dest +
                        " would download " + FormatBytes(r->downloaded_bytes) + " and reuse " +
                        FormatBytes(r->reused_bytes) + " of its files; nothing was written\n";
    table = deleted + table;
    CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
    return 0;
  }
  std::string table =
      "pulled snapshot " + r->snapshot.name + " " + r->snapshot.id + " into " + a.dest + ": " +
      std::to_string(r->files) +
      " files, " + std::to_string(r->dirs) + " dirs, " + std::to_string(r->symlinks) +
      " symlinks, " + std::to_string(r->bytes) + " bytes" +
      (r->reused_bytes > 0
           ? " (" + std::to_string(r->reused_bytes) + " of them already in " + a.dest + ")"
           : std::string()) +
      "\n";
  table = deleted + table;
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct VerifyArgs {
  std::string store;
  std::string name;
  std::string id;
  std::string dest;
  int jobs = 8;
  bool allow_extra = false;
  StoreFlags store_flags;
};

Result<int> RunVerify(const GlobalOptions& g, const VerifyArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStoreWith(a.store, a.store_flags, a.jobs));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  CUTOVER_ASSIGN_OR_RETURN(SnapshotSelector which, Selector("verify", a.name, a.id));
  CUTOVER_ASSIGN_OR_RETURN(VerifyResult r,
                           Verify(*store, which, a.dest, a.jobs, state.get(), a.allow_extra));
  nlohmann::json doc = {{"schema", "cutover.datasync-verify/1"},
                        {"snapshot", r.snapshot.name},
                        {"id", r.snapshot.id},
                        {"store", store->Url()},
                        {"dest", a.dest},
                        {"chunks_checked", r.chunks_checked},
                        {"bytes_checked", r.bytes_checked},
                        {"files_checked", r.files_checked},
                        {"failures", r.failures},
                        {"ok", r.failures.empty()}};
  std::string table;
  for (const std::string& f : r.failures) table += "FAIL " + f + "\n";
  table += std::string(r.failures.empty() ? "verified" : "FAILED") + " snapshot " +
           r.snapshot.name + " " + r.snapshot.id + ": " +
           std::to_string(r.chunks_checked) + " chunks (" + FormatBytes(r.bytes_checked) + ")" +
           (a.dest.empty() ? "" : ", " + std::to_string(r.files_checked) + " files in " + a.dest) +
           ", " + std::to_string(r.failures.size()) + " failures\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return r.failures.empty() ? 0 : 1;
}

Result<int> RunPlan(const GlobalOptions& g, const PushArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(double bw, ParseBandwidth(a.bandwidth));
  if (!(bw > 0)) return Status::InvalidArgument("--bandwidth must be above 0");
  CUTOVER_ASSIGN_OR_RETURN(ChunkerParams params, ChunkerParams::Make(a.min, a.avg, a.max));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStoreWith(a.store, a.store_flags, a.jobs));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  PushOptions opts;
  opts.name = a.name.empty() ? "plan" : a.name;
  opts.chunker = params;
  opts.jobs = a.jobs;
  opts.state = state.get();
  opts.dry_run = true;
  CUTOVER_ASSIGN_OR_RETURN(PushResult r, Push(a.src, *store, opts));
  double seconds = static_cast<double>(r.uploaded_bytes) / bw;
  nlohmann::json doc = {
      {"schema", "cutover.datasync-plan/1"},
      {"source", a.src},
      {"store", store->Url()},
      {"files", r.files},
      {"bytes", r.bytes},
      {"chunks", r.chunks},
      {"send_objects", r.uploaded_objects},
      {"send_bytes", r.uploaded_bytes},
      {"dedup_bytes", r.bytes > r.uploaded_bytes ? r.bytes - r.uploaded_bytes : 0},
      {"bandwidth_bytes_per_s", bw},
      {"estimated_seconds", seconds}};
  std::string table =
      "plan " + a.src + " -> " + store->Url() + ": " + std::to_string(r.files) + " files, " +
      FormatBytes(r.bytes) + "; would send " + std::to_string(r.uploaded_objects) + " objects, " +
      FormatBytes(r.uploaded_bytes) + ", about " +
      FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000))) + " at " +
      FormatRate(bw) + "\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct CheckArgs {
  std::string store;
  std::string sample = "4MiB";
  StoreFlags store_flags;
};

Result<int> RunCheck(const GlobalOptions& g, const CheckArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(uint64_t sample, ParseBytes(a.sample));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStoreWith(a.store, a.store_flags, 1));
  CheckOptions opts;
  opts.sample_bytes = sample;
  CUTOVER_ASSIGN_OR_RETURN(CheckResult r, CheckStore(*store, opts));
  nlohmann::json steps = nlohmann::json::array();
  std::string table = "STEP\tRESULT\tTIME\tDETAIL\n";
  for (const CheckStep& st : r.steps) {
    nlohmann::json j = {
        {"name", st.name}, {"result", st.result}, {"detail", st.detail}, {"seconds", st.seconds}};
    std::string detail = st.detail;
    if (st.bytes_per_s) {
      j["bytes_per_s"] = *st.bytes_per_s;
      detail += " (" + FormatRate(*st.bytes_per_s) + ")";
    }
    steps.push_back(std::move(j));
    table += st.name + "\t" + st.result + "\t" +
             FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(st.seconds * 1000))) +
             "\t" + detail + "\n";
  }
  nlohmann::json doc = {{"schema", "cutover.datasync-check/1"},
                        {"store", store->Url()},
                        {"ok", r.ok},
                        {"probe_key", r.probe_key},
                        {"probe_left", r.probe_left},
                        {"snapshots", r.snapshots},
                        {"config_present", r.config_present},
                        {"sample_bytes", sample},
                        {"steps", steps}};
  if (r.latency_ms) doc["latency_ms"] = *r.latency_ms;
  table += std::string(r.ok ? "store ok: " : "store FAILED: ") + store->Url() +
           (r.ok ? " allows list, read, write, ranged read and delete"
                 : " refuses what push or pull needs (see the failed steps)") +
           "\n";
  if (r.probe_left) table += "the probe object " + r.probe_key + " could not be removed\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return r.ok ? 0 : 1;
}

struct GcArgs {
  std::string store;
  std::string grace = "1h";
  int jobs = 8;
  bool dry_run = false;
  StoreFlags store_flags;
};

Result<int> RunGc(const GlobalOptions& g, const GcArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::chrono::milliseconds grace, ParseDuration(a.grace));
  if (grace < kMinLockGrace) {
    return Status::InvalidArgument("--grace " + a.grace + " is under " +
                                   FormatDuration(kMinLockGrace) +
                                   " (pushes refresh their lock every 5m)");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStoreWith(a.store, a.store_flags, a.jobs));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, TransferProgress(g));
  Progress progress(popts, "gc", 0);
  progress.StartTimer();
  GcOptions opts;
  opts.jobs = a.jobs;
  opts.dry_run = a.dry_run;
  opts.lock.stale_after = grace;
  opts.lock.on_gone = SayLockGone;
  opts.on_deleted = [&progress](uint64_t n) { progress.Add(n); };
  AuditRecord audit{NowNs(), "", "gc", store->Url(), "", "", 0, ""};
  Result<GcResult> r = CollectGarbage(*store, opts);
  progress.Finish(r.status());
  if (r.ok()) audit.bytes = r->unreferenced_bytes;
  if (!a.dry_run) Audit(state.get(), audit, r.status());
  if (!r.ok()) return r.status();
  nlohmann::json doc = {{"schema", "cutover.datasync-gc/1"},
                        {"store", store->Url()},
                        {"dry_run", a.dry_run},
                        {"grace_s", grace.count() / 1000},
                        {"snapshots", r->snapshots},
                        {"referenced_objects", r->referenced_objects},
                        {"referenced_bytes", r->referenced_bytes},
                        {"missing_objects", r->missing_objects},
                        {"foreign_objects", r->foreign_objects},
                        {"stale_locks_removed", r->stale_locks_removed},
                        {"leftovers_removed", r->leftovers_removed}};
  doc[a.dry_run ? "would_delete_objects" : "deleted_objects"] = r->unreferenced_objects;
  doc[a.dry_run ? "would_delete_bytes" : "deleted_bytes"] = r->unreferenced_bytes;
  std::string table = std::string(a.dry_run ? "dry run: gc would delete " : "gc deleted ") +
                      std::to_string(r->unreferenced_objects) + " unreferenced objects (" +
                      FormatBytes(r->unreferenced_bytes) + ") from " + store->Url() + "; kept " +
                      std::to_string(r->referenced_objects) + " (" +
                      FormatBytes(r->referenced_bytes) + ") of " + std::to_string(r->snapshots) +
                      " snapshots\n";
  if (r->missing_objects > 0) {
    table += "warning: " + std::to_string(r->missing_objects) +
             " objects the snapshots name are missing from the store (run verify)\n";
  }
  if (r->foreign_objects > 0) {
    table += "left " + std::to_string(r->foreign_objects) +
             " objects under chunks/ or packs/ that datasync did not write\n";
  }
  if (r->leftovers_removed > 0) {
    table += "removed " + std::to_string(r->leftovers_removed) +
             " temporaries that killed uploads left in the store\n";
  }
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

struct MergeArgs {
  std::string store;
  std::string name;
  bool keep_parts = false;
  bool dry_run = false;
  StoreFlags store_flags;
};

Result<int> RunMerge(const GlobalOptions& g, const MergeArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStoreWith(a.store, a.store_flags, 8));
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state, OpenState(g));
  MergeOptions opts;
  opts.keep_parts = a.keep_parts;
  opts.dry_run = a.dry_run;
  AuditRecord audit{NowNs(), "", "merge", store->Url(), store->Url(), a.name, 0, ""};
  Result<MergeResult> r = MergeParts(*store, a.name, opts);
  if (r.ok()) audit.bytes = r->bytes;
  if (!a.dry_run) Audit(state.get(), audit, r.status());
  if (!r.ok()) return r.status();
  nlohmann::json doc = {{"schema", "cutover.datasync-merge/1"},
                        {"snapshot", a.name},
                        {"store", store->Url()},
                        {"dry_run", a.dry_run},
                        {"parts", r->parts},
                        {"files", r->files},
                        {"dirs", r->dirs},
                        {"symlinks", r->symlinks},
                        {"bytes", r->bytes},
                        {"chunks", r->chunks},
                        {"parts_removed", r->parts_removed},
                        {"parts_left", r->parts_left}};
  std::string counts = std::to_string(r->files) + " files, " + std::to_string(r->dirs) + " dirs, " +
                       std::to_string(r->symlinks) + " symlinks, " + FormatBytes(r->bytes);
  std::string table;
  if (a.dry_run) {
    table = "dry run: merging " + std::to_string(r->parts) + " parts would publish snapshot " +
            a.name + " (" + counts + "); nothing was written\n";
  } else {
    table = "merged " + std::to_string(r->parts) + " parts into snapshot " + a.name + " on " +
            store->Url() + ": " + counts + "; removed " + std::to_string(r->parts_removed) +
            " parts\n";
    for (const std::string& left : r->parts_left) table += "warning: part left: " + left + "\n";
  }
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

Result<int> RunHistory(const GlobalOptions& g, int limit) {
  // Read-only: a missing state file is an error, never created.
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<DatasyncState> state,
                           DatasyncState::Open(ResolveDbPath(g), OpenOptions{.must_exist = true}));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<AuditRecord> rows, state->History(limit));
  nlohmann::json list = nlohmann::json::array();
  std::string table = "WHEN\tWHO\tWHAT\tSNAPSHOT\tSOURCE\tDESTINATION\tBYTES\tRESULT\n";
  for (const AuditRecord& r : rows) {
    list.push_back({{"when", LocalRfc3339(r.when_ns)},
                    {"when_ns", r.when_ns},
                    {"who", r.who},
                    {"what", r.what},
                    {"snapshot", r.snapshot},
                    {"source", r.source},
                    {"destination", r.destination},
                    {"bytes", r.bytes},
                    {"result", r.result}});
    table += LocalRfc3339(r.when_ns) + "\t" + r.who + "\t" + r.what + "\t" + r.snapshot + "\t" +
             r.source + "\t" + r.destination + "\t" + std::to_string(r.bytes) + "\t" + r.result +
             "\n";
  }
  nlohmann::json doc = {{"schema", "cutover.datasync-history/1"}, {"transfers", list}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

}  // namespace

void AddDatasyncCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "datasync", "Move datasets in content-defined chunks to and from dumb stores");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);

  auto push = std::make_shared<PushArgs>();
  CLI::App* p = cmd->add_subcommand("push",
                                    "Upload a directory as a snapshot to a store: file:///path, "
                                    "http(s)://host/path (WebDAV), s3://bucket/prefix");
  p->add_option("SRC_DIR", push->src, "Directory to push")->required();
  AddStoreArgs(p, &push->store, &push->store_flags, kStoreEncrypt | kStoreBwlimit);
  p->add_option("--name", push->name,
                "Snapshot name: each push adds a snapshot with a new id to the name's series "
                "(and reuses what the newest one holds)")
      ->required();
  p->add_option("--chunk-min", push->min, "Minimum chunk size in bytes (a new store only)");
  p->add_option("--chunk-avg", push->avg, "Average chunk size in bytes, a power of two");
  p->add_option("--chunk-max", push->max, "Maximum chunk size in bytes");
  p->add_option("--jobs", push->jobs, "Parallel transfers (default 8)")->check(IntRange(1, 256));
  p->add_flag("--dry-run", push->dry_run,
              "Read and chunk SRC_DIR and say what would be uploaded; write nothing to the store "
              "or the state");
  p->add_option("--shard", push->shard,
                "Push only shard I of N (e.g. 2/4: the entries whose path hashes to 2), as a part "
                "that `datasync merge` publishes once all N are pushed; run one per machine");
  SetCommand(p, ctx, [&ctx, push]() { return RunPush(ctx.global, *push); });

  auto pull = std::make_shared<PullArgs>();
  CLI::App* l = cmd->add_subcommand("pull", "Restore a snapshot from a store into a directory");
  AddStoreArgs(l, &pull->store, &pull->store_flags, kStoreEncrypt | kStoreBwlimit);
  l->add_option("--name", pull->name, "Snapshot name: the newest snapshot of that name");
  l->add_option("--id", pull->id, "Or a snapshot id (or unique prefix; `datasync snapshots`)");
  l->add_option("DEST_DIR", pull->dest, "Directory to restore into")->required();
  l->add_option("--jobs", pull->jobs, "Parallel transfers (default 8)")->check(IntRange(1, 256));
  l->add_flag("--dry-run", pull->dry_run,
              "Say what would be downloaded and what DEST's files already hold; write nothing");
  l->add_flag("--delete", pull->delete_extra,
              "Remove what DEST_DIR holds that the snapshot does not name (inside DEST_DIR only, "
              "never through a symlink; with --dry-run, list it)");
  SetCommand(l, ctx, [&ctx, pull]() { return RunPull(ctx.global, *pull); });

  auto ver = std::make_shared<VerifyArgs>();
  CLI::App* v = cmd->add_subcommand("verify", "Check every chunk of a snapshot (and DEST_DIR)");
  AddStoreArgs(v, &ver->store, &ver->store_flags, kStoreEncrypt | kStoreBwlimit);
  v->add_option("--name", ver->name, "Snapshot name: the newest snapshot of that name");
  v->add_option("--id", ver->id, "Or a snapshot id (or unique prefix; `datasync snapshots`)");
  v->add_option("DEST_DIR", ver->dest, "Also compare this directory with the snapshot");
  v->add_option("--jobs", ver->jobs, "Parallel reads (default 8)")->check(IntRange(1, 256));
  v->add_flag("--allow-extra", ver->allow_extra,
              "Accept entries in DEST_DIR that the snapshot does not name (reported otherwise)");
  SetCommand(v, ctx, [&ctx, ver]() { return RunVerify(ctx.global, *ver); });

  auto plan = std::make_shared<PushArgs>();
  CLI::App* pl = cmd->add_subcommand("plan", "What a push would send after dedup, and how long");
  pl->add_option("SRC_DIR", plan->src, "Directory to push")->required();
  AddStoreArgs(pl, &plan->store, &plan->store_flags, kStoreEncrypt);
  pl->add_option("--name", plan->name, "Snapshot name (its previous version's packs are reused)");
  pl->add_option("--bandwidth", plan->bandwidth, "Link speed, e.g. 10Gbit, 100M (default 10Gbit)");
  pl->add_option("--chunk-min", plan->min, "Minimum chunk size in bytes (a new store only)");
  pl->add_option("--chunk-avg", plan->avg, "Average chunk size in bytes, a power of two");
  pl->add_option("--chunk-max", plan->max, "Maximum chunk size in bytes");
  pl->add_option("--jobs", plan->jobs, "Parallel workers (default 8)")->check(IntRange(1, 256));
  SetCommand(pl, ctx, [&ctx, plan]() { return RunPlan(ctx.global, *plan); });

  AddSnapshotCommands(*cmd, ctx);

  auto check = std::make_shared<CheckArgs>();
  CLI::App* ck = cmd->add_subcommand(
      "check",
      "Prove a store allows what push and pull need (list, write, read, ranged read, delete of "
      "a probe object under check/), with round-trip latency and a throughput sample; exit 1 "
      "when a step fails");
  AddStoreArgs(ck, &check->store, &check->store_flags, kStoreFlagsOnly);
  ck->add_option("--sample", check->sample,
                 "Probe object size for the throughput sample "
                 "(default 4MiB)");
  SetCommand(ck, ctx, [&ctx, check]() { return RunCheck(ctx.global, *check); });

  auto limit = std::make_shared<int>(100);
  CLI::App* h =
      cmd->add_subcommand("history", "List past pushes, pulls, merges and gc runs (audit table)");
  h->add_option("--limit", *limit, "Newest N transfers (default 100)");
  SetCommand(h, ctx, [&ctx, limit]() { return RunHistory(ctx.global, *limit); });

  auto gc = std::make_shared<GcArgs>();
  CLI::App* gcc = cmd->add_subcommand(
      "gc",
      "Delete the chunks and packs no snapshot references (mark and sweep) under a store lock: "
      "gc refuses to run beside a live push, and a push started meanwhile fails (exit 2)");
  AddStoreArgs(gcc, &gc->store, &gc->store_flags, kStoreEncrypt);
  gcc->add_option("--grace", gc->grace,
                  "A lock not refreshed for this long is stale and ignored, e.g. 2h "
                  "(default 1h, at least 15m)");
  gcc->add_option("--jobs", gc->jobs, "Parallel deletes (default 8)")->check(IntRange(1, 256));
  gcc->add_flag("--dry-run", gc->dry_run,
                "Say what would be deleted; take no lock, delete nothing");
  SetCommand(gcc, ctx, [&ctx, gc]() { return RunGc(ctx.global, *gc); });
  auto merge = std::make_shared<MergeArgs>();
  CLI::App* mg = cmd->add_subcommand(
      "merge",
      "Publish the parts of a sharded push (push --shard I/N on N machines) as one snapshot, "
      "once all N are in the store and saw the same tree; then remove the parts");
  AddStoreArgs(mg, &merge->store, &merge->store_flags, kStoreEncrypt);
  mg->add_option("--name", merge->name, "Snapshot name the parts were pushed with")->required();
  mg->add_flag("--keep-parts", merge->keep_parts, "Leave the parts in the store");
  mg->add_flag("--dry-run", merge->dry_run, "Check the parts and count; write nothing");
  SetCommand(mg, ctx, [&ctx, merge]() { return RunMerge(ctx.global, *merge); });
}

}  // namespace cutover
