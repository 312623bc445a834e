#include "canary/command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <memory>

#include "canary/controller.h"
#include "canary/history.h"
#include "canary/lease.h"
#include "canary/measure.h"
#include "canary/mirror_proxy.h"
#include "canary/preflight.h"
#include "canary/prometheus_client.h"
#include "canary/spec.h"
#include "canary/state.h"
#include "core/file_util.h"
#include "core/http_client.h"
#include "core/read_input.h"
#include "core/time_util.h"
#include "core/units.h"

namespace cutover {
namespace {

using canary::RolloutStore;
using nlohmann::json;

// Set by SIGTERM / SIGINT while `canary start` runs; the controller stops at its next tick.
std::atomic<bool> g_stop{false};

extern "C" void OnStopSignal(int) { g_stop.store(true); }

// Controller options whose stop flag SIGTERM and SIGINT set (from now on in this process).
canary::ControllerOptions StopOnSignals() {
  g_stop.store(false);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  canary::ControllerOptions opts;
  opts.stop = &g_stop;
  return opts;
}

// The state file of the commands that only read it or act on a rollout already in it (status,
// history, pause, abort, ...): never created by them.
constexpr OpenOptions kExisting{.must_exist = true};

Result<int> RunStart(const GlobalOptions& g, const std::string& spec_path, bool events) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadInput(spec_path));
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutSpec spec, canary::ParseSpec(text, spec_path));
  std::unique_ptr<canary::Traffic> traffic = canary::MakeTraffic(spec.traffic);
  CUTOVER_ASSIGN_OR_RETURN(RolloutStore store, RolloutStore::Open(ResolveDbPath(g)));
  canary::PrometheusClient metrics(spec.metrics.url, spec.metrics.timeout);
  canary::RealClock clock;
  canary::ControllerOptions opts = StopOnSignals();
  if (events || ::isatty(STDOUT_FILENO) == 1) {
    // One line per event as it happens; on stderr when stdout carries the --json document.
    FILE* to = g.json ? stderr : stdout;
    opts.on_event = [to](const canary::EventRow& e) {
      std::fprintf(to, "%s %s: %s\n", Rfc3339Utc(e.at).c_str(), e.kind.c_str(), e.message.c_str());
      std::fflush(to);
    };
  }
  canary::Controller controller(spec, spec_path, text, &store, traffic.get(), &metrics, &clock,
                                opts);
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutOutcome out, controller.Run());
  if (out.status == "rolled-back-unconfirmed") {
    std::fprintf(stderr, "cutover: canary %s: ROLLBACK UNCONFIRMED: %s\n", spec.name.c_str(),
                 out.reason.c_str());
  }
  json doc = {{"schema", "cutover.rollout-result/1"},
              {"rollout", out.rollout_id},
              {"name", spec.name},
              {"status", out.status},
              {"reason", out.reason}};
  CUTOVER_RETURN_IF_ERROR(
      EmitResult(g, doc, "rollout " + spec.name + ": " + out.status + " (" + out.reason + ")\n"));
  return out.exit_code;
}

// `canary lint SPEC`: the spec alone, offline (exit 0, or 2 with every error); with `live`, the
// pre-flight `start` runs, without moving traffic (exit 0, 1 when a check fails, 3 when
// something does not answer).
Result<int> RunLint(const GlobalOptions& g, const std::string& spec_path, bool live) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadInput(spec_path));
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutSpec spec, canary::ParseSpec(text, spec_path));
  if (!live) {
    json doc = {{"schema", "cutover.canary-lint/1"},
                {"spec", spec_path},
                {"rollout", spec.name},
                {"ok", true},
                {"steps", spec.steps.size()},
                {"checks", spec.analysis.checks.size()}};
    CUTOVER_RETURN_IF_ERROR(EmitResult(
        g, doc,
        spec_path + ": ok (rollout " + spec.name + ", " + std::to_string(spec.steps.size()) +
            " steps, " + std::to_string(spec.analysis.checks.size()) +
            " checks; run with --live to check Prometheus and the load balancer)\n"));
    return 0;
  }
  std::unique_ptr<canary::Traffic> traffic = canary::MakeTraffic(spec.traffic);
  canary::PrometheusClient metrics(spec.metrics.url, spec.metrics.timeout);
  canary::PreflightReport report =
      canary::RunPreflight(spec, *traffic, metrics, canary::RealClock().Now());
  CUTOVER_RETURN_IF_ERROR(
      EmitResult(g, canary::PreflightJson(spec, report), canary::PreflightTable(spec, report)));
  return report.ExitCode();
}

// `canary analyze`: the spec's checks over a past range, window by window, no traffic moved.
// Exit 0 only when the policy would have advanced; 1 when it would have rolled back, paused
// or held for want of evidence.
Result<int> RunAnalyze(const GlobalOptions& g, const std::string& spec_path,
                       const std::string& from_text, const std::string& to_text) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadInput(spec_path));
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutSpec spec, canary::ParseSpec(text, spec_path));
  const double now = canary::RealClock().Now();
  CUTOVER_ASSIGN_OR_RETURN(double from, canary::ParseTimeArg(from_text, now));
  CUTOVER_ASSIGN_OR_RETURN(double to, canary::ParseTimeArg(to_text, now));
  if (to > now + 1) {
    return Status::InvalidArgument("canary analyze: --to " + Rfc3339Utc(to) +
                                   " is in the future; the range must be past");
  }
  canary::PrometheusClient metrics(spec.metrics.url, spec.metrics.timeout);
  CUTOVER_ASSIGN_OR_RETURN(canary::PastAnalysis a, canary::AnalyzePast(spec, metrics, from, to));
  json doc = canary::PastAnalysisJson(spec, from, to, a);
  std::string table = "analysis of " + spec.name + " from " + Rfc3339Utc(from) + " to " +
                      Rfc3339Utc(to) + ": " + std::to_string(a.intervals.size()) +
                      " intervals of " + canary::PromDuration(spec.analysis.interval) + ", " +
                      std::to_string(a.passes) + " pass, " + std::to_string(a.failures) +
                      " fail, " + std::to_string(a.inconclusives) + " inconclusive, " +
                      std::to_string(a.errors) + " error\n";
  for (size_t i = 0; i < a.intervals.size(); ++i) {
    const canary::PastInterval& w = a.intervals[i];
    table += "  interval " + std::to_string(i + 1) + " " + Rfc3339Utc(w.start) + ": " +
             std::string(canary::VerdictName(w.verdict)) + "\n";
    for (const canary::MeasurementRow& m : w.rows) {
      if (m.verdict == "info") continue;
      table += "    " + m.check + ": " + m.verdict +
               (m.reason.empty() ? "" : " (" + m.reason + ")") + "\n";
    }
  }
  table +=
      "the realised canary share is not judged: the load balancer's past counters are "
      "not kept\n";
  if (!a.spec_error.empty()) {
    CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
    return Status::InvalidArgument(a.spec_error);
  }
  std::string verdict = std::string(canary::DecisionName(a.outcome));
  if (a.stopped_at >= 0) verdict += " after interval " + std::to_string(a.stopped_at + 1);
  table += "outcome: " + verdict + (a.reason.empty() ? "" : ": " + a.reason) + "\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return a.outcome == canary::Decision::kAdvance ? 0 : 1;
}

// Whether a controller drives rollout `r`, from its lease; `why` says why not.
canary::LeaseVerdict ControllerOf(RolloutStore& store, const canary::RolloutRow& r,
                                  std::optional<canary::LeaseRow>* lease_out) {
  Result<std::optional<canary::LeaseRow>> lease = store.GetLease(r.name);
  if (!lease.ok()) return {false, "the lease cannot be read: " + lease.status().message()};
  if (lease_out != nullptr) *lease_out = *lease;
  if (!lease->has_value()) return {false, "no controller has held it"};
  return canary::JudgeLease(**lease, canary::LeaseNow());
}

Result<int> RunStatus(const GlobalOptions& g, const std::string& name) {
  CUTOVER_ASSIGN_OR_RETURN(RolloutStore store, RolloutStore::Open(ResolveDbPath(g), kExisting));
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutRow r, canary::FindRollout(store, name));
  CUTOVER_ASSIGN_OR_RETURN(std::optional<canary::StepRow> step, store.GetStep(r.id, r.step_index));
  json doc = {{"schema", "cutover.rollout-status/1"}, {"rollout", canary::RolloutJson(r)}};
  std::string table = "rollout " + r.name + " (" + std::to_string(r.id) + "): " + r.status +
                      ", step " + std::to_string(r.step_index);
  if (step) {
    doc["step"] = {{"index", step->step_index},
                   {"kind", step->kind},
                   {"canary_percent", step->canary_percent},
                   {"weights", json::parse(canary::WeightsToJson(step->weights))},
                   {"applied", step->applied_at.has_value()}};
    table += " at canary " + std::to_string(step->canary_percent) + "%" +
             (step->applied_at ? "" : " (intended, not applied yet)");
  }
  if (!r.reason.empty()) table += " -- " + r.reason;
  table += "\n";
  std::optional<canary::LeaseRow> lease;
  canary::LeaseVerdict v = ControllerOf(store, r, &lease);
  json controller = {{"live", v.binds}};
  if (lease && lease->holder.pid != 0) {
    controller["pid"] = lease->holder.pid;
    controller["host"] = lease->holder.host;
  }
  if (lease) controller["last_beat"] = Rfc3339Utc(lease->beat_at);
  if (!v.binds) controller["why_not"] = v.why;
  doc["controller"] = std::move(controller);
  if (v.binds) {
    table += "controller: " + canary::DescribeLeaseHolder(*lease, canary::LeaseNow()) + "\n";
  } else {
    table += "controller: none (" + v.why + ")" +
             (canary::IsActiveStatus(r.status)
                  ? std::string("; nothing acts on this rollout until `canary start` runs again "
                                "(`canary abort` rolls it back itself)")
                  : std::string()) +
             "\n";
  }
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

// The spec of a stored rollout: its file when it still reads and names the rollout, otherwise
// the text stored with the rollout (secret-looking values in it redacted).
Result<canary::RolloutSpec> StoredSpec(const canary::RolloutRow& r, std::string* text) {
  Result<std::string> file = ReadFile(r.spec_path);
  if (file.ok()) {
    Result<canary::RolloutSpec> spec = canary::ParseSpec(*file, r.spec_path);
    if (spec.ok() && spec->name == r.name) {
      *text = *file;
      return spec;
    }
  }
  *text = r.spec_text;
  return canary::ParseSpec(r.spec_text,
                           r.spec_path + " (as stored with rollout " + std::to_string(r.id) + ")");
}

// `canary abort` with no live controller: the rollback done here, as a controller would.
Result<int> AbortItself(const GlobalOptions& g, RolloutStore& store, const canary::RolloutRow& r,
                        const std::string& why) {
  std::string text;
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutSpec spec, StoredSpec(r, &text));
  std::unique_ptr<canary::Traffic> traffic = canary::MakeTraffic(spec.traffic);
  canary::PrometheusClient metrics(spec.metrics.url, spec.metrics.timeout);
  canary::RealClock clock;
  canary::ControllerOptions opts = StopOnSignals();
  if (!g.quiet) {
    std::fprintf(stderr, "canary %s: no controller is running (%s); rolling back here\n",
                 r.name.c_str(), why.c_str());
  }
  canary::Controller controller(spec, r.spec_path, text, &store, traffic.get(), &metrics, &clock,
                                opts);
  CUTOVER_ASSIGN_OR_RETURN(
      canary::RolloutOutcome out,
      controller.AbortNow("aborted by command; no controller was running (" + why + ")"));
  if (out.status == "rolled-back-unconfirmed") {
    std::fprintf(stderr, "cutover: canary %s: ROLLBACK UNCONFIRMED: %s\n", spec.name.c_str(),
                 out.reason.c_str());
  }
  json doc = {
      {"schema", "cutover.rollout-command/1"}, {"rollout", r.id},      {"command", "abort"},
      {"done", "rolled back by this command"}, {"status", out.status}, {"reason", out.reason}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(
      g, doc,
      "rolled back rollout " + r.name + " here (no controller was running): " + out.status + "\n"));
  return out.status == "rolled-back" ? 0 : 1;
}

Result<int> RunCommand(const GlobalOptions& g, const std::string& name, const std::string& cmd) {
  CUTOVER_ASSIGN_OR_RETURN(RolloutStore store, RolloutStore::Open(ResolveDbPath(g), kExisting));
  CUTOVER_ASSIGN_OR_RETURN(canary::RolloutRow r, canary::FindRollout(store, name));
  if (!canary::IsActiveStatus(r.status)) {
    return Status::FailedPrecondition("rollout " + r.name + " is " + r.status + ", not active");
  }
  std::optional<canary::LeaseRow> lease;
  canary::LeaseVerdict v = ControllerOf(store, r, &lease);
  if (!v.binds) {
    if (cmd == "abort") {
      Result<int> done = AbortItself(g, store, r, v.why);
      // A controller that started meanwhile holds the lease: it takes the abort from the queue.
      if (done.ok() ||
          done.status().message().find("driven by another controller") == std::string::npos) {
        return done;
      }
      lease = store.GetLease(r.name).value_or(std::nullopt);
    } else {
      return Status::FailedPrecondition("no controller drives rollout " + r.name + " (" + v.why +
                                        "): nothing would act on " + cmd +
                                        " until `cutover canary start` runs again");
    }
  }
  canary::RealClock clock;
  CUTOVER_ASSIGN_OR_RETURN(int64_t id, store.AddCommand(r.id, cmd, clock.Now()));
  json doc = {{"schema", "cutover.rollout-command/1"},
              {"rollout", r.id},
              {"command", cmd},
              {"command_id", id},
              {"done", "queued for the controller"}};
  const std::string holder =
      lease ? canary::DescribeLeaseHolder(*lease, canary::LeaseNow()) : std::string("?");
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc,
                                     "queued " + cmd + " for rollout " + r.name +
                                         " (its controller, " + holder +
                                         ", acts on it at its next poll)\n"));
  return 0;
}

// What `canary mirror` reads from its flags beyond the proxy's own options.
struct MirrorFlags {
  canary::MirrorProxyOptions proxy;
  std::string duration;
  std::string max_body = "4MiB";
};

// `canary mirror`: proxies clients to the primary, mirrors copies to the secondary and the
// candidate, and when stopped reports per field how the candidate differs beyond the noise of two
// primaries. Exit 0 when no field fails, 1 when one does or nothing was compared.
Result<int> RunMirror(const GlobalOptions& g, MirrorFlags flags) {
  canary::MirrorProxyOptions& o = flags.proxy;
  for (std::string& m : o.methods) {
    std::transform(m.begin(), m.end(), m.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  }
  CUTOVER_RETURN_IF_ERROR(canary::ValidateMirrorProxyOptions(o));
  std::optional<std::chrono::milliseconds> duration;
  if (!flags.duration.empty()) {
    Result<std::chrono::milliseconds> d = ParseDuration(flags.duration);
    if (!d.ok()) return Status::InvalidArgument("mirror: --duration: " + d.status().message());
    if (d->count() <= 0) return Status::InvalidArgument("mirror: --duration must be > 0");
    duration = *d;
  }
  if (o.max_requests < 0) return Status::InvalidArgument("mirror: --requests must be >= 0");
  Result<uint64_t> max_body = ParseBytes(flags.max_body);
  if (!max_body.ok())
    return Status::InvalidArgument("mirror: --max-body: " + max_body.status().message());
  if (*max_body == 0) return Status::InvalidArgument("mirror: --max-body must be > 0");
  o.max_compare_body = *max_body;
  canary::MirrorProxy proxy(o);
  CUTOVER_RETURN_IF_ERROR(proxy.CheckUpstreams());
  g_stop.store(false);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);
  std::string started_at = NowRfc3339Utc();
  CUTOVER_RETURN_IF_ERROR(proxy.Start());
  std::string host = o.listen.substr(0, o.listen.rfind(':'));
  std::string methods;
  for (const std::string& m : o.methods) methods += (methods.empty() ? "" : ",") + m;
  if (!g.quiet) {
    std::fprintf(stderr, "mirror: listening on http://%s:%d, mirroring %s\n", host.c_str(),
                 proxy.port(), methods.empty() ? "nothing" : methods.c_str());
  }
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (duration) deadline = std::chrono::steady_clock::now() + *duration;
  proxy.WaitUntilDone(&g_stop, deadline);
  proxy.Stop();
  canary::MirrorSummary summary = proxy.Summarize();
  canary::MirrorRunInfo run{.primary = RedactUrl(o.primary),
                            .secondary = RedactUrl(o.secondary),
                            .candidate = RedactUrl(o.candidate),
                            .methods = o.methods,
                            .max_body = o.max_compare_body,
                            .started_at = started_at,
                            .finished_at = NowRfc3339Utc(),
                            .traffic = proxy.traffic()};
  json doc = canary::MirrorReportJson(run, o.compare, summary);
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, canary::MirrorReportTable(run, summary)));
  return summary.verdict == canary::MirrorVerdict::kPass ? 0 : 1;
}

void AddMirrorCommand(CLI::App& cmd, CommandContext& ctx) {
  auto flags = std::make_shared<MirrorFlags>();
  canary::MirrorProxyOptions& o = flags->proxy;
  CLI::App* mirror = cmd.add_subcommand(
      "mirror",
      "Proxy clients to the primary and mirror each idempotent request to a second primary and "
      "the candidate; report per response field how often the candidate differs beyond the "
      "noise between the two primaries (exit 1 when a field differs more than --max-diff-rate, "
      "or when nothing was compared)");
  mirror->add_option("--listen", o.listen, "Address clients connect to, HOST:PORT")
      ->capture_default_str();
  mirror->add_option("--primary", o.primary, "Base URL of the primary (clients get its answers)")
      ->required();
  mirror->add_option("--secondary", o.secondary, "Base URL of a second primary (the noise)")
      ->required();
  mirror->add_option("--candidate", o.candidate, "Base URL of the candidate")->required();
  mirror
      ->add_option("--methods", o.methods,
                   "Methods mirrored, comma-separated; others are only "
                   "proxied (POST is opt-in)")
      ->delimiter(',')
      ->capture_default_str();
  mirror->add_option("--rel-tol", o.compare.rel_tol, "Relative tolerance of numbers")
      ->capture_default_str();
  mirror->add_option("--abs-tol", o.compare.abs_tol, "Absolute tolerance of numbers")
      ->capture_default_str();
  mirror->add_option("--ignore", o.compare.ignore,
                     "A field not compared, with what is under it (choices[*].id); repeatable");
  mirror
      ->add_option("--max-diff-rate", o.compare.max_diff_rate,
                   "A field fails when the candidate differs this much more often than the "
                   "two primaries do")
      ->capture_default_str();
  mirror
      ->add_option("--noisy-rate", o.compare.noisy_rate,
                   "A field the two primaries differ on more often than this is noisy and "
                   "never fails")
      ->capture_default_str();
  mirror->add_option("--max-fields", o.compare.max_fields, "Distinct fields tracked")
      ->capture_default_str();
  mirror->add_option("--duration", flags->duration, "Stop after this long (30s, 10m)");
  mirror->add_option("--requests", o.max_requests, "Stop after answering this many requests")
      ->check(IntRange(1, 2147483647));
  mirror
      ->add_option("--queue", o.queue_capacity,
                   "Copies waiting to be sent; when full (or holding 256 MiB of bodies) a copy is "
                   "dropped and counted")
      ->capture_default_str();
  mirror
      ->add_option("--max-body", flags->max_body,
                   "Bytes of each answer kept to compare (512KiB, 4MiB); a larger answer is "
                   "counted too large and not compared. Clients always get the whole answer, "
                   "streamed")
      ->capture_default_str();
  mirror->add_option("--workers", o.workers, "Threads sending copies")
      ->check(IntRange(1, 256))
      ->capture_default_str();
  SetCommand(mirror, ctx, [&ctx, flags]() { return RunMirror(ctx.global, *flags); });
}

Result<int> RunHistory(const GlobalOptions& g, const std::string& name) {
  std::string table;
  CUTOVER_ASSIGN_OR_RETURN(json doc, canary::RolloutHistory(ResolveDbPath(g), name, &table));
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, table));
  return 0;
}

}  // namespace

void AddCanaryCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "canary", "Drive a gray-release cutover on a load balancer, judged by metrics");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);

  auto spec = std::make_shared<std::string>();
  CLI::App* start = cmd->add_subcommand(
      "start", "Run a rollout in the foreground until it ends (resumes an active one)");
  start->add_option("SPEC", *spec, "Rollout spec (YAML, apiVersion cutover/v1)")->required();
  auto events = std::make_shared<bool>(false);
  start->add_flag("--events", *events,
                  "Print one line per event as it happens (step applied, each interval's checks "
                  "and decision, gates); the default when stdout is a terminal");
  SetCommand(start, ctx, [&ctx, spec, events]() { return RunStart(ctx.global, *spec, *events); });

  auto lint_spec = std::make_shared<std::string>();
  auto live = std::make_shared<bool>(false);
  CLI::App* lint = cmd->add_subcommand(
      "lint",
      "Check a rollout spec offline (exit 0, or 2 naming each error); with --live also run the "
      "pre-flight of `start` without moving traffic (exit 0, 1 when a check fails, 3 when "
      "Prometheus or the load balancer does not answer)");
  lint->add_option("SPEC", *lint_spec, "Rollout spec (YAML, apiVersion cutover/v1)")->required();
  lint->add_flag("--live", *live,
                 "Also check that Prometheus, the load balancer and every query answer");
  SetCommand(lint, ctx,
             [&ctx, lint_spec, live]() { return RunLint(ctx.global, *lint_spec, *live); });

  auto add_named = [&](const std::string& name, const std::string& help,
                       std::function<Result<int>(const std::string&)> fn) {
    auto rollout = std::make_shared<std::string>();
    CLI::App* sub = cmd->add_subcommand(name, help);
    sub->add_option("--name", *rollout, "Rollout name (default: the newest rollout)");
    SetCommand(sub, ctx, [rollout, fn]() { return fn(*rollout); });
    return sub;
  };
  add_named("status", "Show a rollout's state and whether a controller drives it",
            [&ctx](const std::string& n) { return RunStatus(ctx.global, n); });
  add_named("pause",
            "Pause a rollout (its controller holds the weights); refused when no controller runs",
            [&ctx](const std::string& n) { return RunCommand(ctx.global, n, "pause"); });
  add_named("resume", "Resume a paused rollout; refused when no controller runs",
            [&ctx](const std::string& n) { return RunCommand(ctx.global, n, "resume"); });
  auto full = std::make_shared<bool>(false);
  CLI::App* promote =
      add_named("promote", "Advance past the current step; refused when no controller runs",
                [&ctx, full](const std::string& n) {
                  return RunCommand(ctx.global, n, *full ? "promote-full" : "promote");
                });
  promote->add_flag("--full", *full, "Skip every remaining step and go to the last");
  add_named("abort",
            "Roll a rollout back: through its controller, or here (weights to 0, read back, "
            "confirmed) when none runs",
            [&ctx](const std::string& n) { return RunCommand(ctx.global, n, "abort"); });
  add_named("history", "Show a rollout's steps, measurements and events",
            [&ctx](const std::string& n) { return RunHistory(ctx.global, n); });
  auto analyze_spec = std::make_shared<std::string>();
  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>("now");
  CLI::App* analyze = cmd->add_subcommand(
      "analyze",
      "Judge a past time range with the spec's checks, interval by interval, without moving "
      "traffic (for tuning thresholds); exit 0 only when the analysis would have advanced");
  analyze->add_option("SPEC", *analyze_spec, "Rollout spec (YAML, apiVersion cutover/v1)")
      ->required();
  analyze
      ->add_option("--from", *from,
                   "Start: unix seconds, RFC 3339 (2026-12-04T10:00:00Z), now-DURATION (now-1h)")
      ->required();
  analyze->add_option("--to", *to, "End, in the same forms (default: now)");
  SetCommand(analyze, ctx, [&ctx, analyze_spec, from, to]() {
    return RunAnalyze(ctx.global, *analyze_spec, *from, *to);
  });
  AddMirrorCommand(*cmd, ctx);
}

}  // namespace cutover
