#include "canary/controller.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

#include <nlohmann/json.hpp>

#include "canary/measure.h"
#include "canary/preflight.h"
#include "canary/prometheus.h"
#include "core/failpoint.h"
#include "core/log.h"

namespace cutover::canary {
namespace {

using nlohmann::json;

}  // namespace

double RealClock::Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void RealClock::Sleep(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string AnalysisStateToJson(const AnalysisState& s, int step) {
  json j = {{"step", step},
            {"intervals", s.intervals},
            {"failures", s.failures},
            {"errors", s.errors},
            {"consecutive_errors", s.consecutive_errors},
            {"step_intervals", s.step_intervals},
            {"step_passes", s.step_passes},
            {"step_inconclusives", s.step_inconclusives},
            {"last", s.last ? json(std::string(VerdictName(*s.last))) : json(nullptr)}};
  return j.dump();
}

AnalysisState AnalysisStateFromJson(const std::string& text, int step) {
  AnalysisState s;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  auto get = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<int>() : 0; };
  s.intervals = get("intervals");
  s.failures = get("failures");
  s.errors = get("errors");
  s.consecutive_errors = get("consecutive_errors");
  s.step_intervals = get("step_intervals");
  s.step_passes = get("step_passes");
  s.step_inconclusives = get("step_inconclusives");
  if (j.contains("last") && j["last"].is_string()) {
    std::string v = j["last"];
    for (Verdict x : {Verdict::kPass, Verdict::kFail, Verdict::kInconclusive, Verdict::kError}) {
      if (VerdictName(x) == v) s.last = x;
    }
  }
  if (get("step") != step) s = BeginStep(s);
  return s;
}

Controller::Controller(RolloutSpec spec, std::string spec_path, std::string spec_text,
                       RolloutStore* store, Traffic* traffic, Metrics* metrics, Clock* clock,
                       ControllerOptions options)
    : spec_(std::move(spec)),
      spec_path_(std::move(spec_path)),
      spec_text_(std::move(spec_text)),
      store_(store),
      traffic_(traffic),
      metrics_(metrics),
      clock_(clock),
      options_(options),
      hooks_(options.hooks) {
  if (hooks_ == nullptr) {
    own_hooks_ = std::make_unique<RealHookRunner>();
    hooks_ = own_hooks_.get();
  }
}

void Controller::Event(const std::string& kind, const std::string& message) {
  CUTOVER_LOG(kInfo) << "canary " << spec_.name << ": " << kind << ": " << message;
  const double at = clock_->Now();
  Status s = store_->AddEvent(id_, kind, message, at);
  if (!s.ok()) {
    CUTOVER_LOG(kWarn) << "canary: recording event: " << s.ToString();
    return;  // told only when recorded: a controller that lost its lease tells nothing
  }
  if (options_.on_event) options_.on_event(EventRow{at, kind, message});
}

Status Controller::SetStatus(const std::string& status, const std::string& reason) {
  return store_->SetStatus(id_, status, reason, clock_->Now());
}

Result<WeightPlan> Controller::PlanFor(int step) const {
  const StepSpec& s = spec_.steps[static_cast<size_t>(step)];
  int percent = 0;
  if (s.kind == StepSpec::Kind::kWeight) {
    percent = s.weight;
  } else {
    // A pause keeps the weight of the weight step before it (0 before the first).
    for (int i = step - 1; i >= 0; --i) {
      if (spec_.steps[static_cast<size_t>(i)].kind == StepSpec::Kind::kWeight) {
        percent = spec_.steps[static_cast<size_t>(i)].weight;
        break;
      }
    }
  }
  return PlanWeights(percent, spec_.traffic.baseline, spec_.traffic.canary);
}

Status Controller::EnterStep(int next, int prev, const std::string& prev_outcome) {
  CUTOVER_ASSIGN_OR_RETURN(WeightPlan plan, PlanFor(next));
  StepRow row;
  row.rollout_id = id_;
  row.step_index = next;
  row.kind =
      spec_.steps[static_cast<size_t>(next)].kind == StepSpec::Kind::kWeight ? "weight" : "pause";
  row.canary_percent = plan.canary_percent;
  row.weights = plan.weights;
  row.intended_at = clock_->Now();
  CUTOVER_RETURN_IF_ERROR(store_->EnterStep(id_, prev, prev_outcome, row));
  step_ = next;
  analysis_ = BeginStep(analysis_);
  CUTOVER_FAILPOINT("canary.after_intent");
  return Status::Ok();
}

Result<Controller::Gate> Controller::CheckGates(int next) {
  CUTOVER_ASSIGN_OR_RETURN(WeightPlan to, PlanFor(next));
  WeightPlan from;  // before the first step: 0%
  if (step_ >= 0) {
    CUTOVER_ASSIGN_OR_RETURN(from, PlanFor(step_));
  }
  if (spec_.capacity && to.canary_percent > from.canary_percent) {
    CUTOVER_ASSIGN_OR_RETURN(CapacityResult c,
                             CheckCapacity(spec_, *metrics_, to.canary_percent, clock_->Now()));
    if (!c.spec_error.empty()) return Gate{false, true, c.spec_error};
    if (!c.pass) return Gate{false, false, c.reason};
  }
  HookEvent event{.rollout = spec_.name,
                  .rollout_id = id_,
                  .step = next,
                  .weight = to.canary_percent,
                  .from_weight = from.canary_percent};
  const int last = static_cast<int>(spec_.steps.size()) - 1;
  // pre_step last: it runs once per weight change unless it says no itself.
  const std::pair<const char*, const std::optional<HookSpec>*> hooks[] = {
      {"confirm_promotion", next == last ? &spec_.hooks.confirm_promotion : nullptr},
      {"pre_step", to.canary_percent != from.canary_percent ? &spec_.hooks.pre_step : nullptr}};
  for (const auto& [name, hook] : hooks) {
    if (hook == nullptr || !hook->has_value()) continue;
    event.hook = name;
    Status s = hooks_->Run(**hook, event);
    if (!s.ok()) return Gate{false, false, s.message()};
  }
  return Gate{};
}

Status Controller::NoteGate(const Gate& gate) {
  const std::string reason = gate.pass ? "" : "held at the gate: " + gate.reason;
  if (reason == gate_reason_) return Status::Ok();
  gate_reason_ = reason;
  Event("gate", gate.pass ? "the gate passed" : reason);
  return paused_ ? Status::Ok() : SetStatus("running", reason);
}

Result<std::optional<RolloutOutcome>> Controller::WaitAtGate(int next) {
  const double every = std::max(Seconds(spec_.analysis.interval), options_.tick_seconds);
  double ask_at = clock_->Now();
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(Action a, Tick());
    if (a == Action::kStop) {
      Event("stop", "stopped by signal at the gate of step " + std::to_string(next));
      return Status::Aborted(
          "stopped; rollout " + std::to_string(id_) + " stays active " +
          (step_ < 0 ? std::string("before its first step") : "at step " + std::to_string(step_)));
    }
    if (a == Action::kAbort) {
      CUTOVER_ASSIGN_OR_RETURN(RolloutOutcome out, Rollback("aborted by command"));
      return std::optional<RolloutOutcome>(std::move(out));
    }
    if (a == Action::kPromote || a == Action::kPromoteFull) {
      Event("gate", "promote does not pass the gate: " + gate_reason_);
      CUTOVER_RETURN_IF_ERROR(SetStatus("running", gate_reason_));
    }
    if (!paused_ && clock_->Now() >= ask_at) {
      CUTOVER_ASSIGN_OR_RETURN(Gate g, CheckGates(next));
      CUTOVER_RETURN_IF_ERROR(NoteGate(g));
      if (g.rollback) {
        CUTOVER_ASSIGN_OR_RETURN(RolloutOutcome out, Rollback(g.reason));
        return std::optional<RolloutOutcome>(std::move(out));
      }
      if (g.pass) return std::optional<RolloutOutcome>();
      ask_at = clock_->Now() + every;
    }
    clock_->Sleep(options_.tick_seconds);
  }
}

static std::vector<std::string> ServerNames(const Weights& w) {
  std::vector<std::string> out;
  for (const auto& [k, v] : w) out.push_back(k);
  return out;
}

Status Controller::ApplyStep(const StepRow& row) {
  intended_ = row.weights;
  Result<Weights> now = traffic_->ReadWeights(ServerNames(row.weights));
  if (!now.ok() || *now != row.weights) {
    CUTOVER_RETURN_IF_ERROR(SetWeightsFenced(row.weights));
  }
  CUTOVER_FAILPOINT("canary.after_apply");
  CUTOVER_ASSIGN_OR_RETURN(Weights back, traffic_->ReadWeights(ServerNames(row.weights)));
  if (back != row.weights) {
    return Status::FailedPrecondition("step " + std::to_string(row.step_index) +
                                      ": weights read back " + WeightsToJson(back) + ", intended " +
                                      WeightsToJson(row.weights));
  }
  CUTOVER_RETURN_IF_ERROR(store_->MarkStepApplied(id_, row.step_index, back, clock_->Now()));
  Event("step", "step " + std::to_string(row.step_index) + " applied: canary " +
                    std::to_string(row.canary_percent) + "% weights " + WeightsToJson(back));
  CUTOVER_FAILPOINT("canary.after_transition");
  return Status::Ok();
}

Status Controller::Reconcile(const StepRow& row, const std::string& why) {
  intended_ = row.weights;
  CUTOVER_ASSIGN_OR_RETURN(Weights now, traffic_->ReadWeights(ServerNames(row.weights)));
  if (now == row.weights) return Status::Ok();
  Result<std::string> gen = traffic_->Generation();
  CUTOVER_RETURN_IF_ERROR(SetWeightsFenced(row.weights));
  CUTOVER_ASSIGN_OR_RETURN(Weights back, traffic_->ReadWeights(ServerNames(row.weights)));
  Event("reassert", why + ": load balancer had " + WeightsToJson(now) + " (" +
                        (gen.ok() ? *gen : std::string("generation unknown")) + "), re-asserted " +
                        WeightsToJson(back));
  if (back != row.weights) {
    return Status::FailedPrecondition("weights read back " + WeightsToJson(back) +
                                      " after re-asserting " + WeightsToJson(row.weights));
  }
  return Status::Ok();
}

Status Controller::SetWeightsFenced(const Weights& weights) {
  return store_->Fenced([&] { return traffic_->SetWeights(weights); });
}

Result<Controller::Action> Controller::Tick() {
  if (keeper_ != nullptr && keeper_->lost()) return Status::Aborted(keeper_->lost_reason());
  if (options_.stop != nullptr && options_.stop->load()) return Action::kStop;
  CUTOVER_ASSIGN_OR_RETURN(std::vector<CommandRow> cmds, store_->PendingCommands(id_));
  Action action = Action::kNone;
  for (const CommandRow& c : cmds) {
    std::string result = "done";
    if (action != Action::kNone) {
      result = "ignored: another command came first";
    } else if (c.name == "abort") {
      action = Action::kAbort;
    } else if (c.name == "promote") {
      action = Action::kPromote;
      paused_ = false;
    } else if (c.name == "promote-full") {
      action = Action::kPromoteFull;
      paused_ = false;
    } else if (c.name == "pause") {
      if (paused_) {
        result = "already paused";
      } else {
        paused_ = true;
        CUTOVER_RETURN_IF_ERROR(SetStatus("paused", "paused by command"));
      }
    } else if (c.name == "resume") {
      if (!paused_) {
        result = "not paused";
      } else {
        paused_ = false;
        analysis_ = BeginStep(analysis_);
        CUTOVER_RETURN_IF_ERROR(SetStatus("running", ""));
        action = Action::kResumed;
      }
    }
    CUTOVER_RETURN_IF_ERROR(store_->MarkCommandHandled(c.id, result, clock_->Now()));
    Event("command", c.name + ": " + result);
  }
  if (action == Action::kPromote || action == Action::kPromoteFull) {
    CUTOVER_RETURN_IF_ERROR(SetStatus("running", ""));
  }
  // A reload drops runtime weights: re-assert the intended ones.
  if (!intended_.empty()) {
    Result<Weights> now = traffic_->ReadWeights(ServerNames(intended_));
    if (!now.ok()) {
      if (!traffic_error_logged_) Event("traffic-error", now.status().message());
      traffic_error_logged_ = true;
    } else {
      traffic_error_logged_ = false;
      if (*now != intended_) {
        CUTOVER_ASSIGN_OR_RETURN(std::optional<StepRow> row, store_->GetStep(id_, step_));
        if (row) {
          Status s = Reconcile(*row, "weights changed under the controller (reload?)");
          if (s.code() == Code::kAborted) return s;  // the lease is lost
          if (!s.ok()) Event("traffic-error", s.message());
          reasserted_ = true;
        }
      }
    }
  }
  return action;
}

Result<Controller::StepEnd> Controller::RunPauseStep(const StepRow& row) {
  const StepSpec& s = spec_.steps[static_cast<size_t>(row.step_index)];
  double until = s.pause ? *row.applied_at + Seconds(*s.pause) : 0;
  if (!s.pause) Event("pause", "step " + std::to_string(row.step_index) + " waits for promote");
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(Action a, Tick());
    if (a == Action::kStop) return StepEnd{StepEnd::kStop, ""};
    if (a == Action::kAbort) return StepEnd{StepEnd::kRollback, "aborted by command"};
    if (a == Action::kPromote) return StepEnd{StepEnd::kAdvance, "promoted by command"};
    if (a == Action::kPromoteFull) return StepEnd{StepEnd::kPromoteFull, "promote --full"};
    if (s.pause && !paused_ && clock_->Now() >= until) return StepEnd{StepEnd::kAdvance, ""};
    clock_->Sleep(options_.tick_seconds);
  }
}

Result<Controller::StepEnd> Controller::RunWeightStep(const StepRow& row) {
  const StepSpec& step = spec_.steps[static_cast<size_t>(row.step_index)];
  const double applied = *row.applied_at;
  const double hold_end = applied + Seconds(step.hold);
  const bool analysed = row.canary_percent > 0 && row.canary_percent < 100;
  const double interval = Seconds(spec_.analysis.interval);
  const double settle = Seconds(spec_.metrics.step);

  double start = clock_->Now();
  Counters counters_at_start = traffic_->ReadCounters();
  reasserted_ = false;
  int restarts = 0;
  while (true) {
    double end = start + interval;
    // Wait for the interval's end plus one scrape (or the hold, for an unanalysed step).
    bool resumed = false;
    while (!resumed) {
      CUTOVER_ASSIGN_OR_RETURN(Action a, Tick());
      if (a == Action::kStop) return StepEnd{StepEnd::kStop, ""};
      if (a == Action::kAbort) return StepEnd{StepEnd::kRollback, "aborted by command"};
      if (a == Action::kPromote) return StepEnd{StepEnd::kAdvance, "promoted by command"};
      if (a == Action::kPromoteFull) return StepEnd{StepEnd::kPromoteFull, "promote --full"};
      if (paused_) {
        clock_->Sleep(options_.tick_seconds);
        continue;
      }
      if (a == Action::kResumed) {
        resumed = true;  // a fresh interval after resume
        break;
      }
      double now = clock_->Now();
      if (reasserted_ && analysed) {
        // Part of this interval ran under the weights a reload left, not the step's: its
        // figures are not evidence about this step. Start it again, at most inconclusive_limit
        // times a step, so a load balancer reloaded without end still reaches a decision.
        reasserted_ = false;
        if (restarts < spec_.analysis.policy.inconclusive_limit) {
          ++restarts;
          Event("interval-restart", "step " + std::to_string(row.step_index) +
                                        ": weights were re-asserted, the interval starts again");
          start = now;
          end = start + interval;
          counters_at_start = traffic_->ReadCounters();
        }
      }
      if (!analysed && now >= hold_end) {
        return StepEnd{StepEnd::kAdvance, "not analysed: one side has no traffic"};
      }
      if (analysed && now >= end + settle) break;
      double wait = analysed ? end + settle - now : hold_end - now;
      clock_->Sleep(std::min(options_.tick_seconds, std::max(0.001, wait)));
    }
    if (resumed) {
      start = clock_->Now();
      counters_at_start = traffic_->ReadCounters();
      reasserted_ = false;
      restarts = 0;
      continue;
    }

    Counters counters_at_end = traffic_->ReadCounters();
    CUTOVER_ASSIGN_OR_RETURN(
        StepDecision d,
        MeasureStepInterval(row, start, end, hold_end, counters_at_start, counters_at_end));
    switch (d.decision) {
      case Decision::kAdvance:
        return StepEnd{StepEnd::kAdvance, d.reason, true};
      case Decision::kRollback:
        return StepEnd{StepEnd::kRollback, d.reason};
      case Decision::kPause:
        paused_ = true;
        CUTOVER_RETURN_IF_ERROR(SetStatus("paused", d.reason));
        Event("pause", d.reason);
        break;
      case Decision::kHold:
        break;
    }
    start = end;
    counters_at_start = std::move(counters_at_end);
  }
}

MeasurementRow Controller::RealisedShareRow(const StepRow& row, const Counters& at_start,
                                            const Counters& at_end,
                                            std::vector<CheckResult>* results) const {
  const WeightPlan plan =
      PlanWeights(row.canary_percent, spec_.traffic.baseline, spec_.traffic.canary)
          .value_or(WeightPlan{});
  MeasurementRow m;
  m.check = "realised-share";
  m.query = "show stat";
  m.baseline_value = plan.share;
  if (!at_start.ok() || !at_end.ok()) {
    m.verdict = "inconclusive";
    m.reason = !at_end.ok() ? at_end.status().message() : at_start.status().message();
    return m;
  }
  int64_t total = 0;
  std::optional<double> share = RealisedShare(*at_start, *at_end, spec_.traffic.canary, &total);
  m.canary_value = share;
  const int64_t needed = std::max<int64_t>(20, 2 * spec_.analysis.min_requests);
  if (!share || total < needed) {
    m.verdict = "inconclusive";
    m.reason = std::to_string(total) + " responses, " + std::to_string(needed) + " needed";
    return m;
  }
  double tolerance = std::max(10.0, plan.share * 0.5);
  bool ok = std::fabs(*share - plan.share) <= tolerance;
  CheckResult r;
  r.verdict = ok ? Verdict::kPass : Verdict::kFail;
  r.reason = "canary served " + FormatNumber(*share) + "% of " + std::to_string(total) +
             " responses, intended " + FormatNumber(plan.share) + "% (tolerance " +
             FormatNumber(tolerance) + " points)";
  m.verdict = std::string(VerdictName(r.verdict));
  m.reason = r.reason;
  results->push_back(std::move(r));
  return m;
}

Result<StepDecision> Controller::MeasureStepInterval(const StepRow& row, double start, double end,
                                                     double hold_end, const Counters& at_start,
                                                     const Counters& at_end) {
  ++interval_index_;
  const double now = clock_->Now();
  CUTOVER_ASSIGN_OR_RETURN(IntervalMeasurement measured,
                           MeasureInterval(spec_, *metrics_, start, end));
  if (!measured.spec_error.empty()) return StepDecision{Decision::kRollback, measured.spec_error};
  std::vector<MeasurementRow> rows = std::move(measured.rows);
  std::vector<CheckResult> results = std::move(measured.results);
  // The realised canary share, from the load balancer's own counters.
  MeasurementRow share = RealisedShareRow(row, at_start, at_end, &results);
  share.window_start = start;
  share.window_end = end;
  rows.push_back(std::move(share));
  Verdict verdict = CombineChecks(results);
  analysis_ = RecordInterval(analysis_, verdict);
  StepDecision d = Decide(analysis_, spec_.analysis.policy, clock_->Now() >= hold_end);
  const bool has_next = row.step_index + 1 < static_cast<int>(spec_.steps.size());
  if (d.decision == Decision::kAdvance && has_next) {
    CUTOVER_ASSIGN_OR_RETURN(Gate g, CheckGates(row.step_index + 1));
    CUTOVER_RETURN_IF_ERROR(NoteGate(g));
    if (g.rollback) {
      d = StepDecision{Decision::kRollback, g.reason};
    } else if (!g.pass) {
      d = StepDecision{Decision::kHold, "held at the gate: " + g.reason};
    }
  }
  MeasurementRow summary;
  summary.check = "interval";
  summary.window_start = start;
  summary.window_end = end;
  summary.verdict = std::string(VerdictName(verdict));
  summary.reason = std::string(DecisionName(d.decision)) + ": " + d.reason;
  summary.canary_value = clock_->Now() - end;  // decision latency after the interval's end
  rows.push_back(std::move(summary));
  for (MeasurementRow& m : rows) {
    m.rollout_id = id_;
    m.step_index = row.step_index;
    m.interval_index = interval_index_;
    m.at = now;
  }
  CUTOVER_RETURN_IF_ERROR(store_->RecordInterval(
      id_, rows, AnalysisStateToJson(analysis_, row.step_index), clock_->Now()));
  ShowInterval(row, rows);
  CUTOVER_FAILPOINT("canary.after_interval");
  return d;
}

void Controller::ShowInterval(const StepRow& row, const std::vector<MeasurementRow>& rows) {
  if (!options_.on_event) return;
  std::string line = "interval " + std::to_string(interval_index_) + " (step " +
                     std::to_string(row.step_index) + ", canary " +
                     std::to_string(row.canary_percent) + "%):";
  for (const MeasurementRow& m : rows) {
    if (m.verdict == "info" || m.check == "interval") continue;
    line += " " + m.check + " " + m.verdict + (m.reason.empty() ? "" : " (" + m.reason + ")") + ";";
  }
  line += " verdict " + rows.back().verdict + ", " + rows.back().reason;
  options_.on_event(EventRow{clock_->Now(), "interval", line});
}

Status Controller::WaitWhileConfirming(double until) {
  while (clock_->Now() < until) {
    if (options_.stop != nullptr && options_.stop->load()) {
      return Status::Aborted("stopped while confirming the rollback; the rollout stays active");
    }
    clock_->Sleep(std::min(options_.tick_seconds, std::max(0.001, until - clock_->Now())));
  }
  return Status::Ok();
}

Result<std::string> Controller::ConfirmFromMetrics(double zero_until, double window) {
  // The window ends one scrape after `zero_until`, so its last samples were taken with the
  // canary at weight 0 for the whole window.
  const double settle = Seconds(spec_.metrics.step);
  const double at = zero_until + settle;
  CUTOVER_RETURN_IF_ERROR(WaitWhileConfirming(at));
  const Millis range{static_cast<int64_t>(std::llround(window * 1000))};
  std::optional<double> counts[2];
  for (int side = 0; side < 2; ++side) {
    const auto& names = side == 0 ? spec_.traffic.canary : spec_.traffic.baseline;
    CUTOVER_ASSIGN_OR_RETURN(std::string q,
                             RenderCheckQuery(spec_, spec_.analysis.requests, names, range));
    Result<PromResult> r = metrics_->Query(q, at);
    if (!r.ok()) return "prometheus could not confirm: " + r.status().message();
    Result<std::vector<double>> v = SingleSeriesValues(*r);
    if (!v.ok()) return "prometheus could not confirm: " + v.status().message();
    if (!v->empty() && std::isfinite(v->back())) counts[side] = v->back();
  }
  // No series for the canary: nothing counted it in the window, which does not prove it served
  // nothing (its exporter may be down), unless the baseline's series is there.
  if (!counts[1]) return std::string("prometheus could not confirm: no baseline requests series");
  const double canary = counts[0].value_or(0);
  const double total = canary + *counts[1];
  const double allowed = std::max(2.0, total / 100);
  const std::string figures = FormatNumber(canary) + " of " + FormatNumber(total) +
                              " requests in " + FormatNumber(window) + " s";
  if (canary > allowed) return "prometheus: canary still served " + figures;
  Event("rollback", "confirmed from prometheus: canary served " + figures);
  return std::string();
}

Result<RolloutOutcome> Controller::Rollback(const std::string& reason) {
  CUTOVER_RETURN_IF_ERROR(SetStatus("rolling-back", reason));
  Event("rollback", "rolling back: " + reason);
  CUTOVER_FAILPOINT("canary.after_rollback_intent");
  RolloutOutcome out;
  out.rollout_id = id_;
  out.exit_code = 1;
  out.reason = reason;
  CUTOVER_ASSIGN_OR_RETURN(WeightPlan zero,
                           PlanWeights(0, spec_.traffic.baseline, spec_.traffic.canary));
  intended_ = zero.weights;
  std::string problem;
  Status set = SetWeightsFenced(zero.weights);
  if (set.code() == Code::kAborted) return set;         // the lease is lost: hands off
  if (!set.ok()) set = SetWeightsFenced(zero.weights);  // once more
  Result<Weights> back = traffic_->ReadWeights(ServerNames(zero.weights));
  if (!set.ok()) {
    problem = "setting weights failed: " + set.message();
  } else if (!back.ok()) {
    problem = "reading weights back failed: " + back.status().message();
  } else if (*back != zero.weights) {
    problem = "weights read back " + WeightsToJson(*back);
  }
  if (problem.empty()) {
    Event("rollback", "canary weights read back 0: " + WeightsToJson(*back));
    double window = options_.confirm_seconds > 0
                        ? options_.confirm_seconds
                        : std::clamp(Seconds(spec_.analysis.interval), 2.0, 30.0);
    auto before = traffic_->ReadCounters();
    double until = clock_->Now() + window;
    CUTOVER_RETURN_IF_ERROR(WaitWhileConfirming(until));
    auto after = traffic_->ReadCounters();
    if (!before.ok() || !after.ok()) {
      problem = "load balancer counters unreadable: " +
                (!before.ok() ? before.status() : after.status()).message();
      // Then from Prometheus, where the spec says how to count requests.
      if (!spec_.analysis.requests.empty()) {
        CUTOVER_ASSIGN_OR_RETURN(std::string from_metrics, ConfirmFromMetrics(until, window));
        problem = from_metrics.empty() ? "" : problem + "; " + from_metrics;
      }
    } else {
      int64_t total = 0;
      std::optional<double> share = RealisedShare(*before, *after, spec_.traffic.canary, &total);
      int64_t canary = share ? static_cast<int64_t>(std::llround(*share * total / 100.0)) : 0;
      int64_t allowed = std::max<int64_t>(2, total / 100);
      std::string figures = std::to_string(canary) + " of " + std::to_string(total) +
                            " responses in " + FormatNumber(window) + " s";
      if (canary > allowed) {
        problem = "canary still served " + figures;
      } else {
        Event("rollback", "confirmed from load balancer counters: canary served " + figures);
      }
    }
  }
  if (problem.empty()) {
    out.status = "rolled-back";
  } else {
    out.status = "rolled-back-unconfirmed";
    out.reason = reason + "; rollback unconfirmed: " + problem;
    Event("rollback-unconfirmed", problem);
    CUTOVER_LOG(kError) << "canary " << spec_.name << ": ROLLBACK UNCONFIRMED: " << problem;
  }
  RunOnRollback(out.status, out.reason);
  CUTOVER_RETURN_IF_ERROR(
      store_->EndRollout(id_, step_, "rolled-back", out.status, out.reason, clock_->Now()));
  return out;
}

void Controller::RunOnRollback(const std::string& status, const std::string& reason) {
  if (!spec_.hooks.on_rollback) return;
  HookEvent event{
      .hook = "on_rollback",
      .rollout = spec_.name,
      .rollout_id = id_,
      .step = step_,
      .weight = 0,
      .from_weight = step_ >= 0 ? PlanFor(step_).value_or(WeightPlan{}).canary_percent : 0,
      .reason = status + ": " + reason};
  Status s = hooks_->Run(*spec_.hooks.on_rollback, event);
  Event("hook", s.ok() ? std::string("on_rollback passed") : s.message());
}

Result<RolloutOutcome> Controller::WithLease(
    const std::function<Result<RolloutOutcome>(const std::string& lease_event)>& body) {
  CUTOVER_ASSIGN_OR_RETURN(LeaseTake take, store_->TakeLease(spec_.name, SelfIdentity(),
                                                             options_.beat_seconds, LeaseNow()));
  store_->SetFence(spec_.name, take.generation);
  keeper_ = std::make_unique<LeaseKeeper>(store_->path(), spec_.name, take.generation,
                                          options_.beat_seconds);
  const ProcessIdentity& self = SelfIdentity();
  const std::string lease_event =
      "pid " + std::to_string(self.pid) + " on host " + self.host +
      " holds the lease (generation " + std::to_string(take.generation) + ")" +
      (take.taken_over ? ", taken over from " + DescribeLeaseHolder(*take.taken_over, LeaseNow()) +
                             ": " + take.stale_because
                       : std::string());
  Result<RolloutOutcome> out = body(lease_event);
  keeper_.reset();
  store_->SetFence("", 0);  // the store is the caller's again
  Status released = store_->ReleaseLease(spec_.name, take.generation, LeaseNow());
  if (!released.ok()) {
    CUTOVER_LOG(kWarn) << "canary " << spec_.name
                       << ": releasing the lease: " << released.ToString();
  }
  return out;
}

Result<RolloutOutcome> Controller::Run() {
  if (spec_.steps.empty()) return Status::InvalidArgument("spec has no steps");
  return WithLease([this](const std::string& lease_event) { return RunHoldingLease(lease_event); });
}

Result<RolloutOutcome> Controller::AbortNow(const std::string& reason) {
  return WithLease([&](const std::string& lease_event) -> Result<RolloutOutcome> {
    CUTOVER_ASSIGN_OR_RETURN(std::optional<RolloutRow> latest, store_->LatestRollout(spec_.name));
    if (!latest) return Status::NotFound("no rollout named '" + spec_.name + "'");
    if (!IsActiveStatus(latest->status)) {
      return Status::FailedPrecondition("rollout " + spec_.name + " is " + latest->status +
                                        ", not active");
    }
    id_ = latest->id;
    step_ = latest->step_index;
    Event("lease", lease_event);
    CUTOVER_ASSIGN_OR_RETURN(std::vector<CommandRow> cmds, store_->PendingCommands(id_));
    for (const CommandRow& c : cmds) {
      CUTOVER_RETURN_IF_ERROR(store_->MarkCommandHandled(
          c.id, c.name == "abort" ? "done by abort" : "dropped: the rollout is rolled back",
          clock_->Now()));
    }
    return Rollback(reason);
  });
}

Result<RolloutOutcome> Controller::RunHoldingLease(const std::string& lease_event) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<RolloutRow> latest, store_->LatestRollout(spec_.name));
  if (latest && IsActiveStatus(latest->status)) {
    id_ = latest->id;
    step_ = latest->step_index;
    paused_ = latest->status == "paused";
    analysis_ = AnalysisStateFromJson(latest->analysis_json, step_);
    CUTOVER_ASSIGN_OR_RETURN(std::vector<MeasurementRow> ms, store_->Measurements(id_));
    for (const MeasurementRow& m : ms)
      interval_index_ = std::max(interval_index_, m.interval_index);
    Event("lease", lease_event);
    Event("resume", "controller restarted at step " + std::to_string(step_) + " (status " +
                        latest->status + ")");
    if (latest->status == "rolling-back") return Rollback(latest->reason);
  } else {
    // Before anything is recorded or moved, the pre-flight: Prometheus, the load balancer and
    // every query of the spec must answer as the rollout will need them.
    PreflightReport pre = RunPreflight(spec_, *traffic_, *metrics_, clock_->Now());
    if (!pre.ok()) {
      const std::string msg =
          "canary " + spec_.name + " not started: pre-flight: " + pre.Problems();
      return pre.ExitCode() == 3 ? Status::Unavailable(msg) : Status::FailedPrecondition(msg);
    }
    CUTOVER_ASSIGN_OR_RETURN(
        id_, store_->CreateRollout(spec_.name, spec_path_, spec_text_, clock_->Now()));
    Event("lease", lease_event);
    Result<std::string> gen = traffic_->Generation();
    Event("start", "rollout started (" + std::to_string(spec_.steps.size()) + " steps, " +
                       (gen.ok() ? *gen : std::string("generation unknown")) + ")");
    CUTOVER_FAILPOINT("canary.after_start");
  }
  if (step_ < 0 || step_ >= static_cast<int>(spec_.steps.size())) {
    if (step_ >= static_cast<int>(spec_.steps.size())) {
      return Status::FailedPrecondition("the stored rollout is at step " + std::to_string(step_) +
                                        " but the spec has " + std::to_string(spec_.steps.size()) +
                                        " steps");
    }
    CUTOVER_ASSIGN_OR_RETURN(std::optional<RolloutOutcome> ended, WaitAtGate(0));
    if (ended) return *ended;
    CUTOVER_RETURN_IF_ERROR(EnterStep(0, -1, ""));
  }
  const int last = static_cast<int>(spec_.steps.size()) - 1;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(std::optional<StepRow> row, store_->GetStep(id_, step_));
    if (!row) return Status::Internal("step " + std::to_string(step_) + " has no intent row");
    if (!row->applied_at) {
      Status s = ApplyStep(*row);
      if (!s.ok()) return Rollback("applying step " + std::to_string(step_) + ": " + s.message());
      CUTOVER_ASSIGN_OR_RETURN(row, store_->GetStep(id_, step_));
    } else {
      Status s = Reconcile(*row, "after restart");
      if (!s.ok())
        return Rollback("reconciling step " + std::to_string(step_) + ": " + s.message());
    }
    StepEnd end;
    if (row->kind == "pause") {
      CUTOVER_ASSIGN_OR_RETURN(end, RunPauseStep(*row));
    } else {
      CUTOVER_ASSIGN_OR_RETURN(end, RunWeightStep(*row));
    }
    switch (end.kind) {
      case StepEnd::kStop:
        Event("stop", "stopped by signal at step " + std::to_string(step_) + "; state kept");
        return Status::Aborted("stopped; rollout " + std::to_string(id_) +
                               " stays active at step " + std::to_string(step_));
      case StepEnd::kRollback:
        return Rollback(end.reason);
      case StepEnd::kAdvance:
      case StepEnd::kPromoteFull: {
        if (step_ == last) {
          CUTOVER_RETURN_IF_ERROR(
              store_->EndRollout(id_, step_, "promoted", "promoted", end.reason, clock_->Now()));
          Event("promoted", "every step done: canary " + std::to_string(row->canary_percent) + "%");
          return RolloutOutcome{id_, "promoted", end.reason, 0};
        }
        int next = end.kind == StepEnd::kPromoteFull ? last : step_ + 1;
        if (!end.gated) {
          CUTOVER_ASSIGN_OR_RETURN(std::optional<RolloutOutcome> ended, WaitAtGate(next));
          if (ended) return *ended;
        }
        if (next != step_ + 1) {
          Event("promote-full",
                "skipping steps " + std::to_string(step_ + 1) + ".." + std::to_string(next - 1));
        }
        CUTOVER_RETURN_IF_ERROR(EnterStep(
            next, step_, end.kind == StepEnd::kPromoteFull ? "promoted-full" : "advanced"));
        break;
      }
    }
  }
}

}  // namespace cutover::canary
