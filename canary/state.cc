#include "canary/state.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "canary/lease.h"
#include "core/log.h"

namespace cutover::canary {
namespace {

// Bump by appending a migration; never edit a released one.
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE rollouts(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  spec_path TEXT NOT NULL,
  spec_text TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  step_index INTEGER NOT NULL DEFAULT -1,
  analysis TEXT NOT NULL DEFAULT '{}',
  started_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  finished_at REAL);
CREATE INDEX rollouts_name ON rollouts(name, id);
CREATE TABLE steps(
  rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
  step_index INTEGER NOT NULL,
  kind TEXT NOT NULL,
  canary_percent INTEGER NOT NULL,
  weights TEXT NOT NULL,
  intended_at REAL NOT NULL,
  applied_at REAL,
  readback TEXT NOT NULL DEFAULT '{}',
  finished_at REAL,
  outcome TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(rollout_id, step_index));
CREATE TABLE measurements(
  id INTEGER PRIMARY KEY,
  rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
  step_index INTEGER NOT NULL,
  interval_index INTEGER NOT NULL,
  check_name TEXT NOT NULL,
  query TEXT NOT NULL,
  window_start REAL NOT NULL,
  window_end REAL NOT NULL,
  canary_value REAL,
  baseline_value REAL,
  figures TEXT NOT NULL,
  verdict TEXT NOT NULL,
  reason TEXT NOT NULL,
  at REAL NOT NULL);
CREATE TABLE events(
  id INTEGER PRIMARY KEY,
  rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  message TEXT NOT NULL);
CREATE TABLE commands(
  id INTEGER PRIMARY KEY,
  rollout_id INTEGER NOT NULL REFERENCES rollouts(id),
  name TEXT NOT NULL,
  created_at REAL NOT NULL,
  handled_at REAL,
  result TEXT NOT NULL DEFAULT '');
)sql"},
    {2, R"sql(
CREATE TABLE leases(
  name TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  boot_id TEXT NOT NULL,
  host TEXT NOT NULL,
  beat_seconds REAL NOT NULL,
  taken_at REAL NOT NULL,
  beat_at REAL NOT NULL);
)sql"},
};

Status BindOpt(Statement& s, int i, const std::optional<double>& v) {
  return v ? s.Bind(i, *v) : s.Bind(i, nullptr);
}

std::optional<double> OptCol(const Statement& s, int c) {
  if (s.IsNull(c)) return std::nullopt;
  return s.Double(c);
}

constexpr char kRolloutCols[] =
    "id, name, spec_path, spec_text, status, reason, step_index, analysis, started_at, "
    "updated_at, finished_at";

RolloutRow ReadRollout(const Statement& s) {
  RolloutRow r;
  r.id = s.Int64(0);
  r.name = s.Text(1);
  r.spec_path = s.Text(2);
  r.spec_text = s.Text(3);
  r.status = s.Text(4);
  r.reason = s.Text(5);
  r.step_index = static_cast<int>(s.Int64(6));
  r.analysis_json = s.Text(7);
  r.started_at = s.Double(8);
  r.updated_at = s.Double(9);
  r.finished_at = OptCol(s, 10);
  return r;
}

constexpr char kStepCols[] =
    "rollout_id, step_index, kind, canary_percent, weights, intended_at, applied_at, readback, "
    "finished_at, outcome";

StepRow ReadStep(const Statement& s) {
  StepRow r;
  r.rollout_id = s.Int64(0);
  r.step_index = static_cast<int>(s.Int64(1));
  r.kind = s.Text(2);
  r.canary_percent = static_cast<int>(s.Int64(3));
  r.weights = WeightsFromJson(s.Text(4));
  r.intended_at = s.Double(5);
  r.applied_at = OptCol(s, 6);
  r.readback = WeightsFromJson(s.Text(7));
  r.finished_at = OptCol(s, 8);
  r.outcome = s.Text(9);
  return r;
}

constexpr char kLeaseCols[] =
    "name, generation, pid, start_ticks, boot_id, host, beat_seconds, taken_at, beat_at";

LeaseRow ReadLease(const Statement& s) {
  LeaseRow l;
  l.name = s.Text(0);
  l.generation = s.Int64(1);
  l.holder.pid = s.Int64(2);
  l.holder.start_ticks = static_cast<uint64_t>(s.Int64(3));
  l.holder.boot_id = s.Text(4);
  l.holder.host = s.Text(5);
  l.beat_seconds = s.Double(6);
  l.taken_at = s.Double(7);
  l.beat_at = s.Double(8);
  return l;
}

std::string Seconds1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

Status CommitIf(std::optional<Transaction>& tx) { return tx ? tx->Commit() : Status::Ok(); }

// Aborted "lost the lease ...", naming who holds it now.
Status LostLease(const std::string& name, int64_t generation,
                 const std::optional<LeaseRow>& current, double now) {
  std::string who = !current ? std::string("nobody (the lease is gone)")
                    : current->holder.pid == 0
                        ? std::string("nobody (released)")
                        : DescribeLeaseHolder(*current, now) + ", generation " +
                              std::to_string(current->generation);
  return Status::Aborted("lost the lease of rollout " + name + " (generation " +
                         std::to_string(generation) + ") to " + who +
                         "; this controller writes nothing more");
}

}  // namespace

LeaseVerdict JudgeLease(const LeaseRow& lease, double now,
                        const std::function<HolderVerdict(const ProcessIdentity&)>& judge) {
  if (lease.holder.pid == 0) return {false, "released"};
  HolderVerdict v = judge(lease.holder);
  if (v.state == HolderState::kGone) return {false, v.reason};
  const double silent = now - lease.beat_at;
  if (silent > kLeaseMissedBeats * lease.beat_seconds) {
    return {false, "no heartbeat for " + Seconds1(silent) + " s (beats every " +
                       Seconds1(lease.beat_seconds) + " s)"};
  }
  return {true, ""};
}

std::string DescribeLeaseHolder(const LeaseRow& lease, double now) {
  return "pid " + std::to_string(lease.holder.pid) + " on host " +
         (lease.holder.host.empty() ? std::string("?") : lease.holder.host) + ", last beat " +
         Seconds1(std::max(0.0, now - lease.beat_at)) + " s ago";
}

bool IsActiveStatus(const std::string& status) {
  return status == "running" || status == "paused" || status == "rolling-back";
}

std::string WeightsToJson(const Weights& w) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : w) j[k] = v;
  return j.dump();
}

Weights WeightsFromJson(const std::string& text) {
  Weights w;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return w;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.value().is_number_integer()) w[it.key()] = it.value().get<int>();
  }
  return w;
}

Result<RolloutStore> RolloutStore::Open(const std::string& path, OpenOptions opts) {
  CUTOVER_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path, "canary", kMigrations, opts));
  return RolloutStore(std::move(db));
}

Result<int64_t> RolloutStore::CreateRollout(const std::string& name, const std::string& spec_path,
                                            const std::string& spec_text, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO rollouts(name, spec_path, spec_text, status, started_at, "
                  "updated_at) VALUES(?, ?, ?, 'running', ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, name));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, spec_path));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, Redact(spec_text)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(5, now));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  const int64_t row_id = db_.LastInsertRowId();
  CUTOVER_RETURN_IF_ERROR(CommitIf(tx));
  return row_id;
}

Result<std::optional<RolloutRow>> RolloutStore::LatestRollout(const std::string& name) {
  std::string sql = std::string("SELECT ") + kRolloutCols + " FROM rollouts" +
                    (name.empty() ? "" : " WHERE name = ?") + " ORDER BY id DESC LIMIT 1";
  CUTOVER_ASSIGN_OR_RETURN(Statement s, db_.Prepare(sql));
  if (!name.empty()) CUTOVER_RETURN_IF_ERROR(s.Bind(1, name));
  CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<RolloutRow>();
  return std::optional<RolloutRow>(ReadRollout(s));
}

Result<RolloutRow> RolloutStore::GetRollout(int64_t id) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s, db_.Prepare(std::string("SELECT ") + kRolloutCols +
                                                    " FROM rollouts WHERE id = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return Status::NotFound("no rollout " + std::to_string(id));
  return ReadRollout(s);
}

Status RolloutStore::SetStatus(int64_t id, const std::string& status, const std::string& reason,
                               double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE rollouts SET status = ?, reason = ?, updated_at = ?, "
                               "finished_at = ? WHERE id = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, status));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, reason));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, now));
  CUTOVER_RETURN_IF_ERROR(
      BindOpt(s, 4, IsActiveStatus(status) ? std::nullopt : std::optional<double>(now)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(5, id));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return CommitIf(tx);
}

Status RolloutStore::FinishStep(int64_t id, int step, const std::string& outcome, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE steps SET finished_at = ?, outcome = ? WHERE rollout_id = "
                               "? AND step_index = ? AND finished_at IS NULL"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, outcome));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, step));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return CommitIf(tx);
}

Status RolloutStore::EndRollout(int64_t id, int step, const std::string& step_outcome,
                               const std::string& status, const std::string& reason, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  if (step >= 0) CUTOVER_RETURN_IF_ERROR(FinishStep(id, step, step_outcome, now));
  CUTOVER_RETURN_IF_ERROR(SetStatus(id, status, reason, now));
  return CommitIf(tx);
}

Status RolloutStore::EnterStep(int64_t id, int prev, const std::string& prev_outcome,
                               const StepRow& next) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(std::optional<StepRow> existing, GetStep(id, next.step_index));
  if (existing) {
    return Status::FailedPrecondition("step " + std::to_string(next.step_index) + " of rollout " +
                                      std::to_string(id) + " is already recorded");
  }
  if (prev >= 0) CUTOVER_RETURN_IF_ERROR(FinishStep(id, prev, prev_outcome, next.intended_at));
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("INSERT INTO steps(rollout_id, step_index, kind, canary_percent, "
                               "weights, intended_at) VALUES(?, ?, ?, ?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, next.step_index));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, next.kind));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, next.canary_percent));
  CUTOVER_RETURN_IF_ERROR(s.Bind(5, WeightsToJson(next.weights)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(6, next.intended_at));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement u, db_.Prepare("UPDATE rollouts SET step_index = ?, updated_at = ? WHERE id = ?"));
  CUTOVER_RETURN_IF_ERROR(u.Bind(1, next.step_index));
  CUTOVER_RETURN_IF_ERROR(u.Bind(2, next.intended_at));
  CUTOVER_RETURN_IF_ERROR(u.Bind(3, id));
  CUTOVER_RETURN_IF_ERROR(u.Run());
  return CommitIf(tx);
}

Status RolloutStore::MarkStepApplied(int64_t id, int step, const Weights& readback, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE steps SET applied_at = ?, readback = ? WHERE rollout_id = "
                               "? AND step_index = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, WeightsToJson(readback)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, step));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return CommitIf(tx);
}

Result<std::optional<StepRow>> RolloutStore::GetStep(int64_t id, int step) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare(std::string("SELECT ") + kStepCols +
                                       " FROM steps WHERE rollout_id = ? AND step_index = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, step));
  CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<StepRow>();
  return std::optional<StepRow>(ReadStep(s));
}

Result<std::vector<StepRow>> RolloutStore::Steps(int64_t id) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare(std::string("SELECT ") + kStepCols +
                                       " FROM steps WHERE rollout_id = ? ORDER BY step_index"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  std::vector<StepRow> out;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back(ReadStep(s));
  }
  return out;
}

Status RolloutStore::RecordInterval(int64_t id, const std::vector<MeasurementRow>& rows,
                                    const std::string& analysis_json, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  for (const MeasurementRow& m : rows) {
    CUTOVER_ASSIGN_OR_RETURN(
        Statement s,
        db_.Prepare("INSERT INTO measurements(rollout_id, step_index, interval_index, check_name, "
                    "query, window_start, window_end, canary_value, baseline_value, figures, "
                    "verdict, reason, at) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
    CUTOVER_RETURN_IF_ERROR(s.Bind(2, m.step_index));
    CUTOVER_RETURN_IF_ERROR(s.Bind(3, m.interval_index));
    CUTOVER_RETURN_IF_ERROR(s.Bind(4, m.check));
    CUTOVER_RETURN_IF_ERROR(s.Bind(5, m.query));
    CUTOVER_RETURN_IF_ERROR(s.Bind(6, m.window_start));
    CUTOVER_RETURN_IF_ERROR(s.Bind(7, m.window_end));
    CUTOVER_RETURN_IF_ERROR(BindOpt(s, 8, m.canary_value));
    CUTOVER_RETURN_IF_ERROR(BindOpt(s, 9, m.baseline_value));
    CUTOVER_RETURN_IF_ERROR(s.Bind(10, m.figures_json.empty() ? "{}" : m.figures_json));
    CUTOVER_RETURN_IF_ERROR(s.Bind(11, m.verdict));
    CUTOVER_RETURN_IF_ERROR(s.Bind(12, m.reason));
    CUTOVER_RETURN_IF_ERROR(s.Bind(13, m.at));
    CUTOVER_RETURN_IF_ERROR(s.Run());
  }
  CUTOVER_ASSIGN_OR_RETURN(
      Statement u, db_.Prepare("UPDATE rollouts SET analysis = ?, updated_at = ? WHERE id = ?"));
  CUTOVER_RETURN_IF_ERROR(u.Bind(1, analysis_json));
  CUTOVER_RETURN_IF_ERROR(u.Bind(2, now));
  CUTOVER_RETURN_IF_ERROR(u.Bind(3, id));
  CUTOVER_RETURN_IF_ERROR(u.Run());
  return CommitIf(tx);
}

Result<std::vector<MeasurementRow>> RolloutStore::Measurements(int64_t id) {
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("SELECT rollout_id, step_index, interval_index, check_name, query, "
                  "window_start, window_end, canary_value, baseline_value, figures, verdict, "
                  "reason, at FROM measurements WHERE rollout_id = ? ORDER BY id"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  std::vector<MeasurementRow> out;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    MeasurementRow m;
    m.rollout_id = s.Int64(0);
    m.step_index = static_cast<int>(s.Int64(1));
    m.interval_index = static_cast<int>(s.Int64(2));
    m.check = s.Text(3);
    m.query = s.Text(4);
    m.window_start = s.Double(5);
    m.window_end = s.Double(6);
    m.canary_value = OptCol(s, 7);
    m.baseline_value = OptCol(s, 8);
    m.figures_json = s.Text(9);
    m.verdict = s.Text(10);
    m.reason = s.Text(11);
    m.at = s.Double(12);
    out.push_back(std::move(m));
  }
  return out;
}

Status RolloutStore::AddEvent(int64_t id, const std::string& kind, const std::string& message,
                              double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO events(rollout_id, at, kind, message) VALUES(?, ?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, kind));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, message));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return CommitIf(tx);
}

Result<std::vector<EventRow>> RolloutStore::Events(int64_t id) {
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("SELECT at, kind, message FROM events WHERE rollout_id = ? ORDER BY id"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  std::vector<EventRow> out;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back({s.Double(0), s.Text(1), s.Text(2)});
  }
  return out;
}

Result<int64_t> RolloutStore::AddCommand(int64_t id, const std::string& name, double now) {
  static constexpr std::array<std::string_view, 5> kNames = {"pause", "resume", "promote",
                                                             "promote-full", "abort"};
  bool known = false;
  for (std::string_view n : kNames) known = known || n == name;
  if (!known) return Status::InvalidArgument("unknown rollout command '" + name + "'");
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO commands(rollout_id, name, created_at) VALUES(?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, name));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, now));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  const int64_t row_id = db_.LastInsertRowId();
  CUTOVER_RETURN_IF_ERROR(CommitIf(tx));
  return row_id;
}

Result<std::vector<CommandRow>> RolloutStore::PendingCommands(int64_t id) {
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("SELECT id, name, created_at FROM commands WHERE rollout_id = ? "
                               "AND handled_at IS NULL ORDER BY id"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, id));
  std::vector<CommandRow> out;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back({s.Int64(0), s.Text(1), s.Double(2)});
  }
  return out;
}

Status RolloutStore::MarkCommandHandled(int64_t command_id, const std::string& result, double now) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE commands SET handled_at = ?, result = ? WHERE id = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, result));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, command_id));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return CommitIf(tx);
}

Result<std::optional<LeaseRow>> RolloutStore::GetLease(const std::string& name) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s, db_.Prepare(std::string("SELECT ") + kLeaseCols +
                                                    " FROM leases WHERE name = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, name));
  CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row) return std::optional<LeaseRow>();
  return std::optional<LeaseRow>(ReadLease(s));
}

Result<LeaseTake> RolloutStore::TakeLease(const std::string& name, const ProcessIdentity& holder,
                                          double beat_seconds, double now) {
  CUTOVER_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  CUTOVER_ASSIGN_OR_RETURN(std::optional<LeaseRow> current, GetLease(name));
  LeaseTake take;
  if (current) {
    LeaseVerdict v = JudgeLease(*current, now);
    if (v.binds) {
      return Status::FailedPrecondition("rollout " + name + " is driven by another controller: " +
                                        DescribeLeaseHolder(*current, now));
    }
    if (current->holder.pid != 0) {
      take.taken_over = current;
      take.stale_because = v.why;
    }
  }
  take.generation = current ? current->generation + 1 : 1;
  CUTOVER_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare(std::string("INSERT OR REPLACE INTO leases(") + kLeaseCols +
                                       ") VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, name));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, take.generation));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, holder.pid));
  CUTOVER_RETURN_IF_ERROR(s.Bind(4, static_cast<int64_t>(holder.start_ticks)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(5, holder.boot_id));
  CUTOVER_RETURN_IF_ERROR(s.Bind(6, holder.host));
  CUTOVER_RETURN_IF_ERROR(s.Bind(7, beat_seconds));
  CUTOVER_RETURN_IF_ERROR(s.Bind(8, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(9, now));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  CUTOVER_RETURN_IF_ERROR(tx.Commit());
  return take;
}

Status RolloutStore::BeatLease(const std::string& name, int64_t generation, double now) {
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s, db_.Prepare("UPDATE leases SET beat_at = ? WHERE name = ? AND generation = ? "
                               "AND pid != 0"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, name));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, generation));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  if (db_.Changes() == 1) return Status::Ok();
  CUTOVER_ASSIGN_OR_RETURN(std::optional<LeaseRow> current, GetLease(name));
  return LostLease(name, generation, current, now);
}

Status RolloutStore::ReleaseLease(const std::string& name, int64_t generation, double now) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("UPDATE leases SET pid = 0, beat_at = ? WHERE name = ? AND "
                                       "generation = ?"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, now));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, name));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, generation));
  return s.Run();
}

void RolloutStore::SetFence(const std::string& name, int64_t generation) {
  fence_name_ = name;
  fence_generation_ = generation;
}

Status RolloutStore::CheckFence() {
  if (fence_name_.empty()) return Status::Ok();
  CUTOVER_ASSIGN_OR_RETURN(std::optional<LeaseRow> current, GetLease(fence_name_));
  if (current && current->generation == fence_generation_ && current->holder.pid != 0) {
    return Status::Ok();
  }
  return LostLease(fence_name_, fence_generation_, current, LeaseNow());
}

Result<std::optional<Transaction>> RolloutStore::BeginWrite() {
  if (db_.InTransaction()) return std::optional<Transaction>();
  CUTOVER_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  CUTOVER_RETURN_IF_ERROR(CheckFence());
  return std::optional<Transaction>(std::move(tx));
}

Status RolloutStore::Fenced(const std::function<Status()>& action) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<Transaction> tx, BeginWrite());
  CUTOVER_RETURN_IF_ERROR(action());
  return CommitIf(tx);
}

}  // namespace cutover::canary
