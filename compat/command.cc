#include "compat/command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <thread>
#include <vector>

#include "compat/backend_loader.h"
#include "compat/case_dump.h"
#include "compat/cluster_command.h"
#include "compat/compare.h"
#include "compat/device_runner.h"
#include "compat/op.h"
#include "compat/record.h"
#include "compat/runner.h"
#include "compat/soak.h"
#include "compat/stability.h"
#include "compat/suite_run.h"
#include "core/file_system.h"
#include "core/file_util.h"
#include "core/fingerprint.h"
#include "core/json.h"
#include "core/progress.h"
#include "core/read_input.h"
#include "core/time_util.h"
#include "core/units.h"

namespace cutover {
namespace {

constexpr char kRunHelp[] =
    "Run a suite and write a record (cutover.compat-record/1). --backend cpu runs every op that "
    "has a meaning on a CPU (others are recorded as n/a) through the libraries frameworks use "
    "where this build has them: fp32 GEMM through OpenBLAS, convolution and matmul (fp32, and "
    "bf16 where the CPU has it) through oneDNN; every other case runs cutover's own kernels "
    "(reduced-precision dtypes emulated: inputs rounded to the dtype, fp32 or int32 "
    "accumulation, output rounded). Each case's record names its implementation. --backend "
    "reference runs every case on cutover's own kernels (as does --accumulate fp64). Both "
    "measure the backend's copy and GEMM ceilings first (the GEMM through the BLAS when used; "
    "about a second; a resumed run keeps the record's); --threads sets our pool, OpenBLAS and "
    "oneDNN alike. "
    "--backend cuda loads the CUDA backend "
    "plugin (libcutover_compat_cuda.so next to this binary, in ../lib/cutover/, or "
    "$CUTOVER_CUDA_PLUGIN), checks every device, measures the device's copy bandwidth and GEMM "
    "rate (stored in the record with the device's name, SM count, compute capability, library "
    "versions and TF32 setting) and runs every case on --device; an op the plugin lacks is "
    "recorded as missing, one with no meaning on the device as n/a. With no usable plugin, "
    "driver or device it exits 3. --suite cluster runs the collectives across the ranks of an "
    "MPI job instead (cpu backend: MPI's own collectives; cuda backend: one NCCL communicator "
    "over every rank, one GPU per rank by its local rank, its unique id carried by MPI; start "
    "it with mpirun or srun --mpi=pmix; built and tested against OpenMPI 4 from Debian, through "
    "the plugin libcutover_compat_mpi.so; rank 0 writes a cutover.compat-cluster/1 record; "
    "docs/compat.md).";

constexpr char kCalibrateHelp[] =
    "Measure a device's own ceilings through the CUDA backend plugin: our copy kernel and "
    "cudaMemcpy device to device (GB/s, bytes read + written), a bf16 8192^3 and an fp32 4096^3 "
    "GEMM through cuBLASLt (TFLOP/s). Exit 3 without a usable plugin, driver or device.";

struct RunOptions {
  std::string backend = "cpu";
  std::string suite = "quick";
  std::vector<std::string> ops;
  std::string record;
  std::string accumulate = "fp32";
  std::string fingerprint;
  int reps = 5;
  int warmup = 3;
  int threads = 2;
  int device = 0;
  bool resume = false;
  // --suite cluster only (compat/cluster_suite.h); sizes as text for core/units ParseBytes.
  std::string min_bytes = "8", max_bytes, pair_bytes = "4MiB";
  int step_factor = 2, pair_reps = 3, passes = 3;
  std::string fabric;
  std::string timeout = "10m";  // cluster, cuda: the watchdog (core/units ParseDuration)
  std::string dump;             // --dump DIR
  std::string soak;             // a duration ("10m"): compat/soak.h
};

struct DumpOptions {
  std::vector<std::string> ids;
  std::string dir;
};

struct CompareOptions {
  std::string source, target, junit;
  bool fail_on_slower = false;
};

// The fingerprint embedded in a record: the probe's document when --fingerprint names one
// (checked against cutover.fingerprint/1), else the little compat can learn without probe.
Result<nlohmann::json> RecordFingerprint(const std::string& path) {
  if (!path.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(std::string text, ReadInput(path));
    CUTOVER_ASSIGN_OR_RETURN(Fingerprint fp, ParseFingerprint(text));
    return FingerprintToJson(fp);
  }
  Fingerprint fp;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) fp.hostname = host;
  struct utsname u;
  if (uname(&u) == 0) {
    fp.os.kernel = u.release;
    fp.os.arch = u.machine;
  }
  fp.cpu.cores = static_cast<int>(std::thread::hardware_concurrency());
  fp.collection.live = false;
  fp.collection.collected_at = NowRfc3339Utc();
  fp.collection.cutover_version = std::string(CutoverVersion());
  fp.collection.findings.push_back(
      {"info", "compat.minimal_fingerprint",
       "minimal fingerprint from compat; pass --fingerprint FILE (cutover probe collect) for "
       "the full one"});
  return FingerprintToJson(fp);
}

// The record's calibration from the plugin's: the copy kernel's bandwidth, the fp32 (TF32 off)
// GEMM of 4096^3 and the bf16 GEMM of gemm_size^3 (docs/compat.md "Calibration").
Calibration CalibrationFromBackend(const BackendCalibration& b, double seconds) {
  Calibration k;
  k.measured = true;
  k.copy_gbps = b.copy_kernel_gbps;
  k.copy_bytes = 2.0 * static_cast<double>(b.copy_bytes);  // read + written
  k.gemm_gflops = b.gemm_fp32_tflops * 1e3;
  k.gemm_shape = {4096, 4096, 4096};
  k.gemm_bf16_gflops = b.gemm_bf16_tflops * 1e3;
  k.gemm_bf16_size = b.gemm_size;
  k.seconds = seconds;
  return k;
}

// Loads and initializes the CUDA backend, checks `device`, and prints what it found to stderr.
Result<LoadedBackend> OpenCuda(int device) {
  CUTOVER_ASSIGN_OR_RETURN(LoadedBackend cuda, LoadCudaBackend(LoaderOptions{}));
  CUTOVER_RETURN_IF_ERROR(cuda.Init().WithContext("CUDA backend"));
  if (device < 0 || device >= cuda.DeviceCount()) {
    return Status::InvalidArgument("compat: --device " + std::to_string(device) +
                                   ": the CUDA backend has " + std::to_string(cuda.DeviceCount()) +
                                   " device(s)");
  }
  return cuda;
}

// "implementations: 3 cases OpenBLAS 0.3.21 (core Zen, 2 threads); 40 cases reference\n" in
// order of first use (cpu and reference records).
std::string ImplementationSummary(const CompatRecord& rec) {
  std::vector<std::pair<std::string, int>> seen;
  for (const CaseResult& r : rec.cases) {
    if (r.implementation.empty()) continue;
    auto it = std::find_if(seen.begin(), seen.end(),
                           [&](const auto& p) { return p.first == r.implementation; });
    if (it == seen.end()) {
      seen.push_back({r.implementation, 1});
    } else {
      ++it->second;
    }
  }
  if (seen.empty()) return "";
  std::string out = "implementations:";
  for (size_t i = 0; i < seen.size(); ++i) {
    out += std::string(i == 0 ? " " : "; ") + std::to_string(seen[i].second) + " cases " +
           seen[i].first;
  }
  return out + "\n";
}

// `--suite cluster`: the flags into ClusterOptions, then compat/cluster_command.h.
Result<int> RunCluster(const RunOptions& o, const GlobalOptions& g, ClusterNodeHooks hooks) {
  ClusterOptions c;
  c.backend = o.backend;
  c.ops = o.ops;
  CUTOVER_ASSIGN_OR_RETURN(c.min_bytes, ParseBytes(o.min_bytes));
  c.max_bytes = o.backend == "cuda" ? (1ull << 30) : (64ull << 20);
  if (!o.max_bytes.empty()) {
    CUTOVER_ASSIGN_OR_RETURN(c.max_bytes, ParseBytes(o.max_bytes));
  }
  CUTOVER_ASSIGN_OR_RETURN(c.pair_bytes, ParseBytes(o.pair_bytes));
  c.step_factor = o.step_factor;
  c.warmup = o.warmup;
  c.reps = o.reps;
  c.pair_reps = o.pair_reps;
  c.passes = o.passes;
  c.record_path = o.record;
  c.fabric = o.fabric;
  CUTOVER_ASSIGN_OR_RETURN(std::chrono::milliseconds timeout, ParseDuration(o.timeout));
  c.timeout_s = std::chrono::duration<double>(timeout).count();
  // --fingerprint FILE, or no collector handed in: the minimal fingerprint compat makes itself.
  if (!o.fingerprint.empty() || !hooks.fingerprint) {
    hooks.fingerprint = [file = o.fingerprint] { return RecordFingerprint(file); };
  }
  return RunClusterCommand(c, g, hooks);
}

std::string Fmt2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%5.2f", v);
  return b;
}

// `compat run --soak`: the cases round after round for the duration (compat/soak.h); prints each
// case's spread and what the soak itself cost.
Result<int> RunSoakSuite(const RunOptions& o, const GlobalOptions& g, SuiteRunOptions run,
                         GpuMonitor* gpu) {
  CUTOVER_ASSIGN_OR_RETURN(std::chrono::milliseconds duration, ParseDuration(o.soak));
  SoakOptions soak{.run = std::move(run), .duration = duration, .reps_per_round = o.reps};
  RealFileSystem fs("/");
  soak.fs = &fs;
  soak.gpu = gpu;
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, ProgressOptionsFromGlobal(g));
  Progress progress(std::move(popts), "compat soak", 0, "rounds");
  progress.StartTimer();
  Result<SoakResult> ran = RunSoak(soak, [&progress](const SoakRound& r) {
    if (r.planned > 0) progress.SetTotal(static_cast<uint64_t>(r.planned));
    char note[256];
    std::snprintf(note, sizeof note, "spread: CV median %.1f%%, worst %.1f%% (%s)",
                  100 * r.median_cv, 100 * r.worst_cv, r.worst_case.c_str());
    progress.SetNote(note);
    progress.Add(1);
  });
  progress.Finish(ran.ok() ? Status::Ok() : ran.status());
  if (!ran.ok()) return ran.status();
  const SoakResult& done = *ran;
  std::string table;
  char line[320];
  for (const CaseResult& r : done.record.cases) {
    if (r.status != "ok") {
      std::snprintf(line, sizeof line, "%-58s %s (%s)\n", r.id.c_str(), r.status.c_str(),
                    r.error.c_str());
    } else {
      const Spread sp = ComputeSpread(r.timing.reps_s);
      std::snprintf(line, sizeof line,
                    "%-58s %10.4f ms  %5d reps  CV %5.2f%%  p99/p50 %s  max/min %.2f\n",
                    r.id.c_str(), r.timing.median_s * 1e3, sp.reps, 100 * sp.cv,
                    sp.assessed ? Fmt2(sp.Tail()).c_str() : "  -  ", sp.max_over_min);
    }
    table += line;
  }
  const double overhead = done.OverheadS();
  std::snprintf(line, sizeof line,
                "soak: %d rounds in %.1f s (round 0, the ordinary run, %.1f s; then a round "
                "every %.2f s), timed %.1f s, planned idle %.1f s, soak overhead %.2f s (%.2f%% "
                "of the wall time)\n",
                done.rounds, done.wall_s, done.prepare_s, done.interval_s, done.timed_s,
                done.idle_s, overhead, done.wall_s > 0 ? 100 * overhead / done.wall_s : 0.0);
  table += line;
  table += std::to_string(done.record.cases.size()) + " cases written to " + o.record + "\n";
  nlohmann::json summary = {{"record", o.record},
                            {"cases", done.record.cases.size()},
                            {"rounds", done.rounds},
                            {"wall_s", done.wall_s},
                            {"prepare_s", done.prepare_s},
                            {"timed_s", done.timed_s},
                            {"idle_s", done.idle_s},
                            {"interval_s", done.interval_s},
                            {"overhead_s", overhead},
                            {"overhead_share", done.wall_s > 0 ? overhead / done.wall_s : 0.0}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, summary, table));
  return 0;
}

// The text of a finished run: the calibration, one line per case, what ran each case (cpu) or
// the device (cuda).
std::string RunTable(const CompatRecord& rec, bool cuda_backend) {
  std::string table;
  if (rec.calibration.measured) {
    char line[256];
    const Calibration& k = rec.calibration;
    std::snprintf(line, sizeof(line), "calibration: copy %.2f GB/s, fp32 GEMM %.2f GFLOP/s",
                  k.copy_gbps, k.gemm_gflops);
    table += line;
    if (!k.gemm_implementation.empty()) table += " (" + k.gemm_implementation + ")";
    if (k.gemm_bf16_gflops > 0) {
      std::snprintf(line, sizeof(line), ", bf16 GEMM %.2f GFLOP/s (tensor-core dtypes)",
                    k.gemm_bf16_gflops);
      table += line;
    }
    std::snprintf(line, sizeof(line),
                  " (%.2f s); rates below are also given as a fraction of these\n", k.seconds);
    table += line;
  }
  for (const CaseResult& r : rec.cases) {
    char line[256];
    if (r.status == "ok") {
      std::snprintf(line, sizeof(line), "%-58s %10.4f ms %10.2f %-7s %5.1f%%%s\n", r.id.c_str(),
                    r.timing.median_s * 1e3, r.timing.rate, r.timing.rate_unit.c_str(),
                    r.timing.fraction_of_ceiling * 100,
                    r.deterministic ? "" : "  NOT deterministic");
    } else {
      std::snprintf(line, sizeof(line), "%-58s %s (%s)\n", r.id.c_str(), r.status.c_str(),
                    r.error.c_str());
    }
    table += line;
  }
  if (!cuda_backend) table += ImplementationSummary(rec);
  if (cuda_backend && rec.device.value("device_count", 0) == 1) {
    for (const CaseResult& r : rec.cases) {
      if (r.status == "ok" && IsCollectiveOp(r.spec.op)) {
        table +=
            "collectives ran on 1 device: their GB/s is the algorithm bandwidth; multi-GPU "
            "behaviour was not measured\n";
        break;
      }
    }
  }
  if (cuda_backend) {
    const nlohmann::json& d = rec.device;
    table = "device: " + d.value("name", std::string("?")) + ", " +
            std::to_string(d.value("sm_count", 0)) + " SMs, compute capability " +
            d.value("compute_capability", std::string("?")) + "\n" + table;
  }
  return table;
}

Result<int> RunSuite(const RunOptions& o, const GlobalOptions& g,
                     const ClusterNodeHooks& node_hooks = {}) {
  if (o.suite == "cluster") return RunCluster(o, g, node_hooks);
  if (!o.soak.empty() && o.resume) {
    return Status::InvalidArgument("compat run: --soak and --resume cannot be used together");
  }
  if (!o.soak.empty()) {
    Result<std::chrono::milliseconds> d = ParseDuration(o.soak);
    if (!d.ok()) return Status::InvalidArgument("compat run: --soak: " + d.status().message());
    if (*d < std::chrono::seconds(1)) {
      return Status::InvalidArgument("compat run: --soak " + o.soak +
                                     ": the soak needs at least 1s");
    }
  }
  const bool cuda_backend = o.backend == "cuda";
  const bool reference_only = o.backend == "reference";
  if (cuda_backend && !o.dump.empty()) {
    return Status::InvalidArgument(
        "compat run: --dump applies to the cpu and reference backends (use `compat dump` for "
        "a cuda case's inputs)");
  }
  if (cuda_backend && o.accumulate != "fp32") {
    return Status::InvalidArgument("compat run: --accumulate fp64 applies to the cpu backend only");
  }
  CUTOVER_ASSIGN_OR_RETURN(Suite suite, ParseSuite(o.suite));
  CUTOVER_ASSIGN_OR_RETURN(std::vector<CaseSpec> cases, SuiteCases(suite, o.ops));
  SuiteRunOptions run;
  run.record_path = o.record;
  run.resume = o.resume;
  run.cases = cases;
  CompatRecord& rec = run.header;
  rec.backend = o.backend;
  rec.suite = o.suite;
  rec.accumulate = o.accumulate;
  rec.threads = cuda_backend ? 0 : o.threads;
  rec.build_type = BuildType();
  const std::optional<Calibration> held_calibration = HeldCalibration(o.record, o.resume);
  const bool keep_calibration = held_calibration.has_value();
  std::optional<LoadedBackend> cuda;
  if (cuda_backend) {
    CUTOVER_ASSIGN_OR_RETURN(LoadedBackend opened, OpenCuda(o.device));
    cuda.emplace(std::move(opened));
    std::optional<BackendCalibration> cal;
    if (!keep_calibration) {
      const auto t0 = std::chrono::steady_clock::now();
      CUTOVER_ASSIGN_OR_RETURN(cal, cuda->Calibrate(o.device));
      rec.calibration = CalibrationFromBackend(
          *cal, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    CUTOVER_ASSIGN_OR_RETURN(rec.device, DeviceRecordInfo(*cuda, o.device, cal ? &*cal : nullptr));
    // The plugin runs fp32 GEMM and convolution with TF32 off (only tf32 cases use it).
    rec.tf32_allowed = 0;
    rec.sm_count = rec.device.value("sm_count", -1);
    DeviceRunConfig dcfg;
    dcfg.device = o.device;
    dcfg.device_count = cuda->DeviceCount();
    dcfg.warmup = o.warmup;
    dcfg.reps = o.reps;
    dcfg.calibration = keep_calibration ? *held_calibration : rec.calibration;
    const CutoverCompatPlugin* table = &cuda->table();
    run.run_case = [table, dcfg](const OpDescriptor& op, const CaseSpec& c) {
      return RunDeviceCase(*table, op, c, dcfg);
    };
  }
  rec.created_at = NowRfc3339Utc();
  rec.cutover_version = std::string(CutoverVersion());
  CUTOVER_ASSIGN_OR_RETURN(rec.fingerprint, RecordFingerprint(o.fingerprint));
  run.config.cpu.threads = o.threads;
  run.config.cpu.fp64_accumulate = o.accumulate == "fp64";
  run.config.reps = o.reps;
  run.config.reference_only = reference_only;
  run.config.dump_dir = o.dump;
  if (!cuda_backend && !keep_calibration) {
    rec.calibration = CalibrateCpu(run.config.cpu, reference_only);
  }
  if (!o.soak.empty()) {
    // The GPU beside the timings (cuda): NVML for the device the cases run on, found by its PCI
    // bus id. Without NVML the soak still runs, its GPU fields not measured.
    std::unique_ptr<GpuMonitor> gpu;
    if (cuda) {
      Result<BackendDevice> dev = cuda->Device(o.device);
      Result<std::unique_ptr<GpuMonitor>> nvml =
          dev.ok() ? OpenNvmlMonitor(dev->pci_bus_id)
                   : Result<std::unique_ptr<GpuMonitor>>(dev.status());
      if (nvml.ok()) {
        gpu = std::move(*nvml);
      } else if (!g.quiet) {
        std::fprintf(stderr, "cutover: the GPU is not sampled during the soak: %s\n",
                     nvml.status().message().c_str());
      }
    }
    return RunSoakSuite(o, g, std::move(run), gpu.get());
  }
  CUTOVER_ASSIGN_OR_RETURN(ProgressOptions popts, ProgressOptionsFromGlobal(g));
  Progress progress(std::move(popts), "compat run", cases.size(), "cases");
  progress.StartTimer();
  Result<SuiteRunResult> ran = RunSuiteToRecord(run, [&progress] { progress.Add(1); });
  progress.Finish(ran.ok() ? Status::Ok() : ran.status());
  if (!ran.ok()) return ran.status();
  const SuiteRunResult& done = *ran;
  std::string table = RunTable(done.record, cuda_backend);
  if (!o.dump.empty()) {
    table += "cases dumped to " + o.dump + " (replay them in PyTorch: python3 " + o.dump +
             "/replay.py)\n";
  }
  table += std::to_string(done.record.cases.size()) + " cases written to " + o.record;
  if (o.resume) {
    table += " (" + std::to_string(done.kept) + " kept from the record, " +
             std::to_string(done.ran) + " run now)";
  }
  table += "\n";
  nlohmann::json summary = {{"record", o.record},
                            {"cases", done.record.cases.size()},
                            {"kept", done.kept},
                            {"ran", done.ran}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, summary, table));
  return 0;
}

Result<int> RunDump(const DumpOptions& o, const GlobalOptions& g) {
  std::vector<CaseSpec> specs;
  for (const std::string& id : o.ids) {
    CUTOVER_ASSIGN_OR_RETURN(CaseSpec spec, ParseCaseId(id));
    if (!FindOp(spec.op)->on_cpu) {
      return Status::InvalidArgument("compat dump: " + id +
                                     ": the op has no inputs on the host (GPU only)");
    }
    specs.push_back(std::move(spec));
  }
  CUTOVER_RETURN_IF_ERROR(DumpCases(o.dir, specs, kDefaultSamples));
  std::string table;
  for (const CaseSpec& s : specs) table += o.dir + "/" + CaseDumpName(s) + "\n";
  table += std::to_string(specs.size()) +
           " cases dumped (inputs and truth; replay them in "
           "PyTorch: python3 " +
           o.dir + "/replay.py)\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, {{"dir", o.dir}, {"cases", o.ids}}, table));
  return 0;
}

Result<int> RunCompare(const CompareOptions& o, const GlobalOptions& g) {
  CUTOVER_ASSIGN_OR_RETURN(std::optional<int> cluster,
                           MaybeCompareCluster(o.source, o.target, o.junit, g));
  if (cluster) return *cluster;
  CUTOVER_ASSIGN_OR_RETURN(CompatRecord src, LoadRecord(o.source));
  CUTOVER_ASSIGN_OR_RETURN(CompatRecord tgt, LoadRecord(o.target));
  CUTOVER_RETURN_IF_ERROR(CheckComparable(src, tgt, o.source, o.target));
  Comparison c = CompareRecords(src, tgt);
  c.fail_on_slower = o.fail_on_slower;
  if (!o.junit.empty()) CUTOVER_RETURN_IF_ERROR(ComparisonJunit(c).WriteFile(o.junit));
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, ComparisonToJson(c), ComparisonTable(c)));
  return c.failed() ? 1 : 0;
}

Result<int> RunList(const GlobalOptions& g) {
  std::string table =
      "op                 dtypes                                layouts      shape                 "
      "      cpu  description\n";
  nlohmann::json ops = nlohmann::json::array();
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  for (const OpDescriptor& d : OpRegistry()) {
    char line[512];
    std::snprintf(line, sizeof(line), "%-18s %-37s %-12s %-31s %-4s %s\n", d.name.c_str(),
                  join(d.dtypes).c_str(), join(d.layouts).c_str(), d.shape_meaning.c_str(),
                  d.on_cpu ? "yes" : "n/a", d.description.c_str());
    table += line;
    nlohmann::json suites = nlohmann::json::object();
    for (Suite s : {Suite::kQuick, Suite::kStandard, Suite::kFull}) {
      Result<std::vector<CaseSpec>> cases = SuiteCases(s, {d.name});
      nlohmann::json ids = nlohmann::json::array();
      if (cases.ok()) {
        for (const CaseSpec& c : *cases) ids.push_back(c.Id());
      }
      suites[std::string(SuiteName(s))] = ids;
    }
    ops.push_back({{"name", d.name},
                   {"dtypes", d.dtypes},
                   {"layouts", d.layouts},
                   {"shape", d.shape_meaning},
                   {"quick", d.quick},
                   {"standard", d.standard},
                   {"full", d.full},
                   {"cases", suites},
                   {"cpu", d.on_cpu},
                   {"description", d.description}});
  }
  CUTOVER_ASSIGN_OR_RETURN(std::vector<CaseSpec> quick, SuiteCases(Suite::kQuick, {}));
  table += "\nquick suite (" + std::to_string(quick.size()) + " cases):\n";
  for (const CaseSpec& c : quick) {
    const OpDescriptor* d = FindOp(c.op);
    table += "  " + c.Id() + (d->on_cpu ? "" : "  (n/a on cpu)") + "\n";
  }
  table += "suites: quick, standard, full (cutover compat list --json gives every case ID)\n";
  CUTOVER_RETURN_IF_ERROR(EmitResult(g,
                                     {{"schema", "cutover.compat-list/1"},
                                      {"ops", ops},
                                      {"suites", {"quick", "standard", "full"}}},
                                     table));
  return 0;
}

std::string FormatDevice(const BackendDevice& d) {
  char mem[32];
  std::snprintf(mem, sizeof(mem), "%.1f GiB",
                static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0));
  return "  device " + std::to_string(d.ordinal) + ": " + d.name + ", compute capability " +
         std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " + mem + ", " +
         std::to_string(d.sm_count) + " SMs, PCI " +
         (d.pci_bus_id.empty() ? std::string("unknown") : d.pci_bus_id) + "\n";
}

Result<int> RunCalibrate(int device, const GlobalOptions& g) {
  CUTOVER_ASSIGN_OR_RETURN(LoadedBackend cuda, OpenCuda(device));
  CUTOVER_ASSIGN_OR_RETURN(BackendCalibration cal, cuda.Calibrate(device));
  CUTOVER_ASSIGN_OR_RETURN(nlohmann::json info, DeviceRecordInfo(cuda, device, &cal));
  std::string out = "CUDA backend: " + cuda.path() + "\n";
  out += "  build: " + cuda.build_info() + "\n";
  out += "  libraries: " + info["libraries"]["summary"].get<std::string>() + "\n";
  for (int i = 0; i < cuda.DeviceCount(); ++i) {
    CUTOVER_ASSIGN_OR_RETURN(BackendDevice d, cuda.Device(i));
    out += FormatDevice(d);
  }
  char line[512];
  std::snprintf(line, sizeof(line),
                "device %d: copy kernel %.1f GB/s, cudaMemcpy %.1f GB/s (read + write, %.0f MiB), "
                "gemm bf16 %d^3 %.1f TFLOP/s, gemm fp32 4096^3 %.1f TFLOP/s\n",
                device, cal.copy_kernel_gbps, cal.memcpy_gbps,
                static_cast<double>(cal.copy_bytes) / (1 << 20), cal.gemm_size,
                cal.gemm_bf16_tflops, cal.gemm_fp32_tflops);
  out += line;
  nlohmann::json doc = {{"schema", "cutover.compat-calibration/1"}, {"device", info}};
  CUTOVER_RETURN_IF_ERROR(EmitResult(g, doc, out));
  return 0;
}

}  // namespace

void AddCompatCommand(CLI::App& root, CommandContext& ctx, ClusterNodeHooks node_hooks) {
  CLI::App* cmd = root.add_subcommand(
      "compat", "Run framework kernels on source and target and compare numerics and speed");
  cmd->require_subcommand(1);
  cmd->footer(kExitCodesHelp);
  CLI::App* list = cmd->add_subcommand("list", "List the ops, dtypes and suites");
  SetCommand(list, ctx, [&ctx]() { return RunList(ctx.global); });

  auto opts = std::make_shared<RunOptions>();
  CLI::App* run = cmd->add_subcommand("run", kRunHelp);
  run->add_option("--backend", opts->backend,
                  "cpu (default: OpenBLAS and oneDNN where built in), reference (cutover's own "
                  "kernels only) or cuda")
      ->check(CLI::IsMember({"cuda", "cpu", "reference"}));
  run->add_option("--suite", opts->suite,
                  "quick (default), standard, full, or cluster (collectives across the ranks of "
                  "an MPI job: start it with mpirun or srun --mpi=pmix; OpenMPI 4)")
      ->check(CLI::IsMember({"quick", "standard", "full", "cluster"}));
  run->add_option("--ops", opts->ops, "only these ops (comma-separated)")->delimiter(',');
  run->add_option("--record", opts->record, "write the record to this file")
      ->type_name("FILE")
      ->required();
  run->add_option("--accumulate", opts->accumulate, "fp32 (default) or fp64 accumulation (cpu)")
      ->check(CLI::IsMember({"fp32", "fp64"}));
  run->add_option("--fingerprint", opts->fingerprint,
                  "embed this fingerprint (from cutover probe collect) instead of a minimal one");
  run->add_option("--reps", opts->reps, "timed repetitions per case (default 5)")
      ->check(IntRange(1, 1000));
  run->add_option("--threads", opts->threads,
                  "cpu threads for our pool, OpenBLAS and oneDNN alike (default 2)")
      ->check(IntRange(1, 1024));
  run->add_option("--warmup", opts->warmup, "untimed runs before the timed ones (cuda, default 3)")
      ->check(IntRange(0, 1000));
  run->add_option("--device", opts->device, "the CUDA device ordinal (cuda, default 0)")
      ->check(IntRange(0, 1023));
  run->add_flag("--resume", opts->resume,
                "keep the cases an existing --record of the same backend, suite, accumulate, "
                "threads and op table holds and run only the rest (the record is rewritten "
                "atomically after every case, so a killed run loses at most the case in flight)");
  run->add_option("-b,--min-bytes", opts->min_bytes, "cluster: smallest message (default 8)");
  run->add_option("-e,--max-bytes", opts->max_bytes,
                  "cluster: largest message (default 64MiB on cpu, 1GiB on cuda)");
  run->add_option("-f,--step-factor", opts->step_factor,
                  "cluster: message size multiplier between steps (default 2)")
      ->check(IntRange(2, 1024));
  run->add_option("--pair-bytes", opts->pair_bytes,
                  "cluster: message of the pairwise bandwidth matrix (default 4MiB)");
  run->add_option("--pair-reps", opts->pair_reps,
                  "cluster: samples per direction and pass in the pairwise matrix (default 3)")
      ->check(IntRange(1, 1000));
  run->add_option("--passes", opts->passes,
                  "cluster: passes over the pairwise schedule; a slow node or link is named "
                  "when more than half name it (default 3, 0: no matrix)")
      ->check(IntRange(0, 1000));
  run->add_option("--fabric", opts->fabric, "cluster: the fabric, recorded (e.g. ib-ndr-400)");
  run->add_option("--timeout", opts->timeout,
                  "cluster, cuda: the watchdog; a wait on the NCCL communicator longer than this "
                  "aborts it (ncclCommAbort) and ends the job, exit 3 (default 10m)");
  run->add_option("--dump", opts->dump,
                  "also write each case's inputs, output and float64 truth (.npy) and a "
                  "replay.py that runs them in PyTorch to this directory (cpu, reference)");
  run->add_option("--soak", opts->soak,
                  "repeat the cases round after round for DURATION (30s, 10m, 2h), spreading "
                  "each case's repetitions (--reps per round) over the whole period, and record "
                  "beside them the host's CPU steal time, this process's involuntary context "
                  "switches and the CPU frequency; compat compare then judges stability (a p99 "
                  "and a verdict need at least 30 repetitions a side)")
      ->type_name("DURATION");
  SetCommand(run, ctx, [opts, &ctx, node_hooks]() -> Result<int> {
    return RunSuite(*opts, ctx.global, node_hooks);
  });

  auto dopts = std::make_shared<DumpOptions>();
  CLI::App* dump = cmd->add_subcommand(
      "dump",
      "Write cases' inputs and float64 truth at the sampled positions (.npy, no backend run) "
      "and a replay.py that runs them in PyTorch on the CPU or CUDA (docs/compat.md "
      "\"Reproduce a case in PyTorch\")");
  dump->add_option("CASE_ID", dopts->ids, "case IDs as a record or `compat list --json` gives them")
      ->required();
  dump->add_option("--dir", dopts->dir, "the directory to write")->required();
  SetCommand(dump, ctx, [dopts, &ctx]() -> Result<int> { return RunDump(*dopts, ctx.global); });

  auto device = std::make_shared<int>(0);
  CLI::App* calibrate = cmd->add_subcommand("calibrate", kCalibrateHelp);
  calibrate->add_option("--device", *device, "the CUDA device ordinal (default 0)")
      ->check(IntRange(0, 1023));
  SetCommand(calibrate, ctx, [device, &ctx]() { return RunCalibrate(*device, ctx.global); });

  auto copts = std::make_shared<CompareOptions>();
  CLI::App* compare = cmd->add_subcommand(
      "compare",
      "Compare two records: a verdict per case and a summary; exit 1 on any regression or "
      "broken case (and with --fail-on-slower on any slower case), 2 on an unreadable, "
      "truncated or schema-invalid record or on records of different op tables or case "
      "definitions");
  compare->add_option("SOURCE", copts->source, "the source host's record")->required();
  compare->add_option("TARGET", copts->target, "the target host's record")->required();
  compare->add_option("--junit", copts->junit, "also write the verdicts as JUnit XML");
  compare->add_flag("--fail-on-slower", copts->fail_on_slower,
                    "exit 1 when a case is slower: the 95% interval of the speed ratio (target / "
                    "source) below 1 and the ratio more than 5% below it (speed never fails "
                    "without this flag)");
  SetCommand(compare, ctx, [copts, &ctx]() { return RunCompare(*copts, ctx.global); });
}

}  // namespace cutover
