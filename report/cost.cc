#include "report/cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/file_util.h"
#include "core/yaml_reader.h"

namespace cutover::report {
namespace {

constexpr std::string_view kTopKeys[] = {"apiVersion", "currency", "utilization", "goodput",
                                         "workload",   "source",   "target"};
constexpr std::string_view kSideKeys[] = {"name", "supplier", "self_built", "managed"};
constexpr std::string_view kSelfBuiltKeys[] = {"capital_per_server",
                                               "gpus_per_server",
                                               "depreciation_years",
                                               "power_kw_per_server",
                                               "pue",
                                               "price_per_kwh",
                                               "facility_per_server_month",
                                               "staff_per_person_month",
                                               "servers_per_person",
                                               "network_storage_per_server_month",
                                               "financing_rate"};
constexpr std::string_view kOptionKeys[] = {"name", "kind", "price_per_gpu_hour",
                                            "interruption_share", "term_months"};
constexpr std::string_view kKinds[] = {"on-demand", "reserved", "committed", "spot"};

class CostParser : public yaml::Reader {
 public:
  using yaml::Reader::Reader;

  // A number under `key` checked against a range: lo < v (or lo <= v with `lo_inclusive`), and
  // v <= hi (or v < hi with `hi_exclusive`).
  std::optional<double> Ranged(const YAML::Node& map, const std::string& path, const char* key,
                               bool required, double lo, bool lo_inclusive, double hi,
                               bool hi_exclusive, const std::string& want) {
    std::optional<double> v = Number(map, path, key, required);
    if (!v) return std::nullopt;
    bool ok = (lo_inclusive ? *v >= lo : *v > lo) && (hi_exclusive ? *v < hi : *v <= hi);
    if (!ok) {
      Error(map[key], yaml::Sub(path, key), want + ", got " + map[key].Scalar());
      return std::nullopt;
    }
    return v;
  }
  std::optional<double> Positive(const YAML::Node& m, const std::string& p, const char* k) {
    return Ranged(m, p, k, true, 0, false, std::numeric_limits<double>::max(), false,
                  "must be above 0");
  }
  std::optional<double> NonNegative(const YAML::Node& m, const std::string& p, const char* k) {
    return Ranged(m, p, k, true, 0, true, std::numeric_limits<double>::max(), false,
                  "must be 0 or above");
  }
  std::optional<double> Share(const YAML::Node& m, const std::string& p, const char* k) {
    return Ranged(m, p, k, true, 0, false, 1, false, "must be in (0, 1]");
  }

  std::string Where(const YAML::Node& node) const {
    const YAML::Mark m = node.Mark();
    return file() + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
};

void ParseSelfBuilt(CostParser& p, const YAML::Node& n, const std::string& path, SelfBuiltCost& s) {
  if (!p.Map(n, path, kSelfBuiltKeys)) return;
  if (auto v = p.Positive(n, path, "capital_per_server")) s.capital_per_server = *v;
  if (auto v = p.Int(n, path, "gpus_per_server", true, 1, 1024)) {
    s.gpus_per_server = static_cast<int>(*v);
  }
  if (auto v = p.Positive(n, path, "depreciation_years")) s.depreciation_years = *v;
  if (auto v = p.NonNegative(n, path, "power_kw_per_server")) s.power_kw_per_server = *v;
  if (auto v = p.Ranged(n, path, "pue", true, 1, true, 10, false, "must be 1..10")) s.pue = *v;
  if (auto v = p.NonNegative(n, path, "price_per_kwh")) s.price_per_kwh = *v;
  if (auto v = p.NonNegative(n, path, "facility_per_server_month")) {
    s.facility_per_server_month = *v;
  }
  if (auto v = p.NonNegative(n, path, "staff_per_person_month")) s.staff_per_person_month = *v;
  if (auto v = p.Positive(n, path, "servers_per_person")) s.servers_per_person = *v;
  if (auto v = p.NonNegative(n, path, "network_storage_per_server_month")) {
    s.network_storage_per_server_month = *v;
  }
  if (auto v = p.Ranged(n, path, "financing_rate", true, 0, true, 1, true, "must be in [0, 1)")) {
    s.financing_rate = *v;
  }
}

void ParseOption(CostParser& p, const YAML::Node& n, const std::string& path, ManagedOption& o) {
  if (!p.Map(n, path, kOptionKeys)) return;
  if (auto v = p.String(n, path, "name", false)) o.name = *v;
  std::optional<std::string> kind = p.Enum(n, path, "kind", true, kKinds);
  if (kind) {
    o.kind = *kind == "on-demand"   ? PriceKind::kOnDemand
             : *kind == "reserved"  ? PriceKind::kReserved
             : *kind == "committed" ? PriceKind::kCommitted
                                    : PriceKind::kSpot;
  }
  if (auto v = p.Positive(n, path, "price_per_gpu_hour")) o.price_per_gpu_hour = *v;
  const bool spot = kind && o.kind == PriceKind::kSpot;
  const bool term = kind && !PaidPerUse(o.kind);
  if (n["interruption_share"].IsDefined() && kind && !spot) {
    p.Error(n["interruption_share"], yaml::Sub(path, "interruption_share"),
            "applies to kind spot only");
  } else if (spot) {
    if (auto v =
            p.Ranged(n, path, "interruption_share", true, 0, true, 1, true, "must be in [0, 1)")) {
      o.interruption_share = *v;
    }
  }
  if (n["term_months"].IsDefined() && kind && !term) {
    p.Error(n["term_months"], yaml::Sub(path, "term_months"),
            "applies to kinds reserved and committed only");
  } else if (term) {
    if (auto v = p.Positive(n, path, "term_months")) o.term_months = *v;
  }
}

void ParseSide(CostParser& p, const YAML::Node& n, const std::string& path, CostSide& side) {
  if (!p.Map(n, path, kSideKeys)) return;
  if (auto v = p.String(n, path, "name", false)) side.name = *v;
  if (auto v = p.String(n, path, "supplier", false)) side.supplier = *v;
  const bool own = n["self_built"].IsDefined(), rent = n["managed"].IsDefined();
  if (own == rent) {
    p.Error(n, path, "needs exactly one of self_built and managed");
    return;
  }
  if (own) {
    side.self_built.emplace();
    ParseSelfBuilt(p, n["self_built"], yaml::Sub(path, "self_built"), *side.self_built);
    return;
  }
  const YAML::Node list = n["managed"];
  const std::string lpath = yaml::Sub(path, "managed");
  if (!list.IsSequence() || list.size() == 0) {
    p.Error(list, lpath, "must be a non-empty list of priced options");
    return;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    ManagedOption o;
    ParseOption(p, list[i], yaml::Index(lpath, i), o);
    side.managed.push_back(o);
  }
}

void ParseWorkload(CostParser& p, const YAML::Node& n, std::vector<WorkloadShare>& out) {
  if (!n.IsMap() || n.size() == 0) {
    p.Error(n, "workload", "must be a mapping of op names or case IDs to their share of GPU time");
    return;
  }
  for (const auto& kv : n) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (key.empty()) {
      p.Error(kv.first, "workload", "keys must be op names or case IDs");
      continue;
    }
    const std::string path = yaml::Sub("workload", key);
    if (std::any_of(out.begin(), out.end(), [&](const auto& w) { return w.match == key; })) {
      p.Error(kv.first, path, "duplicate key");
      continue;
    }
    double d = 0;
    if (!kv.second.IsScalar() || !YAML::convert<double>::decode(kv.second, d) ||
        !std::isfinite(d) || d <= 0) {
      p.Error(kv.second, path, "must be a share above 0, got " + yaml::Reader::Show(kv.second));
      continue;
    }
    out.push_back({.match = key, .share = d, .where = p.Where(kv.first)});
  }
}

void ParseRoot(CostParser& p, const YAML::Node& root, CostModel& m) {
  p.Map(root, "", kTopKeys);
  if (auto v = p.String(root, "", "apiVersion", true); v && *v != kCostApiVersion) {
    p.Error(
        root["apiVersion"], "apiVersion",
        "unsupported version " + *v + " (this build reads " + std::string(kCostApiVersion) + ")");
  }
  if (auto v = p.String(root, "", "currency", false)) m.currency = *v;
  if (auto v = p.Share(root, "", "utilization")) m.utilization = *v;
  if (root["goodput"].IsDefined()) {
    if (auto v = p.Share(root, "", "goodput")) m.goodput = *v;
  }
  if (YAML::Node w = p.Get(root, "", "workload", false); w.IsDefined()) {
    ParseWorkload(p, w, m.workload);
  }
  if (YAML::Node s = p.Get(root, "", "source", true); s.IsDefined()) {
    ParseSide(p, s, "source", m.source);
  }
  if (YAML::Node t = p.Get(root, "", "target", true); t.IsDefined()) {
    ParseSide(p, t, "target", m.target);
  }
}

// True when case `c` belongs to workload entry `match`.
bool Matches(const std::string& match, const CaseResult& c) {
  if (c.id == match || c.spec.op == match) return true;
  return !match.empty() && match.back() == '/' && c.id.rfind(match, 0) == 0;
}

bool Timed(const CaseResult* c) {
  return c != nullptr && c->status == "ok" && c->timing.median_s > 0 &&
         std::isfinite(c->timing.median_s);
}

const CaseResult* Find(const CompatRecord& rec, const std::string& id) {
  for (const CaseResult& c : rec.cases) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

std::string OptionLabel(const ManagedOption& o) {
  return o.name.empty() ? std::string(PriceKindName(o.kind)) : o.name;
}

void AddSideOptions(const CostSide& side, const std::string& which, double throughput,
                    const std::optional<OwnedCost>& owned, std::vector<CostOption>& out) {
  if (owned) {
    out.push_back({.side = which,
                   .label = "self-built",
                   .kind = "self-built",
                   .fixed = true,
                   .per_gpu_hour = owned->total,
                   .effective_per_gpu_hour = owned->total,
                   .throughput = throughput});
    return;
  }
  for (const ManagedOption& o : side.managed) {
    CostOption c{.side = which,
                 .label = OptionLabel(o),
                 .kind = std::string(PriceKindName(o.kind)),
                 .fixed = !PaidPerUse(o.kind),
                 .per_gpu_hour = o.price_per_gpu_hour,
                 .effective_per_gpu_hour = o.price_per_gpu_hour,
                 .throughput = throughput};
    if (o.kind == PriceKind::kSpot) c.effective_per_gpu_hour /= 1 - o.interruption_share;
    out.push_back(c);
  }
}

}  // namespace

std::string_view PriceKindName(PriceKind k) {
  switch (k) {
    case PriceKind::kOnDemand:
      return "on-demand";
    case PriceKind::kReserved:
      return "reserved";
    case PriceKind::kCommitted:
      return "committed";
    case PriceKind::kSpot:
      return "spot";
  }
  return "?";
}

Result<CostModel> ParseCostModel(std::string_view yaml_text, std::string_view file_name) {
  CostParser p(file_name);
  CostModel m;
  m.file = std::string(file_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, "", "YAML syntax: " + e.msg);
    return Status::InvalidArgument(p.errors().front());
  }
  try {
    if (!root.IsMap()) {
      p.Error(root.IsDefined() && !root.IsNull() ? root.Mark() : YAML::Mark::null_mark(), "",
              "the cost file must be a mapping (apiVersion: cutover/v1, utilization, source, "
              "target, ...)");
    } else {
      ParseRoot(p, root, m);
    }
  } catch (const YAML::Exception& e) {
    p.Error(e.mark, "", std::string("YAML: ") + e.what());
  }
  CUTOVER_RETURN_IF_ERROR(p.ErrorStatus());
  return m;
}

Result<CostModel> LoadCostModel(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return Status::InvalidArgument("--cost " + text.status().message());
  return ParseCostModel(*text, path);
}

double CapitalPerGpuHour(double capital_per_gpu, double years) {
  return capital_per_gpu / (years * kHoursPerYear);
}

double AnnuityPerMonth(double principal, double yearly_rate, double months) {
  if (yearly_rate <= 0) return principal / months;
  const double i = yearly_rate / 12;
  return principal * i / (1 - std::pow(1 + i, -months));
}

OwnedCost OwnedCostPerGpuHour(const SelfBuiltCost& s) {
  OwnedCost c;
  const double g = s.gpus_per_server;
  c.capital_per_gpu = s.capital_per_server / g;
  c.capital = CapitalPerGpuHour(c.capital_per_gpu, s.depreciation_years);
  const double months = 12 * s.depreciation_years;
  c.life_months = months;
  c.financing =
      AnnuityPerMonth(c.capital_per_gpu, s.financing_rate, months) / kHoursPerMonth - c.capital;
  c.power = s.power_kw_per_server * s.pue * s.price_per_kwh / g;
  c.facility = s.facility_per_server_month / (g * kHoursPerMonth);
  c.staff = s.staff_per_person_month / s.servers_per_person / (g * kHoursPerMonth);
  c.network_storage = s.network_storage_per_server_month / (g * kHoursPerMonth);
  c.total = c.capital + c.financing + c.power + c.facility + c.staff + c.network_storage;
  return c;
}

double CostOption::CostAt(double u, double goodput) const {
  const double busy = fixed ? u : 1.0;
  return effective_per_gpu_hour / (busy * goodput * throughput);
}

double BreakEvenUtilization(double owned_per_gpu_hour, double owned_throughput,
                            double rented_per_gpu_hour, double rented_throughput) {
  return owned_per_gpu_hour * rented_throughput / (rented_per_gpu_hour * owned_throughput);
}

double MonthsToRecoverCapital(const OwnedCost& owned, double owned_throughput,
                              const CostOption& rented, double utilization, double goodput) {
  const double work = kHoursPerMonth * utilization * goodput * owned_throughput;
  const double rent = work * rented.CostAt(utilization, goodput);
  const double saved = rent - owned.Running() * kHoursPerMonth;
  if (saved <= 0) return -1;
  const double months = owned.capital_per_gpu / saved;
  // Not repaid before the hardware is written off: owning never paid for itself (the same
  // answer as a break-even utilization above the file's).
  return owned.life_months > 0 && months > owned.life_months ? -1 : months;
}

double MixSpeedRatio(const std::vector<MixCase>& mix) {
  double t = 0;
  for (const MixCase& c : mix) t += c.share * c.target_s / c.source_s;
  return t > 0 ? 1 / t : 0;
}

Result<CostReport> ComputeCost(const CostModel& model, const CompatRecord& source,
                               const CompatRecord& target) {
  CostReport r;
  r.model = model;
  std::vector<const CaseResult*> both;
  for (const CaseResult& c : source.cases) {
    if (Timed(&c) && Timed(Find(target, c.id))) both.push_back(&c);
  }
  if (both.empty()) {
    return Status::InvalidArgument(
        "assess: --cost " + model.file +
        ": no case was measured ok on both sides, so neither side's throughput is known (run the "
        "same suite on both)");
  }
  std::vector<WorkloadShare> workload = model.workload;
  if (workload.empty()) {
    for (const CaseResult* c : both) workload.push_back({.match = c->id, .share = 1});
  }
  double total = 0;
  for (const WorkloadShare& w : workload) total += w.share;
  for (const WorkloadShare& w : workload) {
    std::vector<const CaseResult*> hits;
    for (const CaseResult* c : both) {
      if (Matches(w.match, *c)) hits.push_back(c);
    }
    if (hits.empty()) {
      return Status::InvalidArgument(w.where + ": workload." + w.match +
                                     ": no case of this name was measured ok on both sides "
                                     "(missing throughput; run it on both or drop it)");
    }
    for (const CaseResult* c : hits) {
      r.mix.push_back({.id = c->id,
                       .share = w.share / total / static_cast<double>(hits.size()),
                       .source_s = c->timing.median_s,
                       .target_s = Find(target, c->id)->timing.median_s});
    }
  }
  r.speed_ratio = MixSpeedRatio(r.mix);
  if (model.source.self_built) r.source_owned = OwnedCostPerGpuHour(*model.source.self_built);
  if (model.target.self_built) r.target_owned = OwnedCostPerGpuHour(*model.target.self_built);
  AddSideOptions(model.source, "source", 1.0, r.source_owned, r.options);
  AddSideOptions(model.target, "target", r.speed_ratio, r.target_owned, r.options);
  for (CostOption& o : r.options) o.cost_per_unit = o.CostAt(model.utilization, model.goodput);
  for (size_t i = 0; i < r.options.size(); ++i) {
    if (r.options[i].cost_per_unit < r.options[r.cheapest].cost_per_unit) r.cheapest = i;
    if (r.options[i].kind != "self-built") continue;
    const OwnedCost& owned = r.options[i].side == "source" ? *r.source_owned : *r.target_owned;
    for (size_t j = 0; j < r.options.size(); ++j) {
      const CostOption& rent = r.options[j];
      if (rent.side == r.options[i].side || rent.fixed) continue;
      BreakEven b{.owned = i, .rented = j};
      b.utilization = BreakEvenUtilization(r.options[i].per_gpu_hour, r.options[i].throughput,
                                           rent.effective_per_gpu_hour, rent.throughput);
      b.months_to_recover = MonthsToRecoverCapital(owned, r.options[i].throughput, rent,
                                                   model.utilization, model.goodput);
      r.break_evens.push_back(b);
    }
  }
  return r;
}

}  // namespace cutover::report
