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
    return Status::InvalidArgument(verb +
                                   ": give --name NAME (the newest snapshot of that name) "
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

// What the commands that move or delete objects share: the store opened with the flags, the local
// state, a progress display (started), and the audit row each leaves.
class Session {
 public:
  static Result<std::unique_ptr<Session>> Open(const GlobalOptions& g, const char* verb,
                                               const std::string& url, const StoreFlags& flags,
                                               int jobs) {
    auto s = std::unique_ptr<Session>(new Session());
    CUTOVER_ASSIGN_OR_RETURN(s->store_, OpenStoreWith(url, flags, jobs));
    CUTOVER_ASSIGN_OR_RETURN(s->state_, OpenState(g));
    CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, TransferProgress(g));
    s->progress_ = std::make_unique<Progress>(popts, verb, 0);
    s->progress_->StartTimer();
    s->verb_ = verb;
    return s;
  }

  Store& store() const { return *store_; }
  DatasyncState* state() const { return state_.get(); }
  std::function<void(uint64_t)> OnTotal() {
    return [this](uint64_t t) { progress_->SetTotal(t); };
  }
  std::function<void(uint64_t)> OnDone() {
    return [this](uint64_t n) { progress_->Add(n); };
  }

  // Ends the progress display with `outcome` and, unless `dry_run` (which writes no state),
  // records the audit row: `source` to `destination`, `snapshot`, `bytes` moved.
  void Finish(const Status& outcome, bool dry_run, std::string source, std::string destination,
              std::string snapshot, uint64_t bytes) {
    progress_->Finish(outcome);
    if (dry_run) return;
    Audit(state_.get(),
          AuditRecord{started_ns_, "", verb_, std::move(source), std::move(destination),
                      std::move(snapshot), outcome.ok() ? bytes : 0, ""},
          outcome);
  }

 private:
  Session() = default;
  std::unique_ptr<Store> store_;
  std::unique_ptr<DatasyncState> state_;
  std::unique_ptr<Progress> progress_;
  std::string verb_;
  int64_t started_ns_ = NowNs();
};

Result<int> RunPush(const GlobalOptions& g, const PushArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(ChunkerParams params, ChunkerParams::Make(a.min, a.avg, a.max));
  std::optional<ShardSpec> shard;
  if (!a.shard.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(shard, ParseShard(a.shard));
  }
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
                           Session::Open(g, "push", a.store, a.store_flags, a.jobs));
  PushOptions opts;
  opts.name = a.name;
  opts.chunker = params;
  opts.jobs = a.jobs;
  opts.state = s->state();
  opts.dry_run = a.dry_run;
  opts.shard = shard;
  opts.lock.on_gone = SayLockGone;
  opts.on_total = s->OnTotal();
  opts.on_confirmed = s->OnDone();
  Result<PushResult> pushed = Push(a.src, s->store(), opts);
  s->Finish(pushed.status(), a.dry_run, a.src, s->store().Url(),
            shard ? a.name + " part " + a.shard : a.name, pushed.ok() ? pushed->uploaded_bytes : 0);
  if (!pushed.ok()) return pushed.status();
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, PushResultToJson(*pushed, opts, s->store().Url()),
                                     RenderPushResult(*pushed, opts, s->store().Url())));
  return 0;
}

Result<int> RunPull(const GlobalOptions& g, const PullArgs& a) {
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
                           Session::Open(g, "pull", a.store, a.store_flags, a.jobs));
  PullOptions opts;
  opts.jobs = a.jobs;
  opts.dry_run = a.dry_run;
  opts.on_total = s->OnTotal();
  opts.on_confirmed = s->OnDone();
  opts.state = a.dry_run ? nullptr : s->state();
  opts.delete_extra = a.delete_extra;
  CUTOVER_ASSIGN_OR_RETURN(SnapshotSelector which, Selector("pull", a.name, a.id));
  auto r = Pull(s->store(), which, a.dest, opts);
  s->Finish(r.status(), a.dry_run, s->store().Url(), a.dest, which.Label(),
            r.ok() ? r->downloaded_bytes : 0);
  if (!r.ok() && r.status().code() == Code::kCorruption) {
    // Corrupt data in the store is a finding about the store (exit 1), not bad input.
    std::fprintf(stderr, "cutover: %s\n", r.status().message().c_str());
    return 1;
  }
  if (!r.ok()) return r.status();
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, PullResultToJson(*r, opts, s->store().Url(), a.dest),
                                     RenderPullResult(*r, opts, s->store().Url(), a.dest)));
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
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, VerifyResultToJson(r, store->Url(), a.dest),
                                     RenderVerifyResult(r, store->Url(), a.dest)));
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
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, PlanToJson(r, a.src, store->Url(), bw),
                                     RenderPlan(r, a.src, store->Url(), bw)));
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
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, CheckResultToJson(r, opts, store->Url()),
                                     RenderCheckResult(r, opts, store->Url())));
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
  CUTOVER_ASSIGN_OR_RETURN(std::unique_ptr<Session> s,
                           Session::Open(g, "gc", a.store, a.store_flags, a.jobs));
  GcOptions opts;
  opts.jobs = a.jobs;
  opts.dry_run = a.dry_run;
  opts.lock.stale_after = grace;
  opts.lock.on_gone = SayLockGone;
  opts.on_deleted = s->OnDone();
  Result<GcResult> r = CollectGarbage(s->store(), opts);
  s->Finish(r.status(), a.dry_run, s->store().Url(), "", "", r.ok() ? r->unreferenced_bytes : 0);
  if (!r.ok()) return r.status();
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, GcResultToJson(*r, opts, s->store().Url()),
                                     RenderGcResult(*r, opts, s->store().Url())));
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
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, MergeResultToJson(*r, opts, a.name, store->Url()),
                                     RenderMergeResult(*r, opts, a.name, store->Url())));
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
