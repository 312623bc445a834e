#include "compat/record.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/file_util.h"
#include "core/json.h"

namespace cutover {
namespace {

using nlohmann::json;

json NumOrNull(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

Result<std::vector<double>> Doubles(const json& c, const std::string& ptr,
                                    const std::string& what) {
  CUTOVER_ASSIGN_OR_RETURN(const json* a, GetArray(c, ptr, what));
  std::vector<double> out;
  out.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    const json& v = (*a)[i];
    if (v.is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (v.is_number()) {
      out.push_back(v.get<double>());
    } else {
      return Status::InvalidArgument(what + ": " + ptr + "/" + std::to_string(i) +
                                     ": expected a number or null");
    }
  }
  return out;
}

json InterferenceToJson(const Interference& f);
Result<Interference> InterferenceFromJson(const json& f, const std::string& what);

// A timing read from a record: finite, above 0 and at most kMaxTimingSeconds (a value such as
// 1e308 is no measurement, and would overflow the statistics computed from it).
Status CheckTime(double v, const std::string& what, const std::string& ptr) {
  if (std::isfinite(v) && v > 0 && v <= kMaxTimingSeconds) return Status::Ok();
  char got[64];
  std::snprintf(got, sizeof got, "%.17g", v);
  return Status::InvalidArgument(what + ": " + ptr + ": expected a time in seconds above 0 and at most " +
                                 std::to_string(static_cast<int>(kMaxTimingSeconds)) + ", got " +
                                 (std::isnan(v) ? std::string("null") : std::string(got)));
}

Result<CaseResult> CaseFromJson(const json& c, const std::string& what) {
  CaseResult r;
  CUTOVER_ASSIGN_OR_RETURN(r.id, GetString(c, "/id", what));
  CUTOVER_ASSIGN_OR_RETURN(r.spec.op, GetString(c, "/op", what));
  CUTOVER_ASSIGN_OR_RETURN(r.spec.dtype, GetString(c, "/dtype", what));
  CUTOVER_ASSIGN_OR_RETURN(r.spec.layout, GetString(c, "/layout", what));
  CUTOVER_ASSIGN_OR_RETURN(r.spec.seed, GetUint(c, "/seed", what));
  if (const json* d = FindJson(c, "/dist"); d != nullptr) {
    if (!d->is_string()) return Status::InvalidArgument(what + ": /dist: expected a string");
    r.spec.dist = d->get<std::string>();
    Status ok = ParseDist(r.spec.dist);
    if (!ok.ok()) return Status::InvalidArgument(what + ": /dist: " + ok.message());
  }
  CUTOVER_ASSIGN_OR_RETURN(const json* shape, GetArray(c, "/shape", what));
  for (size_t i = 0; i < shape->size(); ++i) {
    CUTOVER_ASSIGN_OR_RETURN(int64_t d, GetInt(c, "/shape/" + std::to_string(i), what));
    r.spec.shape.push_back(d);
  }
  if (r.spec.Id() != r.id) {
    return Status::InvalidArgument(what + ": case " + r.id + " does not match its fields (" +
                                   r.spec.Id() + ")");
  }
  CUTOVER_ASSIGN_OR_RETURN(r.status, GetString(c, "/status", what));
  if (FindJson(c, "/implementation") != nullptr) {
    CUTOVER_ASSIGN_OR_RETURN(r.implementation, GetString(c, "/implementation", what));
  }
  if (r.status != "ok" && r.status != "n/a" && r.status != "error" && r.status != "missing") {
    return Status::InvalidArgument(what + ": case " + r.id + ": bad status '" + r.status + "'");
  }
  if (const json* e = FindJson(c, "/error"); e != nullptr && e->is_string()) r.error = *e;
  if (r.status != "ok") return r;
  CUTOVER_ASSIGN_OR_RETURN(r.output_count, GetUint(c, "/output_count", what));
  CUTOVER_ASSIGN_OR_RETURN(r.digest, GetString(c, "/digest", what));
  CUTOVER_ASSIGN_OR_RETURN(const json* tiles, GetArray(c, "/tiles", what));
  for (size_t i = 0; i < tiles->size(); ++i) {
    CUTOVER_ASSIGN_OR_RETURN(std::string t, GetString(c, "/tiles/" + std::to_string(i), what));
    r.tiles.push_back(t);
  }
  CUTOVER_ASSIGN_OR_RETURN(const json* idx, GetArray(c, "/samples/index", what));
  for (size_t i = 0; i < idx->size(); ++i) {
    CUTOVER_ASSIGN_OR_RETURN(uint64_t v, GetUint(c, "/samples/index/" + std::to_string(i), what));
    r.sample_index.push_back(v);
  }
  CUTOVER_ASSIGN_OR_RETURN(r.sample_value, Doubles(c, "/samples/value", what));
  CUTOVER_ASSIGN_OR_RETURN(r.sample_truth, Doubles(c, "/samples/truth", what));
  if (r.sample_value.size() != r.sample_index.size() ||
      r.sample_truth.size() != r.sample_index.size()) {
    return Status::InvalidArgument(what + ": case " + r.id +
                                   ": samples index, value and truth differ in length");
  }
  CUTOVER_ASSIGN_OR_RETURN(r.nan_count, GetUint(c, "/nan_count", what));
  CUTOVER_ASSIGN_OR_RETURN(r.inf_count, GetUint(c, "/inf_count", what));
  CUTOVER_ASSIGN_OR_RETURN(r.deterministic, GetBool(c, "/deterministic", what));
  CUTOVER_ASSIGN_OR_RETURN(r.reduction_length, GetInt(c, "/reduction_length", what));
  CUTOVER_ASSIGN_OR_RETURN(r.flops, GetDouble(c, "/flops", what));
  CUTOVER_ASSIGN_OR_RETURN(r.bytes, GetDouble(c, "/bytes", what));
  CUTOVER_ASSIGN_OR_RETURN(r.timing.reps_s, Doubles(c, "/timing/reps_s", what));
  if (r.timing.reps_s.empty()) {
    return Status::InvalidArgument(what + ": case " + r.id +
                                   ": /timing/reps_s is empty (an ok case has timed runs)");
  }
  for (size_t i = 0; i < r.timing.reps_s.size(); ++i) {
    CUTOVER_RETURN_IF_ERROR(
        CheckTime(r.timing.reps_s[i], what, "/timing/reps_s/" + std::to_string(i)));
  }
  CUTOVER_ASSIGN_OR_RETURN(r.timing.median_s, GetDouble(c, "/timing/median_s", what));
  CUTOVER_ASSIGN_OR_RETURN(r.timing.p10_s, GetDouble(c, "/timing/p10_s", what));
  CUTOVER_ASSIGN_OR_RETURN(r.timing.p90_s, GetDouble(c, "/timing/p90_s", what));
  CUTOVER_RETURN_IF_ERROR(CheckTime(r.timing.median_s, what, "/timing/median_s"));
  CUTOVER_RETURN_IF_ERROR(CheckTime(r.timing.p10_s, what, "/timing/p10_s"));
  CUTOVER_RETURN_IF_ERROR(CheckTime(r.timing.p90_s, what, "/timing/p90_s"));
  CUTOVER_ASSIGN_OR_RETURN(r.timing.rate, GetDouble(c, "/timing/rate", what));
  if (!std::isfinite(r.timing.rate) || r.timing.rate < 0) {
    return Status::InvalidArgument(what + ": /timing/rate: expected a finite rate, 0 or above");
  }
  CUTOVER_ASSIGN_OR_RETURN(r.timing.rate_unit, GetString(c, "/timing/rate_unit", what));
  if (FindJson(c, "/timing/fraction_of_ceiling") != nullptr) {
    CUTOVER_ASSIGN_OR_RETURN(r.timing.fraction_of_ceiling,
                             GetDouble(c, "/timing/fraction_of_ceiling", what));
  }
  if (const json* f = FindJson(c, "/timing/interference"); f != nullptr) {
    CUTOVER_ASSIGN_OR_RETURN(r.timing.interference, InterferenceFromJson(*f, what));
  }
  return r;
}

json InterferenceToJson(const Interference& f) {
  return {{"wall_s", f.wall_s},
          {"steal_share", f.steal_share},
          {"involuntary_switches", f.involuntary_switches},
          {"cpu_mhz_min", f.cpu_mhz_min},
          {"cpu_mhz_max", f.cpu_mhz_max},
          {"sm_clock_min_mhz", f.sm_clock_min_mhz},
          {"sm_clock_max_mhz", f.sm_clock_max_mhz},
          {"mem_clock_min_mhz", f.mem_clock_min_mhz},
          {"throttle_reasons", f.throttle_reasons},
          {"temperature_max_c", f.temperature_max_c},
          {"power_max_w", f.power_max_w},
          {"other_processes", f.other_processes}};
}

// Every field optional (-1 when absent); a present one must be a finite number.
Result<Interference> InterferenceFromJson(const json& f, const std::string& what) {
  Interference out;
  if (!f.is_object()) {
    return Status::InvalidArgument(what + ": /timing/interference: expected an object");
  }
  out.measured = true;
  auto num = [&](const char* key, double* v) -> Status {
    auto it = f.find(key);
    if (it == f.end() || it->is_null()) return Status::Ok();
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      return Status::InvalidArgument(what + ": /timing/interference/" + key +
                                     ": expected a number");
    }
    *v = it->get<double>();
    return Status::Ok();
  };
  double inv = -1, thr = -1, other = -1;
  CUTOVER_RETURN_IF_ERROR(num("wall_s", &out.wall_s));
  CUTOVER_RETURN_IF_ERROR(num("steal_share", &out.steal_share));
  CUTOVER_RETURN_IF_ERROR(num("involuntary_switches", &inv));
  CUTOVER_RETURN_IF_ERROR(num("cpu_mhz_min", &out.cpu_mhz_min));
  CUTOVER_RETURN_IF_ERROR(num("cpu_mhz_max", &out.cpu_mhz_max));
  CUTOVER_RETURN_IF_ERROR(num("sm_clock_min_mhz", &out.sm_clock_min_mhz));
  CUTOVER_RETURN_IF_ERROR(num("sm_clock_max_mhz", &out.sm_clock_max_mhz));
  CUTOVER_RETURN_IF_ERROR(num("mem_clock_min_mhz", &out.mem_clock_min_mhz));
  CUTOVER_RETURN_IF_ERROR(num("throttle_reasons", &thr));
  CUTOVER_RETURN_IF_ERROR(num("temperature_max_c", &out.temperature_max_c));
  CUTOVER_RETURN_IF_ERROR(num("power_max_w", &out.power_max_w));
  CUTOVER_RETURN_IF_ERROR(num("other_processes", &other));
  // Clamped so the integer casts stay defined on any input.
  out.involuntary_switches = static_cast<int64_t>(std::clamp(inv, -1.0, 9e18));
  out.throttle_reasons = static_cast<int64_t>(std::clamp(thr, -1.0, 9e18));
  out.other_processes = static_cast<int>(std::clamp(other, -1.0, 1e9));
  return out;
}

}  // namespace

json RecordToJson(const CompatRecord& rec) {
  json doc = {
      {"schema", std::string(kCompatRecordFamily) + "/" + std::to_string(kCompatRecordVersion)},
      {"backend", rec.backend},
      {"suite", rec.suite},
      {"accumulate", rec.accumulate},
      {"threads", rec.threads},
      {"fp64_accumulate", rec.accumulate == "fp64"},
      {"build_type", rec.build_type},
      {"op_table_version", rec.op_table_version},
      {"created_at", rec.created_at},
      {"cutover_version", rec.cutover_version},
      {"fingerprint", rec.fingerprint},
      {"cases", json::array()}};
  if (rec.calibration.measured) {
    const Calibration& k = rec.calibration;
    doc["calibration"] = {{"copy_gbps", k.copy_gbps},
                          {"gemm_gflops", k.gemm_gflops},
                          {"copy_bytes", k.copy_bytes},
                          {"gemm_shape", k.gemm_shape},
                          {"seconds", k.seconds}};
    if (!k.gemm_implementation.empty()) {
      doc["calibration"]["gemm_implementation"] = k.gemm_implementation;
    }
    if (k.gemm_bf16_gflops > 0) {
      doc["calibration"]["gemm_bf16_gflops"] = k.gemm_bf16_gflops;
      doc["calibration"]["gemm_bf16_size"] = k.gemm_bf16_size;
    }
  }
  if (rec.tf32_allowed >= 0) doc["tf32_allowed"] = rec.tf32_allowed == 1;
  if (rec.sm_count >= 0) doc["sm_count"] = rec.sm_count;
  if (!rec.device.is_null()) doc["device"] = rec.device;
  for (const CaseResult& r : rec.cases) {
    json c = {{"id", r.id},
              {"op", r.spec.op},
              {"dtype", r.spec.dtype},
              {"shape", r.spec.shape},
              {"layout", r.spec.layout},
              {"dist", r.spec.dist},
              {"seed", r.spec.seed},
              {"status", r.status}};
    if (!r.error.empty()) c["error"] = r.error;
    if (!r.implementation.empty()) c["implementation"] = r.implementation;
    if (r.status == "ok") {
      json values = json::array(), truth = json::array();
      for (double v : r.sample_value) values.push_back(NumOrNull(v));
      for (double v : r.sample_truth) truth.push_back(NumOrNull(v));
      json reps = json::array();
      for (double v : r.timing.reps_s) reps.push_back(v);
      c.update({{"output_count", r.output_count},
                {"digest", r.digest},
                {"tiles", r.tiles},
                {"samples", {{"index", r.sample_index}, {"value", values}, {"truth", truth}}},
                {"nan_count", r.nan_count},
                {"inf_count", r.inf_count},
                {"deterministic", r.deterministic},
                {"reduction_length", r.reduction_length},
                {"flops", r.flops},
                {"bytes", r.bytes},
                {"timing",
                 {{"reps_s", reps},
                  {"median_s", r.timing.median_s},
                  {"p10_s", r.timing.p10_s},
                  {"p90_s", r.timing.p90_s},
                  {"rate", r.timing.rate},
                  {"rate_unit", r.timing.rate_unit},
                  {"fraction_of_ceiling", r.timing.fraction_of_ceiling}}}});
      if (r.timing.interference.measured) {
        c["timing"]["interference"] = InterferenceToJson(r.timing.interference);
      }
    }
    doc["cases"].push_back(std::move(c));
  }
  return doc;
}

Result<CompatRecord> RecordFromJson(const json& doc, const std::string& what) {
  CUTOVER_RETURN_IF_ERROR(CheckSchema(doc, kCompatRecordFamily, kCompatRecordVersion, what));
  CompatRecord rec;
  CUTOVER_ASSIGN_OR_RETURN(rec.backend, GetString(doc, "/backend", what));
  CUTOVER_ASSIGN_OR_RETURN(rec.suite, GetString(doc, "/suite", what));
  CUTOVER_ASSIGN_OR_RETURN(rec.accumulate, GetString(doc, "/accumulate", what));
  CUTOVER_ASSIGN_OR_RETURN(int64_t threads, GetInt(doc, "/threads", what));
  rec.threads = static_cast<int>(threads);
  CUTOVER_ASSIGN_OR_RETURN(int64_t table, GetInt(doc, "/op_table_version", what));
  rec.op_table_version = static_cast<int>(table);
  CUTOVER_ASSIGN_OR_RETURN(rec.created_at, GetString(doc, "/created_at", what));
  if (const json* v = FindJson(doc, "/build_type"); v != nullptr && v->is_string()) {
    rec.build_type = *v;
  }
  if (const json* fp64 = FindJson(doc, "/fp64_accumulate"); fp64 != nullptr) {
    if (!fp64->is_boolean() || fp64->get<bool>() != (rec.accumulate == "fp64")) {
      return Status::InvalidArgument(what + ": /fp64_accumulate: does not match /accumulate '" +
                                     rec.accumulate + "'");
    }
  }
  if (FindJson(doc, "/calibration") != nullptr) {
    Calibration& k = rec.calibration;
    k.measured = true;
    CUTOVER_ASSIGN_OR_RETURN(k.copy_gbps, GetDouble(doc, "/calibration/copy_gbps", what));
    CUTOVER_ASSIGN_OR_RETURN(k.gemm_gflops, GetDouble(doc, "/calibration/gemm_gflops", what));
    CUTOVER_ASSIGN_OR_RETURN(k.copy_bytes, GetDouble(doc, "/calibration/copy_bytes", what));
    CUTOVER_ASSIGN_OR_RETURN(k.seconds, GetDouble(doc, "/calibration/seconds", what));
    if (FindJson(doc, "/calibration/gemm_implementation") != nullptr) {
      CUTOVER_ASSIGN_OR_RETURN(k.gemm_implementation,
                               GetString(doc, "/calibration/gemm_implementation", what));
    }
    if (FindJson(doc, "/calibration/gemm_bf16_gflops") != nullptr) {
      CUTOVER_ASSIGN_OR_RETURN(k.gemm_bf16_gflops,
                               GetDouble(doc, "/calibration/gemm_bf16_gflops", what));
      CUTOVER_ASSIGN_OR_RETURN(k.gemm_bf16_size, GetInt(doc, "/calibration/gemm_bf16_size", what));
    }
    CUTOVER_ASSIGN_OR_RETURN(const json* shape, GetArray(doc, "/calibration/gemm_shape", what));
    for (size_t i = 0; i < shape->size(); ++i) {
      CUTOVER_ASSIGN_OR_RETURN(int64_t d,
                               GetInt(doc, "/calibration/gemm_shape/" + std::to_string(i), what));
      k.gemm_shape.push_back(d);
    }
  }
  if (const json* v = FindJson(doc, "/tf32_allowed"); v != nullptr && !v->is_null()) {
    if (!v->is_boolean())
      return Status::InvalidArgument(what + ": /tf32_allowed: expected a boolean");
    rec.tf32_allowed = v->get<bool>() ? 1 : 0;
  }
  if (FindJson(doc, "/sm_count") != nullptr && !FindJson(doc, "/sm_count")->is_null()) {
    CUTOVER_ASSIGN_OR_RETURN(int64_t sm, GetInt(doc, "/sm_count", what));
    rec.sm_count = static_cast<int>(sm);
  }
  if (const json* v = FindJson(doc, "/cutover_version"); v != nullptr && v->is_string()) {
    rec.cutover_version = *v;
  }
  if (const json* fp = FindJson(doc, "/fingerprint"); fp != nullptr) rec.fingerprint = *fp;
  if (const json* dev = FindJson(doc, "/device"); dev != nullptr && dev->is_object()) {
    rec.device = *dev;
  }
  CUTOVER_ASSIGN_OR_RETURN(const json* cases, GetArray(doc, "/cases", what));
  std::set<std::string> ids;
  for (size_t i = 0; i < cases->size(); ++i) {
    const json& c = (*cases)[i];
    if (!c.is_object()) {
      return Status::InvalidArgument(what + ": /cases/" + std::to_string(i) +
                                     ": expected an object");
    }
    CUTOVER_ASSIGN_OR_RETURN(CaseResult r, CaseFromJson(c, what + ": /cases/" + std::to_string(i)));
    if (!ids.insert(r.id).second) {
      return Status::InvalidArgument(what + ": /cases/" + std::to_string(i) + ": case " + r.id +
                                     " appears twice");
    }
    rec.cases.push_back(std::move(r));
  }
  return rec;
}

Result<CompatRecord> LoadRecord(const std::string& path) {
  CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  CUTOVER_ASSIGN_OR_RETURN(json doc, ParseJson(text, path));
  return RecordFromJson(doc, path);
}

Status SaveRecord(const std::string& path, const CompatRecord& rec) {
  return WriteFileAtomic(path, DumpJson(RecordToJson(rec)) + "\n");
}

}  // namespace cutover
