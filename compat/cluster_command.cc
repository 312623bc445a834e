#include "compat/cluster_command.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "compat/cluster_compare.h"
#include "core/junit.h"
#include "core/progress.h"
#include "core/strings.h"

namespace cutover {

Result<int> RunClusterCommand(const ClusterOptions& o, const GlobalOptions& g,
                              const ClusterNodeHooks& hooks) {
  if (o.record_path.empty()) {
    return Status::InvalidArgument("compat run: --record OUT is required");
  }
  if (o.backend != "cpu" && o.backend != "cuda") {
    return Status::InvalidArgument("compat run --suite cluster: --backend " + o.backend +
                                   ": cpu (MPI's own collectives) or cuda (NCCL)");
  }
  CUTOVER_RETURN_IF_ERROR(CheckClusterOptions(o));
  const Launcher launcher = DetectLauncher([](const char* name) { return std::getenv(name); });
  CUTOVER_RETURN_IF_ERROR(CheckLauncher(launcher));
  CUTOVER_ASSIGN_OR_RETURN(ClusterComm comm, LoadMpiPlugin(MpiLoaderOptions()));
  CUTOVER_RETURN_IF_ERROR(comm.Init());
  if (comm.size() < 2) return Status::InvalidArgument(kWorldOfOneMessage);
  std::unique_ptr<ClusterTransport> transport;
  if (o.backend == "cuda") {
    // Fails on every rank alike (a rank without its GPU or plugin stops them all).
    CUTOVER_ASSIGN_OR_RETURN(transport,
                             OpenDeviceTransport(comm, launcher, o.timeout_s, LoaderOptions{}));
  } else {
    transport = MakeMpiTransport(comm);
  }
  // Rank 0's rows as they are measured: on stderr as table lines, or with --progress json as
  // events (one "progress" per interval, the last row as its note; "start" and "end").
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, ProgressOptionsFromGlobal(g));
  std::optional<Progress> events;
  if (comm.rank() == 0 && popts.mode == ProgressMode::kJson) {
    events.emplace(std::move(popts), "compat run --suite cluster", 0, "rows");
    events->StartTimer();
  }
  auto progress = [&g, &events](const std::string& line) {
    if (events) {
      events->SetNote(std::string(Trim(line)));
      events->Add(1);
    } else if (!g.quiet && !g.json) {
      std::fputs(line.c_str(), stderr);
    }
  };
  Result<ClusterRunResult> ran = RunClusterSuite(comm, *transport, o, launcher, hooks, progress);
  if (events) events->Finish(ran.ok() ? Status::Ok() : ran.status());
  if (!ran.ok()) {
    // The same on every rank (options that disagree): every rank returns it.
    if (ran.status().code() == Code::kInvalidArgument) return ran.status();
    // Seen by this rank alone (a collective the watchdog aborted, a device error): end the job
    // rather than leave the others in a collective. Rank 0 rewrote the record after each size.
    std::fprintf(stderr, "cutover: rank %d: %s\n", comm.rank(), ran.status().message().c_str());
    std::fflush(stderr);
    comm.AbortJob(3);
  }
  const bool wrong = !ran->all_correct;
  if (comm.rank() != 0) return wrong ? 1 : 0;
  nlohmann::json summary = {
      {"record", o.record_path},
      {"world_size", comm.size()},
      {"all_correct", !wrong},
      {"slow_nodes", ran->record.contains("pairwise") ? ran->record["pairwise"]["slow_nodes"]
                                                      : nlohmann::json::array()}};
  CUTOVER_RETURN_IF_ERROR(
      EmitResult(g, summary, ran->table + "record written to " + o.record_path + "\n"));
  return wrong ? 1 : 0;
}

Result<std::optional<int>> MaybeCompareCluster(const std::string& source, const std::string& target,
                                               const std::string& junit, const GlobalOptions& g) {
  // An unreadable or non-JSON file is left to the single-node loader and its messages.
  const std::string src_schema = RecordSchema(source).value_or("");
  const std::string tgt_schema = RecordSchema(target).value_or("");
  const bool src_cluster = IsClusterSchema(src_schema), tgt_cluster = IsClusterSchema(tgt_schema);
  if (!src_cluster && !tgt_cluster) return std::optional<int>();
  if (src_cluster != tgt_cluster) {
    const std::string& c = src_cluster ? source : target;
    const std::string& s = src_cluster ? target : source;
    return Status::InvalidArgument("compat compare: " + c + " is a cluster record (" +
                                   (src_cluster ? src_schema : tgt_schema) + ") and " + s +
                                   " is not (" + (src_cluster ? tgt_schema : src_schema) +
                                   "): a cluster run compares only with another cluster run");
  }
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json src, LoadClusterRecord(source));
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json tgt, LoadClusterRecord(target));
  ClusterComparison c = CompareClusterRecords(src, tgt);
  if (!junit.empty()) {
    JunitReport report{.name = "cutover compat cluster"};
    JunitSuite& suite = report.suites.emplace_back(JunitSuite{.name = "cluster"});
    for (const nlohmann::json& row : c.doc["collectives"]) {
      char name[128];
      std::snprintf(name, sizeof(name), "%s busbw ratio %.3f",
                    row["regime"].get<std::string>().c_str(), row["busbw_ratio"].get<double>());
      suite.cases.push_back({.classname = "cluster." + row["op"].get<std::string>(), .name = name});
    }
    for (const nlohmann::json& w : c.doc["wrong_results"]) {
      suite.cases.push_back({.classname = "cluster." + w["op"].get<std::string>(),
                             .name = "correct " + std::to_string(w["bytes"].get<uint64_t>()) + " B",
                             .outcome = JunitOutcome::kFailed,
                             .message = "wrong result on the " + w["side"].get<std::string>()});
    }
    CUTOVER_RETURN_IF_ERROR(report.WriteFile(junit));
  }
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, c.doc, c.table));
  return std::optional<int>(c.failed ? 1 : 0);
}

}  // namespace cutover
