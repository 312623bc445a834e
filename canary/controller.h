// The canary controller: runs one rollout (a RolloutSpec) to its end against a traffic provider
// and a metrics source, with every intent and measurement in the RolloutStore.
//
// Per weight step: write the intended weights (EnterStep), apply them, read them back, mark the
// step applied; then analyse every `analysis.interval` (after the first scrape past the
// interval's end) and advance, hold, pause or roll back as canary/analysis decides. A step at
// weight 100 (or 0) is not analysed (one side has no traffic to compare): it ends once applied
// and its hold is over. Pause steps wait for `promote` (or their duration).
//
// Between intervals the controller polls the store for commands (pause, resume, promote,
// promote-full, abort), and reads the load balancer's weights: when they differ from the
// intended ones (a reload dropped the runtime weights) it re-asserts them and logs an event.
//
// Rollback: status rolling-back is written first; canary weights go to 0 and are read back; the
// canary's response count from the load balancer's own counters must then stay about flat
// (at most max(2, 1% of all responses)) over a confirmation window. A provider without
// per-server counters (nginx, command) confirms from Prometheus instead: analysis.requests per
// side over the same window, one scrape later, by the same bound. If the weights do not read
// back 0 or neither source can confirm, the rollout ends rolled-back-unconfirmed (exit 1).
//
// Gates: before entering the next step the controller asks, in order, the capacity query (only
// before a weight increase), the confirm_promotion hook (before the last step) and the pre_step
// hook (before a weight change; last, so it runs once per change unless it says no itself). While
// one says no, the rollout stays at its current weights: an analysed step keeps measuring and asks
// again after each interval that would have advanced; otherwise (a pause, a 0/100% step, a promote
// command) it asks again every analysis interval, still obeying abort and pause. Each change of the
// gate's answer is a `gate` event and the rollout's status reason; a capacity query Prometheus
// rejects as wrong rolls back. on_rollback runs once the rollback's outcome is known, before it is
// recorded (a restart in rolling-back runs it again); its failure is only an event.
//
// Pre-flight (canary/preflight.h): before a new rollout is recorded, Prometheus, the load balancer
// and every query of the spec must answer; otherwise Run() moves nothing and returns Unavailable
// (something did not answer) or FailedPrecondition (a check failed), "canary NAME not started:
// pre-flight: ..." naming each problem.
//
// Restart (after kill -9): an active rollout of the same name is resumed at its current step;
// an intended-but-unapplied step is reconciled with the load balancer's actual weights (set only
// when they differ: no flapping). No step is skipped or recorded twice. A stop request (SIGTERM)
// ends Run() with Aborted and leaves the state active for the next start.
//
// Failpoints, one after each state transition: canary.after_start (rollout row created, no step
// yet), canary.after_intent (step intent written, LB untouched), canary.after_apply (weights set,
// not marked applied), canary.after_transition (step applied and recorded),
// canary.after_interval (an interval recorded), canary.after_rollback_intent (status
// rolling-back written, weights untouched). The end of a rollout (its last step finished and
// its final status) is one transaction.
//
// One controller per rollout: Run() holds the rollout's lease in the state file, beaten by a
// thread of its own (canary/lease.h), and every write it makes checks the lease's generation in
// the same transaction (the load balancer's weights are set inside it), so a controller that lost
// its lease (suspended, stuck) never moves traffic or writes state again.
//
// Thread-safety: a Controller runs on one thread; `stop` may be set from a signal handler.
#ifndef CUTOVER_CANARY_CONTROLLER_H_
#define CUTOVER_CANARY_CONTROLLER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "canary/analysis.h"
#include "canary/hooks.h"
#include "canary/lease.h"
#include "canary/prometheus_client.h"
#include "canary/spec.h"
#include "canary/state.h"
#include "canary/traffic.h"
#include "core/status.h"

namespace cutover::canary {

// The clock seam: real time in production, a fake that jumps on Sleep in unit tests.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double Now() = 0;  // unix seconds
  virtual void Sleep(double seconds) = 0;
};

class RealClock : public Clock {
 public:
  double Now() override;
  void Sleep(double seconds) override;
};

struct ControllerOptions {
  double tick_seconds = 0.2;  // command / weight poll period
  // Rollback confirmation window; 0: the analysis interval, within [2 s, 30 s].
  double confirm_seconds = 0;
  // Set (e.g. by a SIGTERM handler) to stop at the next tick, keeping the state.
  const std::atomic<bool>* stop = nullptr;
  // Runs the spec's hooks; borrowed. Null: a RealHookRunner owned by the controller.
  HookRunner* hooks = nullptr;
  // The lease's heartbeat period (real seconds); the lease is stale after three missed beats.
  double beat_seconds = 1.0;
  // Told of every event as it is recorded, and of every interval's verdict (kind "interval":
  // each check's verdict and figures, then the decision), for `start`'s event lines.
  std::function<void(const EventRow&)> on_event;
};

struct RolloutOutcome {
  int64_t rollout_id = 0;
  std::string status;  // promoted | rolled-back | rolled-back-unconfirmed
  std::string reason;
  int exit_code = 0;  // 0 promoted, 1 otherwise
};

// The analysis counters as stored in rollouts.analysis, tagged with the step they belong to.
std::string AnalysisStateToJson(const AnalysisState& s, int step);
// Back from JSON; counters of another step than `step` are reset with BeginStep.
AnalysisState AnalysisStateFromJson(const std::string& text, int step);

class Controller {
 public:
  // The pointers are borrowed and must outlive Run().
  Controller(RolloutSpec spec, std::string spec_path, std::string spec_text, RolloutStore* store,
             Traffic* traffic, Metrics* metrics, Clock* clock, ControllerOptions options = {});

  // Runs (or resumes) the rollout to its end. Aborted "stopped; the rollout stays active" on a
  // stop request; store and traffic errors that make progress impossible as returned.
  // First takes the rollout's lease (canary/state.h): FailedPrecondition naming the holder while
  // another controller drives it; a stale lease is taken over (a `lease` event says from whom).
  // Every later write, the load balancer's weights included, is fenced by the lease; once it is
  // lost, Run() ends with Aborted "lost the lease ..." having written nothing more. The lease is
  // released when Run() returns.
  Result<RolloutOutcome> Run();

  // Rolls back the spec's active rollout without running it, for `canary abort` when no
  // controller holds the lease: takes the lease (FailedPrecondition naming the holder while a
  // controller drives the rollout: queue the abort for it instead), marks the commands queued for
  // the gone controller handled, then rolls back exactly as Run() does (rolling-back, weights to
  // 0, read back, confirmed, on_rollback, history events) with `reason`. FailedPrecondition
  // "rollout NAME is STATUS, not active" when there is nothing to roll back.
  Result<RolloutOutcome> AbortNow(const std::string& reason);

 private:
  enum class Action { kNone, kStop, kAbort, kPromote, kPromoteFull, kResumed };
  struct StepEnd {
    enum Kind { kAdvance, kPromoteFull, kRollback, kStop } kind = kAdvance;
    std::string reason;
    bool gated = false;  // kAdvance: the gates for the next step already passed
  };

  // The gates' answer for entering step `next` from the current one.
  struct Gate {
    bool pass = true;
    bool rollback = false;  // a gate query is wrong: the rollout cannot go on
    std::string reason;
  };

  // Takes the lease, fences the store with it and beats it while `body` runs; releases it after.
  Result<RolloutOutcome> WithLease(
      const std::function<Result<RolloutOutcome>(const std::string& lease_event)>& body);
  Result<RolloutOutcome> RunHoldingLease(const std::string& lease_event);
  // Sets the load balancer's weights inside a write transaction fenced by the lease.
  Status SetWeightsFenced(const Weights& weights);
  Result<WeightPlan> PlanFor(int step) const;
  Result<Gate> CheckGates(int next);
  // Records a change of the gate's answer (event and status reason).
  Status NoteGate(const Gate& gate);
  // Asks the gates for `next` every analysis interval until they pass (nullopt). Otherwise the
  // rollback's outcome (abort, a wrong gate query), or Aborted on a stop request.
  Result<std::optional<RolloutOutcome>> WaitAtGate(int next);
  void RunOnRollback(const std::string& status, const std::string& reason);
  Status ApplyStep(const StepRow& row);
  Status Reconcile(const StepRow& row, const std::string& why);
  Result<Action> Tick();
  using Counters = Result<std::map<std::string, ServerCounters>>;
  // Runs weight step `row` interval by interval until it ends (a resume starts a fresh one).
  Result<StepEnd> RunWeightStep(const StepRow& row);
  // Measures the interval [start, end] of `row`, judges it, asks the gates when it would
  // advance, and records it: the decision.
  Result<StepDecision> MeasureStepInterval(const StepRow& row, double start, double end,
                                           double hold_end, const Counters& at_start,
                                           const Counters& at_end);
  // The realised-share row of an interval from the load balancer's counters; its result joins
  // `results` when it is judged.
  MeasurementRow RealisedShareRow(const StepRow& row, const Counters& at_start,
                                  const Counters& at_end, std::vector<CheckResult>* results) const;
  // The interval's line for options_.on_event.
  void ShowInterval(const StepRow& row, const std::vector<MeasurementRow>& rows);
  Result<StepEnd> RunPauseStep(const StepRow& row);
  Status EnterStep(int next, int prev, const std::string& prev_outcome);
  Result<RolloutOutcome> Rollback(const std::string& reason);
  // Confirms from Prometheus (analysis.requests per side, over `window` seconds after
  // `zero_until`) that the canary served at most max(2, 1% of all requests): "" when it did,
  // else the problem. Waits one scrape past `zero_until` first.
  Result<std::string> ConfirmFromMetrics(double zero_until, double window);
  // Sleeps in ticks until `until`; Aborted when a stop is requested meanwhile.
  Status WaitWhileConfirming(double until);
  Status SetStatus(const std::string& status, const std::string& reason);
  void Event(const std::string& kind, const std::string& message);

  RolloutSpec spec_;
  std::string spec_path_;
  std::string spec_text_;
  RolloutStore* store_;
  Traffic* traffic_;
  Metrics* metrics_;
  Clock* clock_;
  ControllerOptions options_;
  std::unique_ptr<HookRunner> own_hooks_;
  HookRunner* hooks_;
  std::unique_ptr<LeaseKeeper> keeper_;  // the lease's heartbeat while Run() holds it

  int64_t id_ = 0;
  int step_ = -1;
  bool paused_ = false;
  Weights intended_;
  AnalysisState analysis_;
  int interval_index_ = 0;
  bool traffic_error_logged_ = false;
  // Set when Tick re-asserted weights the load balancer had lost; the interval under way then
  // measured another split than intended and starts again (RunWeightStep clears it).
  bool reasserted_ = false;
  std::string gate_reason_;  // the gate's last "no", empty while it passes
};

}  // namespace cutover::canary

#endif  // CUTOVER_CANARY_CONTROLLER_H_
