// The cost model of `cutover assess --cost cost.yaml`: what each side costs per unit of work, from
// a small YAML file (`apiVersion: cutover/v1`; docs/cost.md documents every key and formula) and
// the throughput compat measured on each side.
//
// A side is either self-built (capital, depreciation, power, facility, staff, network, financing:
// a fixed cost per GPU-hour owned, paid whether the GPU works or not) or managed (one or more
// priced options: on-demand and spot are paid per use; a reserved or committed term is paid every
// hour like owning). The unit of work is what one source GPU does in one hour of the workload
// mix, so the source's throughput is 1 unit per GPU-hour and the target's is the mix's speed
// ratio (target/source, above 1 = target faster).
//
//   cost per unit of work   fixed:       per_gpu_hour / (U * goodput * T)
//                           per use:     per_gpu_hour / (goodput * T)      (spot: / (1 - s))
//   break-even utilization  U* = C_own * T_rent / (P_eff * T_own)          (own cheaper above)
//   months to recover       capital per GPU / (renting the owned GPU's work for a month at U
//                           - owning's running cost per month without capital and financing);
//                           never when that is not positive or exceeds the depreciation period
//
// Thread-safety: pure functions over values.
#ifndef CUTOVER_REPORT_COST_H_
#define CUTOVER_REPORT_COST_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/record.h"
#include "core/status.h"

namespace cutover::report {

// The only apiVersion this build reads. Bump (cutover/v2) on an incompatible change of the file.
inline constexpr std::string_view kCostApiVersion = "cutover/v1";
inline constexpr double kHoursPerYear = 8760;
inline constexpr double kHoursPerMonth = kHoursPerYear / 12;  // 730

enum class PriceKind { kOnDemand, kReserved, kCommitted, kSpot };
std::string_view PriceKindName(PriceKind k);  // "on-demand", "reserved", "committed", "spot"
// On-demand and spot are paid per use; reserved and committed every hour of their term.
inline bool PaidPerUse(PriceKind k) { return k == PriceKind::kOnDemand || k == PriceKind::kSpot; }

// One priced option of a managed side, per GPU-hour in the file's currency.
struct ManagedOption {
  std::string name;  // the file's label, "" when none (then the kind names it)
  PriceKind kind = PriceKind::kOnDemand;
  double price_per_gpu_hour = 0;
  double interruption_share = 0;  // spot: share of paid time lost to interruptions, [0, 1)
  double term_months = 0;         // reserved / committed: the term's length
};

// A self-built side. Money in the file's currency; per server unless named otherwise.
struct SelfBuiltCost {
  double capital_per_server = 0;  // servers with their GPUs, network share, installation
  int gpus_per_server = 8;
  double depreciation_years = 5;
  double power_kw_per_server = 0;  // average draw
  double pue = 1;                  // facility power / IT power, >= 1
  double price_per_kwh = 0;
  double facility_per_server_month = 0;  // colocation or own facility
  double staff_per_person_month = 0;     // operations staff, fully loaded
  double servers_per_person = 1;
  double network_storage_per_server_month = 0;
  double financing_rate = 0;  // yearly interest on the capital, [0, 1)
};

struct CostSide {
  std::string name;      // a label ("on-prem H100"), "" when none
  std::string supplier;  // "" when none; never in --redact output
  std::optional<SelfBuiltCost> self_built;
  std::vector<ManagedOption> managed;  // empty when self-built
};

// One entry of the workload mix: a case ID, an op name, or a prefix of case IDs ending in "/",
// and its share of the source's GPU time (relative: the shares are normalized).
struct WorkloadShare {
  std::string match;
  double share = 0;
  std::string where;  // "cost.yaml:12:3", for errors that need the measured records
};

struct CostModel {
  std::string file;  // as given
  std::string currency = "USD";
  double utilization = 0;               // (0, 1]: share of the hours the GPUs are busy
  double goodput = 1;                   // (0, 1]: share of busy GPU time doing useful work
  std::vector<WorkloadShare> workload;  // empty: every case measured on both sides, equal shares
  CostSide source, target;
};

// Parses a cost file; InvalidArgument with one line per problem, each naming the file, line,
// column and key ("cost.yaml:7:5: target.managed[0].price_per_gpu_hour: must be above 0, got 0").
Result<CostModel> ParseCostModel(std::string_view yaml_text, std::string_view file_name);
Result<CostModel> LoadCostModel(const std::string& path);

// What owning one GPU costs per hour (every hour of the year, busy or not), by item.
struct OwnedCost {
  double capital = 0;    // capital per GPU / (depreciation years * 8760)
  double financing = 0;  // the monthly annuity on the capital, per hour, less `capital`
  double power = 0;      // kW * PUE * price per kWh / GPUs per server
  double facility = 0, staff = 0, network_storage = 0;  // monthly items / (GPUs * 730)
  double total = 0;
  double capital_per_gpu = 0;
  double life_months = 0;  // 12 * depreciation years (0: no limit)
  // Running cost per hour: total less capital and financing.
  double Running() const { return total - capital - financing; }
};
OwnedCost OwnedCostPerGpuHour(const SelfBuiltCost& s);

// One option a side offers, as the report prices it.
struct CostOption {
  std::string side;                   // "source" | "target"
  std::string label;                  // "self-built", the option's name or its kind
  std::string kind;                   // "self-built" | PriceKindName
  bool fixed = false;                 // paid every hour (self-built, reserved, committed)
  double per_gpu_hour = 0;            // owned cost or price
  double effective_per_gpu_hour = 0;  // spot: price / (1 - interruption share); else per_gpu_hour
  double throughput = 0;              // units of work per busy, useful GPU-hour (source: 1)
  double cost_per_unit = 0;           // at the file's utilization and goodput
  // Cost per unit of work at utilization u. REQUIRES: u > 0, goodput > 0.
  double CostAt(double u, double goodput) const;
};

// An owned option against a pay-per-use one.
struct BreakEven {
  size_t owned = 0, rented = 0;   // indices into CostReport::options
  double utilization = 0;         // U*; above 1: owning never costs less
  double months_to_recover = -1;  // at the file's utilization; -1: never
};

// One case of the measured mix.
struct MixCase {
  std::string id;
  double share = 0;                   // normalized
  double source_s = 0, target_s = 0;  // median times
};

struct CostReport {
  CostModel model;
  double speed_ratio = 0;  // target / source throughput of the mix; above 1 = target faster
  std::vector<MixCase> mix;
  std::optional<OwnedCost> source_owned, target_owned;
  std::vector<CostOption> options;  // the source's, then the target's
  std::vector<BreakEven> break_evens;
  size_t cheapest = 0;  // index of the option with the lowest cost per unit at the file's U
};

// REQUIRES: capital_per_gpu > 0, years > 0.
double CapitalPerGpuHour(double capital_per_gpu, double years);
// The level monthly payment that repays `principal` over `months` at `yearly_rate` (principal /
// months when the rate is 0).
double AnnuityPerMonth(double principal, double yearly_rate, double months);
// U* at which owning (cost per owned GPU-hour, throughput) and renting per use (effective price
// per GPU-hour, throughput) cost the same per unit of work.
double BreakEvenUtilization(double owned_per_gpu_hour, double owned_throughput,
                            double rented_per_gpu_hour, double rented_throughput);
// Months until owning's savings against renting the same work repay the capital; -1 when owning
// saves nothing at that utilization.
double MonthsToRecoverCapital(const OwnedCost& owned, double owned_throughput,
                              const CostOption& rented, double utilization, double goodput);
// The mix's speed ratio: 1 / sum(share_i * target_s_i / source_s_i) (shares of source time).
double MixSpeedRatio(const std::vector<MixCase>& mix);

// Joins the model with the measured records. InvalidArgument when a side has no measured
// throughput ("assess: --cost: no case was measured ok on both sides") or a workload entry
// matches no case measured on both sides ("cost.yaml:9:3: workload.gemm: no case ...").
Result<CostReport> ComputeCost(const CostModel& model, const CompatRecord& source,
                               const CompatRecord& target);

// The report document's "cost_model" section; with `redact` the side names and suppliers are
// left out and options are named by their kind.
nlohmann::json CostReportToJson(const CostReport& c, bool redact);
std::string CostMarkdown(const CostReport& c, bool redact, const std::string& chart_file);
std::string CostHtml(const CostReport& c, bool redact);
// The chart of cost per unit of work against utilization (every option, the crossings marked),
// a standalone SVG document.
std::string CostChartSvg(const CostReport& c, bool redact);

}  // namespace cutover::report

#endif  // CUTOVER_REPORT_COST_H_
