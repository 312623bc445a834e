#include "report/command.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include <sys/stat.h>

#include "canary/history.h"
#include "compat/cluster_compare.h"
#include "compat/record.h"
#include "core/file_util.h"
#include "core/fingerprint.h"
#include "core/json.h"
#include "core/time_util.h"
#include "probe/fabric_floors.h"
#include "report/assess.h"
#include "report/redact.h"

namespace cutover {
namespace {

struct AssessFlags {
  std::string source, target;
  std::vector<std::string> compat;
  std::vector<std::string> cluster;
  std::string fabric_floors;
  std::string datasync, canary;
  std::vector<std::string> prices;
  std::string cost;
  std::string mode = "host";
  std::string out_dir = "cutover-report";
  bool out_given = false;  // --out on the command line
  bool force = false;
  bool redact = false;
};

// Reads one input document; a missing file is bad input (exit 2), named by its flag.
Result<nlohmann::json> LoadInput(const std::string& flag, const std::string& path) {
  Result<nlohmann::json> doc = LoadJsonFile(path);
  if (!doc.ok()) return Status::InvalidArgument(flag + " " + doc.status().message());
  return doc;
}

// "source=2.49" -> (source, 2.49).
Status ParsePrice(const std::string& text, report::AssessInputs& in) {
  size_t eq = text.find('=');
  std::string side = text.substr(0, eq);
  if (eq == std::string::npos || (side != "source" && side != "target")) {
    return Status::InvalidArgument("--price " + text + ": expected source=PRICE or target=PRICE");
  }
  std::string num = text.substr(eq + 1);
  char* end = nullptr;
  errno = 0;
  double v = num.empty() ? 0 : std::strtod(num.c_str(), &end);
  if (num.empty() || *end != '\0' || errno != 0 || !std::isfinite(v) || v <= 0) {
    return Status::InvalidArgument("--price " + text + ": the price must be a number above 0");
  }
  (side == "source" ? in.price_source : in.price_target) = v;
  return Status::Ok();
}

// Writes the four files (and the cost chart) to --out, or with --json alone prints the document.
Status WriteReport(const AssessFlags& f, const GlobalOptions& g, const report::Assessment& a,
                   bool write_files) {
  nlohmann::json doc = report::AssessmentToJson(a);
  if (!write_files) {
    std::string text = DumpJson(doc, 2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return Status::Ok();
  }
  CUTOVER_RETURN_IF_ERROR(MakeDirs(f.out_dir));
  const std::string html = f.out_dir + "/report.html", md = f.out_dir + "/report.md",
                    js = f.out_dir + "/report.json", xml = f.out_dir + "/junit.xml";
  CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(html, report::RenderHtml(a)));
  CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(md, report::RenderMarkdown(a)));
  CUTOVER_RETURN_IF_ERROR(WriteFileAtomic(js, DumpJson(doc, 2) + "\n"));
  CUTOVER_RETURN_IF_ERROR(report::AssessmentJunit(a).WriteFile(xml));
  if (a.cost_model) {
    CUTOVER_RETURN_IF_ERROR(
        WriteFileAtomic(f.out_dir + "/" + report::kCostChartFile,
                        report::CostChartSvg(*a.cost_model, a.inputs.redacted) + "\n"));
  }
  if (g.json) {
    std::string text = DumpJson(doc, 2) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string text = report::VerdictLine(a) + "\nreport: " + html + " (also " + md + ", " + js +
                       ", " + xml + ")\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  std::fflush(stdout);
  return Status::Ok();
}


Result<int> RunAssess(const AssessFlags& f, const GlobalOptions& g) {
  // --json alone prints the document and writes no file; files never replace a report unasked.
  const bool write_files = !g.json || f.out_given;
  struct stat existing;
  if (write_files && !f.force && ::stat((f.out_dir + "/report.json").c_str(), &existing) == 0) {
    return Status::FailedPrecondition("assess: " + f.out_dir +
                                      " already holds a report (report.json); pass --force to "
                                      "replace it, or name another --out");
  }
  report::AssessInputs in;
  CUTOVER_ASSIGN_OR_RETURN(in.mode, probe::ParseDiffMode(f.mode));
  for (const std::string& p : f.prices) CUTOVER_RETURN_IF_ERROR(ParsePrice(p, in));
  if (!f.cost.empty()) {
    if (!f.prices.empty()) {
      return Status::InvalidArgument(
          "assess: --cost and --price cannot be used together: the cost file prices each side");
    }
    if (f.compat.empty()) {
      return Status::InvalidArgument(
          "assess: --cost needs --compat SRC DST: the cost per unit of "
          "work comes from each side's measured throughput");
    }
    CUTOVER_ASSIGN_OR_RETURN(in.cost_model, report::LoadCostModel(f.cost));
    // The file may name suppliers, and so may its name.
    in.input_paths["cost"] = f.redact ? "cost file" : f.cost;
  }
  // A price is only used against measured rates: never drop one silently.
  if (!f.prices.empty() && f.compat.empty()) {
    return Status::InvalidArgument(
        "--price needs compat records (--compat SOURCE.rec TARGET.rec): the cost per unit of work "
        "is figured from their measured rates");
  }
  if (in.price_source.has_value() != in.price_target.has_value()) {
    return Status::InvalidArgument(
        std::string("--price needs both source=PRICE and target=PRICE; ") +
        (in.price_source ? "target" : "source") + " is missing");
  }

  // Every input is read before anything is judged, so that --redact learns every name first.
  std::vector<std::pair<std::string, nlohmann::json*>> docs;
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json src, LoadInput("--source", f.source));
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json tgt, LoadInput("--target", f.target));
  docs.emplace_back(f.source, &src);
  docs.emplace_back(f.target, &tgt);
  in.input_paths["source"] = f.source;
  in.input_paths["target"] = f.target;
  nlohmann::json compat_src, compat_tgt, plan, history;
  if (!f.compat.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(compat_src, LoadInput("--compat", f.compat[0]));
    CUTOVER_ASSIGN_OR_RETURN(compat_tgt, LoadInput("--compat", f.compat[1]));
    docs.emplace_back(f.compat[0], &compat_src);
    docs.emplace_back(f.compat[1], &compat_tgt);
    in.input_paths["compat source"] = f.compat[0];
    in.input_paths["compat target"] = f.compat[1];
  }
  nlohmann::json cluster_src, cluster_tgt, node_names = nlohmann::json::array();
  if (!f.cluster.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(cluster_src, LoadInput("--cluster", f.cluster[0]));
    CUTOVER_ASSIGN_OR_RETURN(cluster_tgt, LoadInput("--cluster", f.cluster[1]));
    docs.emplace_back(f.cluster[0], &cluster_src);
    docs.emplace_back(f.cluster[1], &cluster_tgt);
    in.input_paths["cluster source"] = f.cluster[0];
    in.input_paths["cluster target"] = f.cluster[1];
    // Node names are host names, also where no fingerprint came with them: --redact hides them.
    for (const nlohmann::json* rec : {&cluster_src, &cluster_tgt}) {
      if (const nlohmann::json* nodes = FindJson(*rec, "/rank_nodes"); nodes && nodes->is_array()) {
        for (const nlohmann::json& n : *nodes) {
          if (n.is_string()) node_names.push_back({{"hostname", n}});
        }
      }
    }
  }
  if (!f.fabric_floors.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadFile(f.fabric_floors));
    CUTOVER_ASSIGN_OR_RETURN(in.fabric_floors,
                             probe::ParseFabricFloors(text, "--fabric-floors " + f.fabric_floors));
  }
  if (!f.datasync.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(plan, LoadInput("--datasync", f.datasync));
    docs.emplace_back(f.datasync, &plan);
    in.input_paths["datasync plan"] = f.datasync;
  }
  if (!f.canary.empty()) {
    struct stat st;
    if (::stat(f.canary.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      CUTOVER_ASSIGN_OR_RETURN(history, LoadInput("--canary", f.canary));
      in.input_paths["canary history"] = f.canary;
    } else {
      Result<nlohmann::json> h = canary::RolloutHistory(ResolveDbPath(g), f.canary);
      if (!h.ok()) {
        return Status::InvalidArgument("--canary " + f.canary +
                                       ": neither a history file nor a rollout in the state "
                                       "file: " +
                                       h.status().message());
      }
      history = std::move(*h);
      in.input_paths["canary history"] = "rollout " + f.canary;
    }
    docs.emplace_back(f.canary, &history);
  }
  if (f.redact) {
    report::Redactor r;
    for (auto& [path, doc] : docs) r.Learn(*doc);
    r.Learn(node_names);
    for (auto& [path, doc] : docs) r.Apply(*doc);
    for (auto& [key, path] : in.input_paths) path = r.ApplyText(path);
    in.redacted = true;
  }
  auto named = [](const std::string& path, const Status& s) {
    return Status::InvalidArgument(path + ": " + s.message());
  };
  Result<Fingerprint> s = FingerprintFromJson(src);
  if (!s.ok()) return named(f.source, s.status());
  Result<Fingerprint> t = FingerprintFromJson(tgt);
  if (!t.ok()) return named(f.target, t.status());
  in.source = std::move(*s);
  in.target = std::move(*t);
  if (!f.compat.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(in.compat_source, RecordFromJson(compat_src, f.compat[0]));
    CUTOVER_ASSIGN_OR_RETURN(in.compat_target, RecordFromJson(compat_tgt, f.compat[1]));
  }
  if (!f.cluster.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(in.cluster_source,
                             CheckClusterRecord(std::move(cluster_src), f.cluster[0]));
    CUTOVER_ASSIGN_OR_RETURN(in.cluster_target,
                             CheckClusterRecord(std::move(cluster_tgt), f.cluster[1]));
  }
  if (!f.datasync.empty()) in.datasync_plan = std::move(plan);
  if (!f.canary.empty()) in.canary_history = std::move(history);
  in.generated_at = NowRfc3339Utc();

  CUTOVER_ASSIGN_OR_RETURN(report::Assessment a, report::Assess(std::move(in)));
  CUTOVER_RETURN_IF_ERROR(WriteReport(f, g, a, write_files));
  return a.ExitCode();
}
}  // namespace

void AddAssessCommand(CLI::App& root, CommandContext& ctx) {
  auto f = std::make_shared<AssessFlags>();
  CLI::App* cmd = root.add_subcommand(
      "assess",
      "Write the assessment report of a source and a target: report.html (charts), report.md, "
      "report.json (cutover.report/2) and junit.xml (and cost-chart.svg with --cost); exit 1 on a "
      "no-go verdict, 2 on bad input (nothing written)");
  cmd->add_option("--source", f->source, "The source host's fingerprint (probe collect --out)")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--target", f->target, "The target host's fingerprint")
      ->required()
      ->type_name("FILE");
  cmd->add_option("--compat", f->compat,
                  "The compat records of the source and the target (compat run --record), in "
                  "that order")
      ->expected(2)
      ->type_name("SRC DST");
  cmd->add_option("--cluster", f->cluster,
                  "The cluster records of the source and the target (compat run --suite cluster "
                  "--record), in that order: bus bandwidth per collective, slow nodes and links, "
                  "node consistency, and each side against its fabric's expected floors")
      ->expected(2)
      ->type_name("SRC DST");
  cmd->add_option("--fabric-floors", f->fabric_floors,
                  "A floors file (schema cutover.fabric-floors/1) used instead of the built-in "
                  "table (probe/rules/fabric-floors.json)")
      ->type_name("FILE");
  cmd->add_option("--datasync", f->datasync, "A datasync plan (datasync plan ... --json)")
      ->type_name("FILE");
  cmd->add_option("--canary", f->canary,
                  "A rollout: its name in the state file (--db), or a file that `canary history "
                  "--name NAME --json` wrote")
      ->type_name("ROLLOUT");
  cmd->add_option("--price", f->prices,
                  "Price per GPU-hour of a side, any one currency: source=2.10 or target=3.40 "
                  "(repeat for both); adds throughput per price to the report")
      ->type_name("SIDE=PRICE");
  cmd->add_option("--cost", f->cost,
                  "A cost file (apiVersion: cutover/v1; docs/cost.md): each side self-built or "
                  "managed; adds the cost per unit of work from the measured --compat throughput, "
                  "the break-even utilization, months to recover the capital and "
                  "cost-chart.svg; not with --price")
      ->type_name("FILE");
  cmd->add_option("--mode", f->mode,
                  "host (default: the workload uses the target's installed stack) or container "
                  "(it brings its image's user-space stack)")
      ->check(CLI::IsMember({"host", "container"}));
  CLI::Option* out =
      cmd->add_option("--out", f->out_dir,
                      "The directory the four files are written to (default cutover-report, "
                      "none with --json alone); here --out names a directory, not the single "
                      "file it names elsewhere")
          ->type_name("DIR");
  cmd->add_flag("--force", f->force, "Replace the report a directory already holds");
  cmd->add_flag("--redact", f->redact,
                "Replace hostnames, GPU UUIDs, serial numbers and IPv4 addresses with stable "
                "pseudonyms in every output, for reports that leave the company");
  SetCommand(cmd, ctx, [f, out, &ctx]() {
    f->out_given = out->count() > 0;
    return RunAssess(*f, ctx.global);
  });
}

}  // namespace cutover
