// The canary intent log: a rollout's state in SQLite, shared by the controller (`canary start`)
// and the other commands (`status`, `pause`, `history`, ...) across processes.
//
//   rollouts      one row per rollout: status, current step index, analysis counters (JSON)
//   steps         one row per step entered, (rollout, step) unique: the intended weights are
//                 written BEFORE the load balancer is touched, `applied_at` and the read-back
//                 after, `outcome` when the step ends. A step is never recorded twice.
//   measurements  every check of every interval: query, window, values, verdict, reason
//   events        a timeline for people (weights set, reload re-asserted, rollback confirmed)
//   commands      pause / resume / promote / promote-full / abort, written by other processes,
//                 polled and marked handled by the controller
//   leases        one row per rollout name: which process drives it (its ProcessIdentity), the
//                 lease's generation (bumped by every take) and the holder's last heartbeat
//
// The lease: one controller per rollout. A lease binds while its holder is not judged gone
// (core/process_identity.h JudgeHolder) and has beaten within three beat periods; otherwise it is
// stale and the next taker takes it over. A store given a fence (SetFence: the name and the
// generation it took) checks, in the same write transaction as every write it makes, that the
// lease is still at that generation and held by this process; a write after the lease was lost
// fails with Aborted and changes nothing. Fenced() extends that to an action outside the file (a
// load balancer's weights): the action runs while the file's write lock is held, so a takeover
// cannot slip in between the check and the action.
// Statuses: running, paused, rolling-back (rollback intended, not yet confirmed), promoted,
// rolled-back, rolled-back-unconfirmed. The first three are active.
//
// Times are unix seconds (the controller's clock). Thread-safety: one RolloutStore per thread;
// several processes may share the file (WAL, busy timeout).
#ifndef CUTOVER_CANARY_STATE_H_
#define CUTOVER_CANARY_STATE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "canary/traffic.h"
#include "core/process_identity.h"
#include "core/sqlite_store.h"
#include "core/status.h"

namespace cutover::canary {

// True for running, paused and rolling-back.
bool IsActiveStatus(const std::string& status);

struct RolloutRow {
  int64_t id = 0;
  std::string name;
  std::string spec_path;
  std::string spec_text;
  std::string status;
  std::string reason;
  int step_index = -1;        // -1 before the first step is entered
  std::string analysis_json;  // AnalysisState counters
  double started_at = 0;
  double updated_at = 0;
  std::optional<double> finished_at;
};

struct StepRow {
  int64_t rollout_id = 0;
  int step_index = 0;
  std::string kind;  // "weight" | "pause"
  int canary_percent = 0;
  Weights weights;  // intended
  double intended_at = 0;
  std::optional<double> applied_at;
  Weights readback;  // read back after applying
  std::optional<double> finished_at;
  std::string outcome;  // "", "advanced", "rolled-back", "promoted", "skipped"
};

struct MeasurementRow {
  int64_t rollout_id = 0;
  int step_index = 0;
  int interval_index = 0;  // 1-based within the rollout
  std::string check;
  std::string query;
  double window_start = 0;
  double window_end = 0;
  std::optional<double> canary_value;
  std::optional<double> baseline_value;
  std::string figures_json;  // samples counts, ratio, test figures
  std::string verdict;
  std::string reason;
  double at = 0;
};

struct EventRow {
  double at = 0;
  std::string kind;
  std::string message;
};

struct CommandRow {
  int64_t id = 0;
  std::string name;  // pause | resume | promote | promote-full | abort
  double created_at = 0;
};

// The lease on a rollout name.
struct LeaseRow {
  std::string name;
  int64_t generation = 0;   // bumped by every take; 0: never taken
  ProcessIdentity holder;   // pid 0: released
  double beat_seconds = 1;  // the holder's heartbeat period
  double taken_at = 0;
  double beat_at = 0;  // the holder's last heartbeat
};

// A lease is stale after this many beat periods without a beat.
inline constexpr double kLeaseMissedBeats = 3;

struct LeaseVerdict {
  bool binds = false;  // held by a live holder that beats
  std::string why;     // when it does not bind: why ("released", "pid 42 is not running", ...)
};

// Whether `lease` still binds at `now`, with `judge` deciding whether its holder runs (the live
// host's /proc by default).
LeaseVerdict JudgeLease(
    const LeaseRow& lease, double now,
    const std::function<HolderVerdict(const ProcessIdentity&)>& judge =
        [](const ProcessIdentity& p) { return JudgeHolder(p); });

// "pid 4242 on host node-a, last beat 0.4 s ago" (for messages and `status`).
std::string DescribeLeaseHolder(const LeaseRow& lease, double now);

// What TakeLease did.
struct LeaseTake {
  int64_t generation = 0;
  // The holder whose stale lease was taken over, and why it was stale; nullopt when the lease
  // was free (never taken, or released).
  std::optional<LeaseRow> taken_over;
  std::string stale_because;
};

class RolloutStore {
 public:
  // Opens (creating, unless `opts.must_exist`: for the commands that only read) the state file
  // and applies the migrations.
  static Result<RolloutStore> Open(const std::string& path, OpenOptions opts = {});

  // A new rollout in status running at step -1. The spec text is stored with every
  // secret-looking value redacted (core/log.h Redact: passwords in URLs, *_TOKEN=... pairs).
  Result<int64_t> CreateRollout(const std::string& name, const std::string& spec_path,
                                const std::string& spec_text, double now);
  // The newest rollout named `name` (any name when empty), or nullopt.
  Result<std::optional<RolloutRow>> LatestRollout(const std::string& name);
  Result<RolloutRow> GetRollout(int64_t id);
  // Sets the status (and its reason); a final status sets finished_at.
  Status SetStatus(int64_t id, const std::string& status, const std::string& reason, double now);

  // In one transaction: ends step `prev` (when >= 0 and not yet ended) with `prev_outcome`,
  // records the intent of `next` and makes it the rollout's current step. FailedPrecondition
  // "step N of rollout R is already recorded" when `next` exists (never recorded twice).
  Status EnterStep(int64_t id, int prev, const std::string& prev_outcome, const StepRow& next);
  // In one transaction: ends step `step` (when >= 0 and not yet ended) with `step_outcome` and
  // sets the rollout's final `status`, so a crash never leaves a finished step in a rollout
  // that still reads as active.
  Status EndRollout(int64_t id, int step, const std::string& step_outcome,
                    const std::string& status, const std::string& reason, double now);
  // Ends step `step` with `outcome` (when not yet ended).
  Status FinishStep(int64_t id, int step, const std::string& outcome, double now);
  Status MarkStepApplied(int64_t id, int step, const Weights& readback, double now);
  Result<std::optional<StepRow>> GetStep(int64_t id, int step);
  Result<std::vector<StepRow>> Steps(int64_t id);

  // In one transaction: an interval's measurements and the new analysis counters.
  Status RecordInterval(int64_t id, const std::vector<MeasurementRow>& rows,
                        const std::string& analysis_json, double now);
  Result<std::vector<MeasurementRow>> Measurements(int64_t id);

  Status AddEvent(int64_t id, const std::string& kind, const std::string& message, double now);
  Result<std::vector<EventRow>> Events(int64_t id);

  // Queues a command for the controller of rollout `id`. InvalidArgument for an unknown name.
  Result<int64_t> AddCommand(int64_t id, const std::string& name, double now);
  // Unhandled commands, oldest first.
  Result<std::vector<CommandRow>> PendingCommands(int64_t id);
  Status MarkCommandHandled(int64_t command_id, const std::string& result, double now);

  // The lease on rollout `name`, nullopt when never taken.
  Result<std::optional<LeaseRow>> GetLease(const std::string& name);
  // In one transaction: takes the lease on `name` for `holder` when it is free or stale
  // (JudgeLease), bumping its generation. FailedPrecondition "rollout NAME is driven by another
  // controller: pid P on host H, last beat S s ago" while it binds.
  Result<LeaseTake> TakeLease(const std::string& name, const ProcessIdentity& holder,
                              double beat_seconds, double now);
  // Records a heartbeat of the lease at `generation`. Aborted "lost the lease of rollout NAME to
  // ..." when the lease has moved on (taken over or released).
  Status BeatLease(const std::string& name, int64_t generation, double now);
  // Releases the lease when it is still at `generation` (otherwise nothing).
  Status ReleaseLease(const std::string& name, int64_t generation, double now);

  // From now on every write of this store checks, in its transaction, that the lease on `name`
  // is at `generation` and held by this process; Aborted "lost the lease ..." otherwise. An
  // empty `name` removes the fence.
  void SetFence(const std::string& name, int64_t generation);
  // Runs `action` (a write outside the file) inside a fenced write transaction: not at all when
  // the fence fails, and never concurrently with a takeover of the lease.
  Status Fenced(const std::function<Status()>& action);

  // The file this store was opened on.
  const std::string& path() const { return db_.path(); }

 private:
  explicit RolloutStore(SqliteDb db) : db_(std::move(db)) {}
  // Begins a write transaction (none when one is already open on this store) and checks the
  // fence in it.
  Result<std::optional<Transaction>> BeginWrite();
  Status CheckFence();

  SqliteDb db_;
  std::string fence_name_;  // empty: no fence
  int64_t fence_generation_ = 0;
};

// Weights as a JSON object text and back.
std::string WeightsToJson(const Weights& w);
Weights WeightsFromJson(const std::string& text);

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_STATE_H_
