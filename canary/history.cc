#include "canary/history.h"

#include "core/time_util.h"

namespace cutover::canary {
namespace {

using nlohmann::json;

json OptJson(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

Result<RolloutRow> FindRollout(RolloutStore& store, const std::string& name) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<RolloutRow> r, store.LatestRollout(name));
  if (!r) {
    return Status::NotFound(name.empty() ? std::string("no rollout in the state file")
                                         : "no rollout named '" + name + "'");
  }
  return *r;
}

nlohmann::json RolloutJson(const RolloutRow& r) {
  return {{"id", r.id},
          {"name", r.name},
          {"status", r.status},
          {"reason", r.reason},
          {"step_index", r.step_index},
          {"started_at", r.started_at},
          {"updated_at", r.updated_at},
          {"finished_at", OptJson(r.finished_at)},
          {"analysis", json::parse(r.analysis_json, nullptr, false)}};
}

Result<nlohmann::json> RolloutHistory(const std::string& db_path, const std::string& name,
                                      std::string* table_out) {
  CUTOVER_ASSIGN_OR_RETURN(RolloutStore store,
                           RolloutStore::Open(db_path, OpenOptions{.must_exist = true}));
  CUTOVER_ASSIGN_OR_RETURN(RolloutRow r, FindRollout(store, name));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<StepRow> steps, store.Steps(r.id));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<MeasurementRow> ms, store.Measurements(r.id));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<EventRow> events, store.Events(r.id));
  // Bump the version on an incompatible change of this document.
  json doc = {{"schema", "cutover.rollout-history/1"}, {"rollout", RolloutJson(r)}};
  std::string table = "rollout " + r.name + " (" + std::to_string(r.id) + "): " + r.status + "\n";
  json js = json::array();
  for (const StepRow& s : steps) {
    js.push_back({{"index", s.step_index},
                  {"kind", s.kind},
                  {"canary_percent", s.canary_percent},
                  {"weights", json::parse(WeightsToJson(s.weights))},
                  {"readback", json::parse(WeightsToJson(s.readback))},
                  {"intended_at", s.intended_at},
                  {"applied_at", OptJson(s.applied_at)},
                  {"finished_at", OptJson(s.finished_at)},
                  {"outcome", s.outcome}});
    table += "  step " + std::to_string(s.step_index) + " " + s.kind + " canary " +
             std::to_string(s.canary_percent) + "% " + (s.outcome.empty() ? "-" : s.outcome) +
             ", intended " + Rfc3339Utc(s.intended_at) +
             (s.applied_at ? ", applied " + Rfc3339Utc(*s.applied_at) + " read back " +
                                 WeightsToJson(s.readback)
                           : std::string(", not applied")) +
             "\n";
    // Each interval of the step: its verdict and decision, then each check's value against
    // its bound (the reason the analysis wrote).
    std::string checks;
    for (const MeasurementRow& m : ms) {
      if (m.step_index != s.step_index || m.verdict == "info") continue;
      if (m.check == "interval") {
        table += "    interval " + std::to_string(m.interval_index) + " " +
                 Rfc3339Utc(m.window_start) + " .. " + Rfc3339Utc(m.window_end) + ": " + m.verdict +
                 ", " + m.reason + "\n" + checks;
        checks.clear();
      } else {
        checks += "      " + m.check + ": " + m.verdict +
                  (m.reason.empty() ? "" : " (" + m.reason + ")") + "\n";
      }
    }
  }
  doc["steps"] = std::move(js);
  json jm = json::array();
  for (const MeasurementRow& m : ms) {
    jm.push_back({{"step", m.step_index},
                  {"interval", m.interval_index},
                  {"check", m.check},
                  {"query", m.query},
                  {"window", {m.window_start, m.window_end}},
                  {"canary", OptJson(m.canary_value)},
                  {"baseline", OptJson(m.baseline_value)},
                  {"figures", json::parse(m.figures_json, nullptr, false)},
                  {"verdict", m.verdict},
                  {"reason", m.reason},
                  {"at", m.at}});
  }
  doc["measurements"] = std::move(jm);
  json je = json::array();
  if (!events.empty()) table += "  events:\n";
  for (const EventRow& e : events) {
    je.push_back({{"at", e.at}, {"kind", e.kind}, {"message", e.message}});
    table += "    " + Rfc3339Utc(e.at) + " " + e.kind + ": " + e.message + "\n";
  }
  doc["events"] = std::move(je);
  if (table_out != nullptr) *table_out = std::move(table);
  return doc;
}

}  // namespace cutover::canary
