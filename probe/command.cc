#include "probe/command.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "core/file_system.h"
#include "core/file_util.h"
#include "core/fingerprint.h"
#include "core/read_input.h"
#include "probe/check_binary.h"
#include "probe/collect.h"
#include "probe/diff.h"
#include "probe/export.h"
#include "probe/fleet.h"
#include "probe/health.h"
#include "probe/policy.h"
#include "probe/store.h"

namespace cutover {
namespace {

// Fingerprints `root`: "/" (or "") is this host, live; any other directory is read as files
// only. `deep`: --deep (hashes cached under $XDG_CACHE_HOME/cutover or ~/.cache/cutover).
Result<Fingerprint> CollectAt(std::string root, bool deep = false) {
  if (root.empty()) root = "/";
  bool live = root == "/";
  if (!live) {
    char buf[PATH_MAX];
    struct stat st;
    if (::realpath(root.c_str(), buf) == nullptr || ::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("--root " + root + ": not a directory");
    }
    root = buf;
    live = root == "/";
  }
  probe::CollectOptions options;
  if (live) options = probe::LiveOptions();
  if (deep) {
    std::map<std::string, std::string> env;
    for (const char* name : {"XDG_CACHE_HOME", "HOME"}) {
      if (const char* v = std::getenv(name)) env[name] = v;
    }
    options.deep.enabled = true;
    options.deep.load = live;
    options.deep.cache_dir = probe::HashCache::DefaultDir(env);
  }
  RealFileSystem fs(root);
  return probe::Collect(fs, std::move(options));
}

// The state file named by --db or $CUTOVER_DB; "" when neither is given (the default path
// ResolveDbPath falls back to is not used).
std::string ExplicitDbPath(const GlobalOptions& g) {
  if (!g.db.empty()) return g.db;
  const char* env = std::getenv("CUTOVER_DB");
  return env != nullptr ? env : "";
}

struct CollectFlags {
  std::string root = "/";
  std::string format = "table";
  bool deep = false;
};

void AddCollect(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<CollectFlags>();
  CLI::App* sub = probe.add_subcommand(
      "collect",
      "Fingerprint this host (NVML, CUDA driver, /proc, /sys, libraries) or, with --root, an "
      "image or a mounted root (files only); with --db FILE or $CUTOVER_DB also store the "
      "document there by host and collection time (nothing is stored without them)");
  sub->add_option("--root", flags->root,
                  "Read this directory as the root of the host (an unpacked image, a chroot, a "
                  "fixture); files only, no live queries")
      ->type_name("DIR");
  sub->add_option("--format", flags->format,
                  "table (default), json (the fingerprint document), prometheus (text for "
                  "node_exporter's textfile collector) or labels (GPU Feature Discovery-style "
                  "key=value node labels); --out still writes the JSON document")
      ->check(CLI::IsMember({"table", "json", "prometheus", "labels"}));
  sub->add_flag("--deep", flags->deep,
                "Also hash every library (sha256, cached by device, inode, size and mtime in "
                "$XDG_CACHE_HOME/cutover or ~/.cache/cutover), list the GPU architectures each "
                "embeds, and on this host (not with --root) load each one in a child process "
                "and record the version it reports (loaded_version)");
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    const bool text_format = flags->format == "prometheus" || flags->format == "labels";
    if (text_format && ctx.global.json) {
      return Status::InvalidArgument("--json cannot be combined with --format " + flags->format);
    }
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint fp, CollectAt(flags->root, flags->deep));
    // Stored only when asked: unlike the tools whose state is resume state, probe writes no
    // default state file.
    if (std::string db = ExplicitDbPath(ctx.global); !db.empty()) {
      CUTOVER_ASSIGN_OR_RETURN(probe::FingerprintStore store, probe::FingerprintStore::Open(db));
      CUTOVER_RETURN_IF_ERROR(store.Add(fp).status());
    }
    GlobalOptions g = ctx.global;
    if (flags->format == "json") g.json = true;
    nlohmann::json doc = FingerprintToJson(fp);
    std::string text = flags->format == "prometheus" ? probe::RenderPrometheus(fp)
                       : flags->format == "labels"   ? probe::RenderGfdLabels(fp)
                                                     : probe::RenderTable(fp);
    CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, text));
    return 0;
  });
}

// Reads and checks one fingerprint document; errors name the file.
Result<Fingerprint> LoadFingerprint(const std::string& path) {
  Result<std::string> text = ReadInput(path);
  if (!text.ok()) return Status::InvalidArgument(path + ": " + text.status().message());
  Result<Fingerprint> fp = ParseFingerprint(*text);
  if (!fp.ok()) return Status::InvalidArgument(path + ": " + fp.status().message());
  return fp;
}

struct DiffFlags {
  std::string source;
  std::string target;
  std::string mode = "host";
};

void AddDiff(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<DiffFlags>();
  CLI::App* sub = probe.add_subcommand(
      "diff", "Diff two fingerprints into blockers, warnings and infos (exit 1 when any blocker)");
  sub->add_option("SOURCE", flags->source, "The source fingerprint (probe collect --json)")
      ->required();
  sub->add_option("TARGET", flags->target, "The target fingerprint")->required();
  sub->add_option("--mode", flags->mode,
                  "host (default: the workload uses the target's installed stack) or container "
                  "(it brings its image's user-space stack)")
      ->check(CLI::IsMember({"host", "container"}));
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    CUTOVER_ASSIGN_OR_RETURN(probe::DiffMode mode, probe::ParseDiffMode(flags->mode));
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint source, LoadFingerprint(flags->source));
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint target, LoadFingerprint(flags->target));
    probe::DiffReport report = probe::Diff(source, target, mode, probe::BuiltinRules());
    CUTOVER_RETURN_IF_ERROR(
        EmitResult(ctx.global, probe::DiffToJson(report), probe::RenderDiffTable(report)));
    return report.Count("blocker") > 0 ? 1 : 0;
  });
}

// The fingerprint a check runs on: the saved document at `path` when given, else a collection of
// `root` ("" = this host, live).
Result<Fingerprint> SavedOrCollected(const std::string& path, const std::string& root) {
  if (!path.empty()) return LoadFingerprint(path);
  return CollectAt(root);
}

struct CheckFlags {
  std::string policy;
  std::string root;
  std::string fingerprint;
  std::string junit;
  bool strict = false;
};

void AddCheck(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<CheckFlags>();
  CLI::App* sub = probe.add_subcommand(
      "check",
      "Check this host, an image root (--root) or a saved fingerprint against a policy of "
      "requirements (YAML, kind ProbePolicy); exit 1 when any requirement fails");
  sub->add_option("--policy", flags->policy, "The policy file (see docs/ci.md; - reads stdin)")
      ->required()
      ->type_name("POLICY.yaml");
  auto* root = sub->add_option("--root", flags->root,
                               "Fingerprint this directory (an unpacked image) instead of the "
                               "live host")
                   ->type_name("DIR");
  sub->add_option("FINGERPRINT", flags->fingerprint,
                  "Check a saved fingerprint (probe collect --out) instead of collecting one")
      ->excludes(root);
  sub->add_option("--junit", flags->junit, "Also write the checks as JUnit XML")->type_name("FILE");
  sub->add_flag("--strict", flags->strict,
                "Exit 1 on a warning too (a requirement that holds with a caveat)");
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    CUTOVER_ASSIGN_OR_RETURN(probe::Policy policy, probe::LoadPolicy(flags->policy));
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint fp, SavedOrCollected(flags->fingerprint, flags->root));
    probe::PolicyReport report = probe::CheckPolicy(policy, fp);
    if (!flags->junit.empty()) {
      CUTOVER_RETURN_IF_ERROR(probe::PolicyJunit(report).WriteFile(flags->junit));
    }
    CUTOVER_RETURN_IF_ERROR(EmitResult(ctx.global, probe::PolicyReportToJson(report, fp),
                                       probe::RenderPolicyTable(report)));
    return report.failed() || (flags->strict && report.Count("warn") > 0) ? 1 : 0;
  });
}

struct CheckBinaryFlags {
  std::vector<std::string> files;
  std::string target;
  std::string root;
};

void AddCheckBinary(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<CheckBinaryFlags>();
  CLI::App* sub = probe.add_subcommand(
      "check-binary",
      "Read the GPU code (SASS and PTX) embedded in executables, libraries and objects, and say "
      "whether each GPU of the target runs it; exit 1 when one does not");
  sub->add_option("FILE", flags->files, "ELF executables, shared libraries or objects")->required();
  auto* target = sub->add_option("--target", flags->target,
                                 "The target's fingerprint (probe collect --out); default: this "
                                 "host, live")
                     ->type_name("FINGERPRINT.json");
  sub->add_option("--root", flags->root, "Fingerprint this directory as the target instead")
      ->type_name("DIR")
      ->excludes(target);
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    std::vector<probe::BinaryImage> images;
    for (const std::string& f : flags->files) {
      Result<probe::BinaryImage> img = probe::ReadBinaryFile(f);
      if (!img.ok()) return Status::InvalidArgument(img.status().message());
      images.push_back(std::move(*img));
    }
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint fp, SavedOrCollected(flags->target, flags->root));
    probe::CheckBinaryReport report = probe::CheckBinaries(std::move(images), fp);
    CUTOVER_RETURN_IF_ERROR(EmitResult(ctx.global, probe::CheckBinaryToJson(report),
                                       probe::RenderCheckBinaryTable(report)));
    return report.AnyFailure() ? 1 : 0;
  });
}

struct FleetFlags {
  std::vector<std::string> paths;
  int threads = 0;
  size_t max_hosts = 10;
};

void AddFleet(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<FleetFlags>();
  CLI::App* sub = probe.add_subcommand(
      "fleet",
      "Group many hosts' fingerprints by stack (driver, CUDA, cuDNN, NCCL and its plugins, GPU "
      "model, firmware) and name the outliers; exit 1 when the fleet is not consistent");
  sub->add_option("PATH", flags->paths,
                  "Fingerprint files (probe collect --out), or one directory searched for *.json")
      ->required();
  sub->add_option("--threads", flags->threads, "Parse on N threads (default: every core)")
      ->check(IntRange(1, 256));
  sub->add_option("--max-hosts", flags->max_hosts,
                  "Hosts named per stack in the table "
                  "(default 10; --json names all)");
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> files, probe::FleetFiles(flags->paths));
    int threads = flags->threads > 0
                      ? flags->threads
                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    probe::FleetReport report = probe::AnalyzeFleet(files, threads);
    CUTOVER_RETURN_IF_ERROR(EmitResult(ctx.global, probe::FleetToJson(report),
                                       probe::RenderFleetTable(report, flags->max_hosts)));
    if (!report.unreadable.empty()) {
      return Status::InvalidArgument(std::to_string(report.unreadable.size()) + " of " +
                                     std::to_string(files.size()) +
                                     " files are not readable fingerprints (listed above)");
    }
    return report.consistent() ? 0 : 1;
  });
}

struct HealthFlags {
  std::string fingerprint;
  std::string root;
  std::string kernel_log;
};

void AddHealth(CLI::App& probe, CommandContext& ctx) {
  auto flags = std::make_shared<HealthFlags>();
  CLI::App* sub = probe.add_subcommand(
      "health",
      "Judge each GPU healthy, degraded or failed from ECC, row remapping, retired pages, "
      "throttling, PCIe link, persistence mode and Xid events in the kernel log (a saved "
      "fingerprint's own gpus[].xid_events without --kernel-log); exit 1 when one is not "
      "healthy");
  auto* saved = sub->add_option("FINGERPRINT", flags->fingerprint,
                                "A saved fingerprint (probe collect --out); default: this "
                                "host, live");
  sub->add_option("--root", flags->root, "Fingerprint this directory instead")
      ->type_name("DIR")
      ->excludes(saved);
  sub->add_option("--kernel-log", flags->kernel_log,
                  "Kernel log to scan for Xids (dmesg or journalctl -k output); default: this "
                  "host's /dev/kmsg when judging it live, <root>/var/log/kern.log with --root, "
                  "the Xids recorded in a saved fingerprint")
      ->type_name("FILE");
  SetCommand(sub, ctx, [flags, &ctx]() -> Result<int> {
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint fp, SavedOrCollected(flags->fingerprint, flags->root));
    std::string log, source;
    if (!flags->kernel_log.empty()) {
      Result<std::string> text = ReadFile(flags->kernel_log);
      if (!text.ok()) return Status::InvalidArgument("--kernel-log: " + text.status().message());
      log = std::move(*text);
      source = flags->kernel_log;
    } else if (!flags->root.empty() && flags->root != "/") {
      Result<std::string> text = ReadFile(flags->root + "/var/log/kern.log");
      source = text.ok() ? flags->root + "/var/log/kern.log"
                         : "not read (no var/log/kern.log under --root): Xid events not checked";
      if (text.ok()) log = std::move(*text);
    } else if (!flags->fingerprint.empty()) {
      // The Xids the collection recorded (gpus[].xid_events), as log lines.
      for (const GpuInfo& g : fp.gpus) {
        for (const GpuXidEvent& x : g.xid_events) log += x.text + "\n";
      }
      const std::optional<std::string>& from = fp.collection.kernel_log;
      if (from && from->rfind("not read", 0) != 0) {
        source = "the fingerprint's gpus[].xid_events (collected from " + *from + ")";
      } else {
        source =
            "not read (a saved fingerprint whose collection read no kernel log; pass "
            "--kernel-log): Xid events not checked";
      }
    } else {
      log = probe::ReadLiveKernelLog(&source);
    }
    if (fp.gpus.empty()) {
      return Status::Environment("no GPUs to judge (driver " + fp.driver.status +
                                 (fp.driver.error ? ": " + *fp.driver.error : std::string()) + ")");
    }
    probe::HealthReport report = probe::JudgeHealth(fp, probe::ParseXidEvents(log), source);
    CUTOVER_RETURN_IF_ERROR(
        EmitResult(ctx.global, probe::HealthToJson(report), probe::RenderHealthTable(report)));
    return report.AllHealthy() ? 0 : 1;
  });
}

}  // namespace

void AddProbeCommand(CLI::App& root, CommandContext& ctx) {
  CLI::App* cmd = root.add_subcommand(
      "probe", "Fingerprint the driver, CUDA and library stacks and GPUs of a host or an image");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  AddCollect(*cmd, ctx);
  AddDiff(*cmd, ctx);
  AddFleet(*cmd, ctx);
  AddHealth(*cmd, ctx);
  AddCheckBinary(*cmd, ctx);
  AddCheck(*cmd, ctx);
}

}  // namespace cutover
