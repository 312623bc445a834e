#include "report/assess.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/json.h"
#include "core/units.h"
#include "report/render_util.h"
#include "report/stability_section.h"

namespace cutover::report {
namespace {

using nlohmann::json;

int SeverityRank(const std::string& s) { return s == "blocker" ? 0 : s == "warning" ? 1 : 2; }

std::string Or(const std::optional<std::string>& v, const std::string& none = "-") {
  return v && !v->empty() ? *v : none;
}

// The version of the first library named `name` (the loader's order), or "-".
std::string LibraryVersion(const Fingerprint& fp, const std::string& name) {
  for (const LibraryInfo& l : fp.libraries) {
    if (l.name == name) return Or(l.version);
  }
  return "-";
}

std::string GpuSummary(const Fingerprint& fp) {
  if (fp.gpus.empty()) return "none";
  std::map<std::string, int> by_name;
  std::vector<std::string> order;
  for (const GpuInfo& g : fp.gpus) {
    std::string n = Or(g.name, "unknown GPU");
    if (by_name[n]++ == 0) order.push_back(n);
  }
  std::string out;
  for (const std::string& n : order) {
    if (!out.empty()) out += ", ";
    out += std::to_string(by_name[n]) + " x " + n;
  }
  return out;
}

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    if (std::find(v.begin(), v.begin() + (&s - v.data()), s) != v.begin() + (&s - v.data())) {
      continue;  // a repeat
    }
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out.empty() ? "-" : out;
}

std::string GpuField(const Fingerprint& fp, std::string (*get)(const GpuInfo&)) {
  std::vector<std::string> v;
  for (const GpuInfo& g : fp.gpus) v.push_back(get(g));
  return Joined(v);
}

std::vector<HostRow> HostTable(const Fingerprint& s, const Fingerprint& t) {
  struct Field {
    const char* name;
    std::string (*get)(const Fingerprint&);
  };
  static const Field kFields[] = {
      {"hostname", [](const Fingerprint& f) { return Or(f.hostname); }},
      {"os", [](const Fingerprint& f) { return Or(f.os.id) + " " + Or(f.os.version_id, ""); }},
      {"kernel", [](const Fingerprint& f) { return Or(f.os.kernel); }},
      {"glibc", [](const Fingerprint& f) { return Or(f.os.glibc); }},
      {"arch", [](const Fingerprint& f) { return Or(f.os.arch); }},
      {"container",
       [](const Fingerprint& f) {
         return f.os.container.detected ? Or(f.os.container.runtime, "yes") : std::string("no");
       }},
      {"cpu",
       [](const Fingerprint& f) {
         return Or(f.cpu.model) + (f.cpu.cores ? " (" + std::to_string(*f.cpu.cores) + ")" : "");
       }},
      {"memory",
       [](const Fingerprint& f) {
         return f.memory_mib ? FormatBytes(*f.memory_mib << 20) : std::string("-");
       }},
      {"driver",
       [](const Fingerprint& f) {
         return f.driver.status == "ok" ? Or(f.driver.version) : f.driver.status;
       }},
      {"driver CUDA", [](const Fingerprint& f) { return Or(f.driver.cuda_version); }},
      {"GPUs", [](const Fingerprint& f) { return GpuSummary(f); }},
      {"compute capability",
       [](const Fingerprint& f) {
         return GpuField(f, [](const GpuInfo& g) { return Or(g.compute_capability); });
       }},
      {"GPU memory",
       [](const Fingerprint& f) {
         return GpuField(f, [](const GpuInfo& g) {
           return g.memory_mib ? FormatBytes(*g.memory_mib << 20) : std::string("-");
         });
       }},
      {"MIG",
       [](const Fingerprint& f) {
         return GpuField(f, [](const GpuInfo& g) {
           return g.mig.enabled ? (*g.mig.enabled ? std::string("on") : std::string("off"))
                                : std::string("-");
         });
       }},
      {"CUDA toolkits",
       [](const Fingerprint& f) {
         std::vector<std::string> v;
         for (const ToolkitInfo& k : f.cuda_toolkits) v.push_back(k.version);
         return Joined(v);
       }},
      {"cudart", [](const Fingerprint& f) { return LibraryVersion(f, "cudart"); }},
      {"cuBLAS", [](const Fingerprint& f) { return LibraryVersion(f, "cublas"); }},
      {"cuDNN", [](const Fingerprint& f) { return LibraryVersion(f, "cudnn"); }},
      {"NCCL", [](const Fingerprint& f) { return LibraryVersion(f, "nccl"); }},
      {"frameworks",
       [](const Fingerprint& f) {
         std::vector<std::string> v;
         for (const FrameworkInfo& k : f.frameworks) v.push_back(k.name + " " + Or(k.version, ""));
         return Joined(v);
       }},
      {"InfiniBand",
       [](const Fingerprint& f) {
         return f.network.infiniband.empty()
                    ? std::string("none")
                    : std::to_string(f.network.infiniband.size()) + " HCA(s)";
       }},
  };
  std::vector<HostRow> rows;
  for (const Field& f : kFields) {
    HostRow r{.field = f.name, .source = f.get(s), .target = f.get(t)};
    r.differs = r.source != r.target;
    rows.push_back(std::move(r));
  }
  return rows;
}

bool IsBandwidthOp(const std::string& op) { return op == "copy" || op == "triad"; }

double Geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

const CaseResult* FindCase(const CompatRecord& rec, const std::string& id) {
  for (const CaseResult& c : rec.cases) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

double RateOf(const CaseResult* c) {
  return c && c->status == "ok" && c->timing.rate > 0 && std::isfinite(c->timing.rate)
             ? c->timing.rate
             : 0;
}

void AddCompat(Assessment& a) {
  const CompatRecord& src = *a.inputs.compat_source;
  const CompatRecord& dst = *a.inputs.compat_target;
  a.comparison = CompareRecords(src, dst);
  a.source_ceilings = MeasuredCeilings(src);
  a.target_ceilings = MeasuredCeilings(dst);
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> both;
  for (const CaseComparison& k : a.comparison->cases) {
    CompatRow row{.cmp = k};
    const CaseResult* s = FindCase(src, k.id);
    const CaseResult* t = FindCase(dst, k.id);
    row.rate_unit = s ? s->timing.rate_unit : t ? t->timing.rate_unit : "";
    row.source_rate = RateOf(s);
    row.target_rate = RateOf(t);
    auto frac = [&](double rate, const std::map<std::string, double>& ceil) {
      auto it = ceil.find(row.rate_unit);
      return rate > 0 && it != ceil.end() && it->second > 0 ? rate / it->second : 0.0;
    };
    row.source_fraction = frac(row.source_rate, a.source_ceilings);
    row.target_fraction = frac(row.target_rate, a.target_ceilings);
    if (row.source_rate > 0 && row.target_rate > 0 && !row.rate_unit.empty()) {
      both[row.rate_unit].first.push_back(row.source_rate);
      both[row.rate_unit].second.push_back(row.target_rate);
    }
    a.compat.push_back(std::move(row));
  }
  if (a.inputs.price_source && a.inputs.price_target) {
    for (const auto& [unit, rates] : both) {
      CostRow c{.rate_unit = unit, .cases = static_cast<int>(rates.first.size())};
      c.source_rate = Geomean(rates.first);
      c.target_rate = Geomean(rates.second);
      c.source_per_price = c.source_rate * 3600 / *a.inputs.price_source;
      c.target_per_price = c.target_rate * 3600 / *a.inputs.price_target;
      a.cost.push_back(c);
    }
  }

  const Comparison& cmp = *a.comparison;
  auto ids_with = [&](auto pred) {
    std::vector<std::string> ids;
    for (const CaseComparison& k : cmp.cases) {
      if (pred(k)) ids.push_back(k.id);
    }
    return ids;
  };
  auto add = [&](const std::string& severity, const std::string& code,
                 const std::vector<std::string>& ids, const std::string& what,
                 const std::string& fix) {
    if (ids.empty()) return;
    std::string list;
    for (size_t i = 0; i < ids.size() && i < 5; ++i) list += (i ? ", " : "") + ids[i];
    if (ids.size() > 5) list += ", and " + std::to_string(ids.size() - 5) + " more";
    a.findings.push_back({.severity = severity,
                          .code = code,
                          .component = "compat",
                          .message = std::to_string(ids.size()) + " case(s) " + what + ": " + list,
                          .fix = fix});
  };
  add("blocker", "compat.regression",
      ids_with([](const CaseComparison& k) { return k.verdict == Verdict::kRegression; }),
      "further from the float64 truth on the target than tolerance allows",
      "compare the library versions and math defaults (TF32, accumulation) of the two sides; "
      "pin the source's versions on the target");
  add("blocker", "compat.broken",
      ids_with([](const CaseComparison& k) { return k.verdict == Verdict::kBroken; }),
      "failed, or produced NaN/Inf the source did not",
      "read the case's error in compat compare; fix the target's stack before moving");
  add("warning", "compat.drift",
      ids_with([](const CaseComparison& k) { return k.verdict == Verdict::kDrift; }),
      "differ from the source beyond tolerance but stay as close to the truth",
      "expect numerics changes; re-validate model accuracy on the target");
  add("warning", "compat.slower",
      ids_with([](const CaseComparison& k) { return k.speed == SpeedVerdict::kSlower; }),
      "slower on the target (95% interval of the target / source speed ratio below 1)",
      "check clocks, power limits and library versions; size the target for the slowdown");
  add("warning", "compat.noisier", ids_with([](const CaseComparison& k) {
        return k.stability.verdict == StabilityVerdict::kNoisier;
      }),
      "run less steadily on the target (its CV or p99/p50 beyond the source's by the minimum "
      "effect; figures and likely cause in the stability section)",
      "look for a shared GPU (MIG, MPS, time-slicing), noisy neighbours (steal time) or clock "
      "throttling on the target; ask for dedicated capacity or budget for the slower tail");
  add("warning", "compat.missing",
      ids_with([](const CaseComparison& k) { return k.verdict == Verdict::kMissing; }),
      "measured on one side only", "run the same suite on both sides");
}

// The checks that failed in the last interval with a failure, with their figures against their
// bounds ("interval 3: error-rate: canary value 0.52 > max 0.01"); "" when none failed.
std::string FailingChecks(const json& history) {
  if (!history.contains("measurements") || !history["measurements"].is_array()) return "";
  const json& ms = history["measurements"];
  int64_t last = -1;
  for (const json& m : ms) {
    if (StrAt(m, "verdict") == "fail" && StrAt(m, "check") != "interval" &&
        m.contains("interval") && m["interval"].is_number_integer()) {
      last = std::max<int64_t>(last, m["interval"].get<int64_t>());
    }
  }
  if (last < 0) return "";
  std::string out;
  for (const json& m : ms) {
    if (StrAt(m, "verdict") != "fail" || StrAt(m, "check") == "interval" ||
        !m.contains("interval") || m["interval"] != last) {
      continue;
    }
    out += (out.empty() ? "" : "; ") + StrAt(m, "check") + ": " + StrAt(m, "reason");
  }
  return "interval " + std::to_string(last) + ": " + out;
}

void AddCanary(Assessment& a) {
  const json& h = *a.inputs.canary_history;
  const json& r = h.contains("rollout") ? h["rollout"] : json();
  std::string status = StrAt(r, "status", "unknown");
  std::string reason = StrAt(r, "reason");
  std::string name = StrAt(r, "name");
  std::string msg = "rollout " + name + " is " + status + (reason.empty() ? "" : ": " + reason);
  if (std::string failing = FailingChecks(h); !failing.empty()) {
    msg += "; failing checks in " + failing;
  }
  if (status == "rolled-back" || status == "rolled-back-unconfirmed" || status == "failed") {
    a.findings.push_back({.severity = "blocker",
                          .code = "canary." + status,
                          .component = "canary",
                          .message = msg,
                          .fix = "read the rollout's measurements; fix the target and roll out "
                                 "again"});
  } else if (status != "promoted") {
    a.findings.push_back({.severity = "warning",
                          .code = "canary.not_promoted",
                          .component = "canary",
                          .message = msg,
                          .fix = "let the rollout finish before cutting over"});
  }
}

json OptNum(double v) { return v > 0 ? json(v) : json(nullptr); }

}  // namespace

int Assessment::Count(const std::string& severity) const {
  return static_cast<int>(std::count_if(findings.begin(), findings.end(),
                                        [&](const auto& f) { return f.severity == severity; }));
}

std::map<std::string, double> MeasuredCeilings(const CompatRecord& rec) {
  std::map<std::string, double> out;
  if (rec.calibration.measured && rec.calibration.copy_gbps > 0 &&
      rec.calibration.gemm_gflops > 0) {
    // The record's own calibration (compat run measures it first), raised to any faster case.
    out["GB/s"] = rec.calibration.copy_gbps;
    out["GFLOP/s"] = rec.calibration.gemm_gflops;
    for (const CaseResult& c : rec.cases) {
      auto it = out.find(c.timing.rate_unit);
      if (it != out.end()) it->second = std::max(it->second, RateOf(&c));
    }
    return out;
  }
  for (const CaseResult& c : rec.cases) {
    double rate = RateOf(&c);
    if (rate <= 0) continue;
    bool ceiling_op = (c.timing.rate_unit == "GB/s" && IsBandwidthOp(c.spec.op)) ||
                      (c.timing.rate_unit == "GFLOP/s" && c.spec.op == "gemm");
    if (!ceiling_op) continue;
    double& best = out[c.timing.rate_unit];
    best = std::max(best, rate);
  }
  return out;
}

std::string InputPath(const AssessInputs& in, const std::string& key) {
  auto it = in.input_paths.find(key);
  return it != in.input_paths.end() ? it->second : std::string("?");
}

// The stability row: assessed when at least one case ran kStabilityMinReps repetitions a side
// (compat run --soak, or --reps 30), which is what a stability verdict needs.
CoverageRow StabilityCoverage(const std::optional<Comparison>& cmp) {
  if (!cmp) return {"stability", false, "not measured: no --compat records"};
  int assessed = 0, cases = 0;
  for (const CaseComparison& k : cmp->cases) {
    if (k.stability.source.reps == 0 || k.stability.target.reps == 0) continue;
    ++cases;
    if (k.stability.verdict != StabilityVerdict::kNotAssessed) ++assessed;
  }
  if (assessed == 0) {
    return {"stability", false,
            "not assessed: no case ran " + std::to_string(kStabilityMinReps) +
                " repetitions a side (compat run --soak, or --reps " +
                std::to_string(kStabilityMinReps) + ")"};
  }
  return {"stability", true,
          std::to_string(assessed) + " of " + std::to_string(cases) +
              " timed cases with at least " + std::to_string(kStabilityMinReps) +
              " repetitions a side, from the compat records"};
}

// REQUIRES: AddCompat has run when the inputs hold compat records.
std::vector<CoverageRow> Coverage(const AssessInputs& in, const std::optional<Comparison>& cmp) {
  const bool compat = in.compat_source.has_value();
  const std::string records = compat ? "compat records " + InputPath(in, "compat source") + ", " +
                                           InputPath(in, "compat target")
                                     : std::string("not measured: no --compat records");
  return {{"fingerprints", true,
           "probe fingerprints " + InputPath(in, "source") + ", " + InputPath(in, "target")},
          {"numerics", compat, records},
          {"speed", compat, records},
          StabilityCoverage(cmp),
          {"cluster", in.cluster_source.has_value(),
           in.cluster_source ? "cluster records " + InputPath(in, "cluster source") + ", " +
                                   InputPath(in, "cluster target")
                             : std::string("not measured: no --cluster records")},
          {"data plan", in.datasync_plan.has_value(),
           in.datasync_plan ? "datasync plan " + InputPath(in, "datasync plan")
                            : std::string("not assessed: no --datasync plan")},
          {"canary", in.canary_history.has_value(),
           in.canary_history ? "canary history " + InputPath(in, "canary history")
                             : std::string("not assessed: no --canary rollout")}};
}

Result<Assessment> Assess(AssessInputs inputs) {
  if (inputs.compat_source.has_value() != inputs.compat_target.has_value()) {
    return Status::InvalidArgument(
        "assess: --compat needs two records, the source's and the target's");
  }
  if (inputs.compat_source) {
    // Records of another op table (or a case defined differently) cannot be joined case by
    // case: refuse them as compat compare does, rather than report false verdicts.
    auto name = [&inputs](const char* key, const char* fallback) {
      auto it = inputs.input_paths.find(key);
      return it != inputs.input_paths.end() ? it->second : std::string(fallback);
    };
    Status comparable = CheckComparable(*inputs.compat_source, *inputs.compat_target,
                                        name("compat source", "the source record"),
                                        name("compat target", "the target record"));
    if (!comparable.ok()) {
      std::string msg = comparable.message();
      const std::string prefix = "compat compare: ";
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
      return Status::FailedPrecondition("assess: --compat: " + msg);
    }
  }
  if (inputs.cluster_source.has_value() != inputs.cluster_target.has_value()) {
    return Status::InvalidArgument(
        "assess: --cluster needs two records, the source's and the target's");
  }
  if (inputs.datasync_plan) {
    CUTOVER_RETURN_IF_ERROR(
        CheckSchema(*inputs.datasync_plan, "cutover.datasync-plan", 1, "--datasync"));
  }
  if (inputs.canary_history) {
    CUTOVER_RETURN_IF_ERROR(
        CheckSchema(*inputs.canary_history, "cutover.rollout-history", 1, "--canary"));
  }
  for (const auto* p : {&inputs.price_source, &inputs.price_target}) {
    if (*p && !(**p > 0 && std::isfinite(**p))) {
      return Status::InvalidArgument("assess: a --price must be a number above 0");
    }
  }
  if (inputs.cost_model && (inputs.price_source || inputs.price_target)) {
    return Status::InvalidArgument(
        "assess: --cost and --price cannot be used together: the cost file prices each side");
  }
  if (inputs.cost_model && !inputs.compat_source) {
    return Status::InvalidArgument(
        "assess: --cost needs --compat SRC DST: the cost per unit of "
        "work comes from each side's measured throughput");
  }
  Assessment a;
  a.inputs = std::move(inputs);
  if (a.inputs.cost_model) {
    CUTOVER_ASSIGN_OR_RETURN(
        a.cost_model,
        ComputeCost(*a.inputs.cost_model, *a.inputs.compat_source, *a.inputs.compat_target));
  }
  a.diff = probe::Diff(a.inputs.source, a.inputs.target, a.inputs.mode, probe::BuiltinRules());
  for (const probe::DiffFinding& f : a.diff.findings) {
    a.findings.push_back({.severity = f.severity,
                          .code = f.code,
                          .component = f.component,
                          .source = f.source.value_or(""),
                          .target = f.target.value_or(""),
                          .message = f.message,
                          .fix = f.fix});
  }
  a.hosts = HostTable(a.inputs.source, a.inputs.target);
  if (a.inputs.compat_source) AddCompat(a);
  if (a.inputs.canary_history) AddCanary(a);
  if (a.inputs.cluster_source) {
    a.cluster = AssessCluster(
        *a.inputs.cluster_source, *a.inputs.cluster_target,
        a.inputs.fabric_floors ? *a.inputs.fabric_floors : probe::BuiltinFabricFloors(),
        &a.findings);
  }
  a.coverage = Coverage(a.inputs, a.comparison);
  std::stable_sort(a.findings.begin(), a.findings.end(), [](const auto& x, const auto& y) {
    return SeverityRank(x.severity) < SeverityRank(y.severity);
  });

  int blockers = a.Count("blocker"), warnings = a.Count("warning");
  if (blockers > 0) {
    a.verdict = "no-go";
    a.headline = std::to_string(blockers) + " blocker(s): " + a.findings.front().message;
  } else if (warnings > 0) {
    a.verdict = "go-with-risks";
    a.headline = "no blocker; " + std::to_string(warnings) + " warning(s) to accept or fix first";
  } else {
    a.verdict = "go";
    a.headline = "nothing known stops or changes the workload on the target";
  }
  // A verdict says what it did not look at.
  std::string unassessed;
  for (const CoverageRow& c : a.coverage) {
    if (!c.assessed) unassessed += (unassessed.empty() ? "" : ", ") + c.area;
  }
  if (!unassessed.empty()) a.headline += "; not assessed: " + unassessed;
  return a;
}

std::string VerdictLine(const Assessment& a) {
  return "verdict " + a.verdict + " (" + std::to_string(a.Count("blocker")) + " blockers, " +
         std::to_string(a.Count("warning")) + " warnings): " + a.headline;
}

json CoverageJson(const std::vector<CoverageRow>& rows) {
  json out = json::array();
  for (const CoverageRow& c : rows) {
    out.push_back({{"area", c.area}, {"assessed", c.assessed}, {"input", c.input}});
  }
  return out;
}

json AssessmentToJson(const Assessment& a) {
  json findings = json::array();
  for (const ReportFinding& f : a.findings) {
    findings.push_back({{"severity", f.severity},
                        {"code", f.code},
                        {"component", f.component},
                        {"source", f.source.empty() ? json(nullptr) : json(f.source)},
                        {"target", f.target.empty() ? json(nullptr) : json(f.target)},
                        {"message", f.message},
                        {"fix", f.fix}});
  }
  json hosts = json::array();
  for (const HostRow& r : a.hosts) {
    hosts.push_back(
        {{"field", r.field}, {"source", r.source}, {"target", r.target}, {"differs", r.differs}});
  }
  json inputs = json::object();
  for (const auto& [k, v] : a.inputs.input_paths) inputs[k] = v;
  json doc = {{"schema", kReportSchema},
              {"verdict", a.verdict},
              {"headline", a.headline},
              {"generated_at", a.inputs.generated_at},
              {"redacted", a.inputs.redacted},
              {"mode", std::string(probe::DiffModeName(a.inputs.mode))},
              {"inputs", inputs},
              {"summary",
               {{"blockers", a.Count("blocker")},
                {"warnings", a.Count("warning")},
                {"infos", a.Count("info")}}},
              {"findings", findings},
              {"coverage", CoverageJson(a.coverage)},
              {"hosts", hosts},
              {"compat", nullptr},
              {"datasync", a.inputs.datasync_plan ? *a.inputs.datasync_plan : json(nullptr)},
              {"canary", a.inputs.canary_history ? *a.inputs.canary_history : json(nullptr)},
              {"cost", nullptr},
              {"cluster", a.cluster ? ClusterJson(*a.cluster) : json(nullptr)},
              {"cost_model",
               a.cost_model ? CostReportToJson(*a.cost_model, a.inputs.redacted) : json(nullptr)}};
  if (a.comparison) {
    json cases = json::array();
    for (const CompatRow& r : a.compat) {
      const CaseComparison& k = r.cmp;
      cases.push_back({{"id", k.id},
                       {"op", k.op},
                       {"verdict", std::string(VerdictName(k.verdict))},
                       {"reason", k.reason},
                       {"speed", std::string(SpeedVerdictName(k.speed))},
                       {"speed_ratio", OptNum(k.speed_ratio)},
                       {"speed_ratio_ci95", {OptNum(k.speed_lo), OptNum(k.speed_hi)}},
                       {"q_source_truth", k.q_source_truth},
                       {"q_target_truth", k.q_target_truth},
                       {"rate_unit", r.rate_unit},
                       {"source_rate", OptNum(r.source_rate)},
                       {"target_rate", OptNum(r.target_rate)},
                       {"source_ceiling_fraction", OptNum(r.source_fraction)},
                       {"target_ceiling_fraction", OptNum(r.target_fraction)},
                       {"stability", StabilityToJson(k.stability)}});
    }
    json counts = json::object();
    for (Verdict v :
         {Verdict::kIdentical, Verdict::kEquivalent, Verdict::kDrift, Verdict::kRegression,
          Verdict::kBroken, Verdict::kMissing, Verdict::kNotApplicable}) {
      counts[std::string(VerdictName(v))] = a.comparison->Count(v);
    }
    doc["compat"] = {{"source_backend", a.inputs.compat_source->backend},
                     {"target_backend", a.inputs.compat_target->backend},
                     {"counts", counts},
                     {"ceilings", {{"source", a.source_ceilings}, {"target", a.target_ceilings}}},
                     {"cases", cases},
                     {"stability", StabilityJson(a)}};
  }
  if (a.inputs.price_source && a.inputs.price_target) {
    json rows = json::array();
    for (const CostRow& c : a.cost) {
      rows.push_back({{"rate_unit", c.rate_unit},
                      {"cases", c.cases},
                      {"source_rate", c.source_rate},
                      {"target_rate", c.target_rate},
                      {"source_per_price", c.source_per_price},
                      {"target_per_price", c.target_per_price}});
    }
    doc["cost"] = {{"price_source", *a.inputs.price_source},
                   {"price_target", *a.inputs.price_target},
                   {"per", "GPU-hour"},
                   {"rows", rows}};
  }
  return doc;
}

JunitReport AssessmentJunit(const Assessment& a) {
  JunitReport r{.name = "cutover assess"};
  JunitSuite findings{.name = "findings", .timestamp = a.inputs.generated_at};
  JunitCase verdict{.classname = "assess", .name = "verdict"};
  verdict.message = VerdictLine(a);
  if (a.verdict == "no-go") {
    verdict.outcome = JunitOutcome::kFailed;
    verdict.text = verdict.message;
  } else {
    verdict.system_out = verdict.message;
  }
  findings.cases.push_back(std::move(verdict));
  for (const ReportFinding& f : a.findings) {
    JunitCase c{.classname = "assess." + f.component, .name = f.code};
    std::string detail = f.message;
    if (!f.source.empty() || !f.target.empty()) {
      detail +=
          "\n" + (f.source.empty() ? "-" : f.source) + " -> " + (f.target.empty() ? "-" : f.target);
    }
    if (!f.fix.empty()) detail += "\nfix: " + f.fix;
    if (f.severity == "blocker") {
      c.outcome = JunitOutcome::kFailed;
      c.message = f.message;
      c.text = detail;
    } else {
      c.system_out = f.severity + ": " + detail;
    }
    findings.cases.push_back(std::move(c));
  }
  r.suites.push_back(std::move(findings));
  if (a.comparison) {
    JunitReport compat = ComparisonJunit(*a.comparison);
    for (JunitSuite& s : compat.suites) {
      s.name = "compat." + s.name;
      r.suites.push_back(std::move(s));
    }
  }
  return r;
}

namespace {

// Markdown table cells: no pipes or newlines.
std::string Cell(std::string s) {
  for (char& c : s) {
    if (c == '|') c = '/';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

std::vector<std::string> DatasyncSummary(const json& p) {
  // Clamped so the integer casts below stay defined on any input.
  auto num = [&](const char* k) { return std::clamp(NumAt(p, k), 0.0, 1e18); };
  auto bytes = [&](const char* k) { return FormatBytes(static_cast<uint64_t>(num(k))); };
  std::vector<std::string> lines;
  lines.push_back(std::to_string(static_cast<uint64_t>(num("files"))) + " files, " +
                  bytes("bytes") + "; to send after dedup: " + bytes("send_bytes") + " in " +
                  std::to_string(static_cast<uint64_t>(num("send_objects"))) + " objects (" +
                  bytes("dedup_bytes") + " already in the store or repeated)");
  double bw = num("bandwidth_bytes_per_s");
  if (bw > 0) {
    double seconds = std::min(num("estimated_seconds"), 1e12);
    lines.push_back(
        "about " + FormatDuration(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000))) +
        " at " + FormatRate(bw));
  }
  return lines;
}

std::string RenderMarkdown(const Assessment& a) {
  std::string md = "# Migration assessment\n\n";
  md += std::string("**Verdict: ") +
        (a.verdict == "no-go" ? "NO-GO"
         : a.verdict == "go"  ? "GO"
                              : "GO WITH RISKS") +
        "** (" + std::to_string(a.Count("blocker")) + " blockers, " +
        std::to_string(a.Count("warning")) + " warnings): " + Cell(a.headline) + "\n\n";
  md += "## Coverage\n\n| area | assessed | with |\n|---|---|---|\n";
  for (const CoverageRow& c : a.coverage) {
    md += "| " + c.area + " | " + (c.assessed ? "yes" : "**no**") + " | " + Cell(c.input) + " |\n";
  }
  md += "\n";
  md += "Generated " + a.inputs.generated_at + " by cutover, mode " +
        std::string(probe::DiffModeName(a.inputs.mode)) + (a.inputs.redacted ? ", redacted" : "") +
        ".\n\n";
  for (const char* sev : {"blocker", "warning", "info"}) {
    if (a.Count(sev) == 0) continue;
    md += std::string("## ") +
          (std::string(sev) == "blocker"   ? "Blockers"
           : std::string(sev) == "warning" ? "Warnings"
                                           : "Notes") +
          "\n\n";
    for (const ReportFinding& f : a.findings) {
      if (f.severity != sev) continue;
      md += "- **" + f.code + "** (" + f.component + "): " + Cell(f.message);
      if (!f.source.empty() || !f.target.empty()) {
        md += " `" + (f.source.empty() ? "-" : f.source) + "` -> `" +
              (f.target.empty() ? "-" : f.target) + "`";
      }
      if (!f.fix.empty()) md += "\n  - fix: " + Cell(f.fix);
      md += "\n";
    }
    md += "\n";
  }
  md += "## Hosts\n\n| | source | target |\n|---|---|---|\n";
  for (const HostRow& r : a.hosts) {
    md += "| " + r.field + (r.differs ? " (differs)" : "") + " | " + Cell(r.source) + " | " +
          Cell(r.target) + " |\n";
  }
  md += "\n";
  if (a.comparison) {
    md +=
        "## Compat\n\n| case | numerics | speed (target/source) | q source | q target | "
        "ceiling fraction source / target |\n|---|---|---|---|---|---|\n";
    for (const CompatRow& r : a.compat) {
      const CaseComparison& k = r.cmp;
      md += "| " + Cell(k.id) + " | " + std::string(VerdictName(k.verdict)) + " | " +
            std::string(SpeedVerdictName(k.speed)) +
            (k.speed_ratio > 0 ? " x" + Num(k.speed_ratio) : "") + " | " + Num(k.q_source_truth) +
            " | " + Num(k.q_target_truth) + " | " +
            (r.source_fraction > 0 ? Num(r.source_fraction, 2) : "-") + " / " +
            (r.target_fraction > 0 ? Num(r.target_fraction, 2) : "-") + " |\n";
    }
    md += "\n";
  }
  if (a.comparison) md += StabilityMarkdown(a);
  if (!a.cost.empty()) {
    md += "## Performance per cost\n\nPrices per GPU-hour: source " +
          Num(*a.inputs.price_source, 4) + ", target " + Num(*a.inputs.price_target, 4) +
          ".\n\n| unit | cases | source rate | target rate | source per price-hour | target per "
          "price-hour | target / source |\n|---|---|---|---|---|---|---|\n";
    for (const CostRow& c : a.cost) {
      md += "| " + c.rate_unit + " | " + std::to_string(c.cases) + " | " + Num(c.source_rate) +
            " | " + Num(c.target_rate) + " | " + Num(c.source_per_price) + " | " +
            Num(c.target_per_price) + " | " + Num(c.target_per_price / c.source_per_price) + " |\n";
    }
    md += "\n";
  }
  if (a.cost_model) md += CostMarkdown(*a.cost_model, a.inputs.redacted, kCostChartFile);
  if (a.cluster) md += ClusterMarkdown(*a.cluster);
  if (a.inputs.datasync_plan) {
    md += "## Data migration\n\n";
    for (const std::string& line : DatasyncSummary(*a.inputs.datasync_plan)) {
      md += "- " + line + "\n";
    }
    md += "\n";
  }
  if (a.inputs.canary_history) {
    const json& h = *a.inputs.canary_history;
    md += "## Canary\n\n";
    if (const json* r = FindJson(h, "/rollout")) {
      md += "- rollout " + Cell(StrAt(*r, "name", "?")) + ": " + Cell(StrAt(*r, "status", "?")) +
            " " + Cell(StrAt(*r, "reason")) + "\n";
    }
    if (const json* steps = FindJson(h, "/steps"); steps && steps->is_array()) {
      for (const json& s : *steps) {
        if (!s.is_object()) continue;
        md += "- step " + Num(NumAt(s, "index"), 6) + ": canary " +
              Num(NumAt(s, "canary_percent"), 6) + "% " + Cell(StrAt(s, "outcome", "-")) + "\n";
      }
    }
    md += "\n";
  }
  return md;
}

}  // namespace cutover::report
