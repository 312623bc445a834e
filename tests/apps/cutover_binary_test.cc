// Tests of the built `cutover` binary: it links no NVIDIA library, starts in milliseconds, lists
// its tools, and `compat run --backend cuda` loads the plugin only when asked.
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compat/backend_loader.h"
#include "compat/op.h"
#include "tests/harness/test_env.h"

extern char** environ;

namespace cutover {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCutover[] = CUTOVER_TEST_CUTOVER_BIN;

// The DT_NEEDED entries of a 64-bit little-endian ELF file, read from its section headers.
Result<std::vector<std::string>> ElfNeeded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < sizeof(Elf64_Ehdr) || std::memcmp(data.data(), ELFMAG, SELFMAG) != 0 ||
      data[EI_CLASS] != ELFCLASS64) {
    return Status::InvalidArgument(path + ": not a 64-bit ELF file");
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, data.data(), sizeof(eh));
  auto section = [&](size_t i) {
    Elf64_Shdr sh{};
    size_t off = eh.e_shoff + i * eh.e_shentsize;
    if (off + sizeof(sh) <= data.size()) std::memcpy(&sh, data.data() + off, sizeof(sh));
    return sh;
  };
  std::vector<std::string> needed;
  bool found = false;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr dyn = section(i);
    if (dyn.sh_type != SHT_DYNAMIC) continue;
    found = true;
    Elf64_Shdr str = section(dyn.sh_link);
    for (size_t off = dyn.sh_offset; off + sizeof(Elf64_Dyn) <= dyn.sh_offset + dyn.sh_size;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, data.data() + off, sizeof(d));
      if (d.d_tag == DT_NULL) break;
      if (d.d_tag != DT_NEEDED) continue;
      size_t name = str.sh_offset + d.d_un.d_val;
      if (name >= data.size()) return Status::Corruption(path + ": bad DT_NEEDED offset");
      needed.emplace_back(data.c_str() + name);
    }
  }
  if (!found) return Status::InvalidArgument(path + ": no dynamic section");
  return needed;
}

bool IsNvidiaLibrary(const std::string& soname) {
  for (const char* prefix :
       {"libcuda", "libcudart", "libcublas", "libcudnn", "libnccl", "libnvidia-", "libnvrtc",
        "libnvml", "libcufft", "libcurand", "libcusolver", "libcusparse", "libnvJitLink"}) {
    if (soname.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

struct ProcResult {
  int exit_code = -1;
  std::string out, err;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // user + system
  long max_rss_kib = 0;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs the cutover binary with `args` and extra environment entries ("NAME=value"; "NAME=" to
// remove NAME), capturing stdout and stderr separately.
ProcResult RunCutover(const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {}) {
  testing::TempDir tmp;
  std::string out_path = tmp.Join("out"), err_path = tmp.Join("err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_s = {kCutover};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool overridden = std::any_of(env.begin(), env.end(), [&](const std::string& x) {
      return x.substr(0, x.find('=')) == name;
    });
    if (!overridden) env_s.push_back(entry);
  }
  for (const std::string& x : env) {
    if (x.back() != '=') env_s.push_back(x);
  }
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  ProcResult run;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = -1;
  if (posix_spawn(&pid, kCutover, &fa, nullptr, argv.data(), envp.data()) != 0) {
    ADD_FAILURE() << "posix_spawn " << kCutover << " failed";
    posix_spawn_file_actions_destroy(&fa);
    return run;
  }
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  posix_spawn_file_actions_destroy(&fa);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.max_rss_kib = ru.ru_maxrss;
  run.cpu_seconds =
      ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  run.out = Slurp(out_path);
  run.err = Slurp(err_path);
  return run;
}

int Lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(CutoverBinary, LinksNoNvidiaLibrary) {
  Result<std::vector<std::string>> needed = ElfNeeded(kCutover);
  ASSERT_TRUE(needed.ok()) << needed.status().ToString();
  // The parser works: libc is always there.
  EXPECT_THAT(*needed, ::testing::Contains("libc.so.6"));
  for (const std::string& n : *needed) EXPECT_FALSE(IsNvidiaLibrary(n)) << n;
}

#ifdef CUTOVER_HAVE_CUDA_PLUGIN
TEST(CutoverBinary, TheCudaPluginIsWhereTheNvidiaLibrariesAre) {
  // The same check flags the plugin, so it can fail.
  Result<std::vector<std::string>> needed = ElfNeeded(CUTOVER_TEST_CUDA_PLUGIN);
  ASSERT_TRUE(needed.ok()) << needed.status().ToString();
  int nvidia = 0;
  for (const std::string& n : *needed) nvidia += IsNvidiaLibrary(n) ? 1 : 0;
  EXPECT_GE(nvidia, 4) << ::testing::PrintToString(*needed);
  EXPECT_THAT(*needed, ::testing::Contains(::testing::StartsWith("libcudnn.so")));
  EXPECT_THAT(*needed, ::testing::Contains(::testing::StartsWith("libnccl.so")));
}
#endif

// The 1-minute load average per CPU: above 1, wall-clock times measure the scheduler.
double LoadPerCpu() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 ? load / cpus : load;
}

TEST(CutoverBinary, VersionStartsInUnder50Milliseconds) {
  if (testing::kAddressSanitizer) {
    GTEST_SKIP() << "start-up time is a figure of the uninstrumented build; this one has ASan";
  }
  std::vector<double> wall, cpu;
  for (int i = 0; i < 5; ++i) {
    ProcResult r = RunCutover({"--version"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, ::testing::StartsWith("cutover "));
    wall.push_back(r.seconds);
    cpu.push_back(r.cpu_seconds);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  RecordProperty("version_median_wall_ms", std::to_string(wall[2] * 1000));
  RecordProperty("version_median_cpu_ms", std::to_string(cpu[2] * 1000));
  // What the binary itself costs, whatever else the machine is doing.
  EXPECT_LT(cpu[2], 0.050) << "median CPU time of 5 runs of cutover --version";
  double load = LoadPerCpu();
  if (load < 1.0) {
    EXPECT_LT(wall[2], 0.050) << "median wall time of 5 runs of cutover --version";
  } else {
    // An overloaded machine (shared CI runner) still must not see anything like a CUDA init.
    EXPECT_LT(wall[2], 0.500) << "median wall time of 5 runs, load " << load << " per CPU";
  }
}

TEST(CutoverBinary, HelpListsEveryTool) {
  ProcResult r = RunCutover({"--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* tool : {"probe", "compat", "datasync", "canary", "assess"}) {
    EXPECT_THAT(r.out, ::testing::ContainsRegex(std::string("\n  ") + tool + " ")) << tool;
  }
}

TEST(CutoverBinary, CompatRunHelpIsTruthful) {
  ProcResult r = RunCutover({"compat", "run", "--help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("an op the plugin lacks is recorded as missing"));
  EXPECT_THAT(r.out, HasSubstr("--backend cpu runs every op that has a meaning on a CPU"));
  EXPECT_THAT(r.out, HasSubstr("measure the backend's copy and GEMM ceilings first"));
  EXPECT_THAT(r.out, HasSubstr("CUTOVER_CUDA_PLUGIN"));
}

TEST(CutoverBinary, CompatRunCudaOnThisHost) {
  testing::TempDir dir;
  ProcResult r = RunCutover(
      {"compat", "run", "--backend", "cuda", "--ops", "copy", "--record", dir.Join("c.rec")},
      {"CUTOVER_CUDA_PLUGIN="});
#ifdef CUTOVER_HAVE_CUDA_PLUGIN
  // The plugin is not loaded into this test process: the CUDA libraries it maps would raise the
  // memory high-water mark that later children inherit (CudaLibrariesLoadOnly... measures it).
  if (r.exit_code == 0) {  // a host with a usable GPU
    EXPECT_THAT(r.out, HasSubstr("device: "));
    EXPECT_THAT(r.out, HasSubstr("copy/fp32/"));
    return;
  }
  EXPECT_EQ(r.exit_code, 3);
  static const std::regex kReason(
      "cutover: CUDA backend: (no CUDA driver|no CUDA device|CUDA driver too old|CUDA driver "
      "unusable)[^\n]*: cudaGetDeviceCount (returned cudaError\\w+ \\([^\n]*\\)|found 0 "
      "devices)\n");
  EXPECT_TRUE(std::regex_match(r.err, kReason)) << r.err;
#else
  std::string dir_of = std::string(kCutover).substr(0, std::string(kCutover).rfind('/'));
  std::string parent = dir_of.substr(0, dir_of.rfind('/'));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "cutover: CUDA backend plugin not found: tried " + dir_of +
                       "/libcutover_compat_cuda.so, " + parent +
                       "/lib/cutover/libcutover_compat_cuda.so (set CUTOVER_CUDA_PLUGIN to its "
                       "path)\n");
#endif
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(std::filesystem::exists(dir.Join("c.rec")));
}

TEST(CutoverBinary, CompatCalibrateWithFakeDevicesPrintsThemAndTheCeilings) {
  ProcResult r = RunCutover(
      {"compat", "calibrate"},
      {std::string("CUTOVER_CUDA_PLUGIN=") + CUTOVER_TEST_PLUGIN_FAKE, "CUTOVER_FAKE_DEVICES=2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith(
                         std::string("CUDA backend: ") + CUTOVER_TEST_PLUGIN_FAKE +
                         "\n"
                         "  build: fake plugin for tests\n"
                         "  libraries: CUDA runtime 13.0, CUDA driver 13.1, cuBLAS 13.1.0, "
                         "cuBLASLt 13.1.0, cuDNN 9.19.0, NCCL 2.28.9\n"
                         "  device 0: Fake GPU 0, compute capability 9.0, 80.0 GiB, 132 SMs, PCI "
                         "0000:10:00.0\n"
                         "  device 1: Fake GPU 1, compute capability 9.0, 80.0 GiB, 132 SMs, PCI "
                         "0000:11:00.0\n"
                         "device 0: copy kernel "));
  EXPECT_THAT(r.out, HasSubstr("(read + write, 16 MiB)"));
  ProcResult bad = RunCutover(
      {"compat", "calibrate", "--device", "2"},
      {std::string("CUTOVER_CUDA_PLUGIN=") + CUTOVER_TEST_PLUGIN_FAKE, "CUTOVER_FAKE_DEVICES=2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "cutover: compat: --device 2: the CUDA backend has 2 device(s)\n");
}

TEST(CutoverBinary, CompatRunCudaWithFakePluginWritesARecordThatComparesWithCpu) {
  testing::TempDir dir;
  const std::vector<std::string> env = {
      std::string("CUTOVER_CUDA_PLUGIN=") + CUTOVER_TEST_PLUGIN_FAKE, "CUTOVER_FAKE_DEVICES=1"};
  ProcResult cuda = RunCutover({"compat", "run", "--backend", "cuda", "--ops", "copy,reduce_max",
                                "--reps", "2", "--warmup", "1", "--record", dir.Join("cuda.rec")},
                               env);
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;
  EXPECT_THAT(cuda.out,
              ::testing::StartsWith("device: Fake GPU 0, 132 SMs, compute capability 9.0\n"));
  EXPECT_THAT(cuda.out, ::testing::ContainsRegex(
                            "reduce_max/fp32/[^ ]+ +missing \\(fake: no op 'reduce_max'\\)"));
  // The record holds the device's ceilings as its calibration, TF32 off and the SM count, and
  // each ok case its share of the copy ceiling.
  nlohmann::json rec = nlohmann::json::parse(Slurp(dir.Join("cuda.rec")));
  EXPECT_EQ(rec["tf32_allowed"], false);
  EXPECT_EQ(rec["sm_count"], 132);
  ASSERT_TRUE(rec.contains("calibration")) << rec.dump();
  EXPECT_GT(rec["calibration"]["copy_gbps"].get<double>(), 0.0);
  // The fake measures no GEMM: no bf16 ceiling is written for a rate of 0.
  EXPECT_FALSE(rec["calibration"].contains("gemm_bf16_gflops")) << rec["calibration"].dump();
  for (const nlohmann::json& c : rec["cases"]) {
    if (c["status"] != "ok") continue;
    EXPECT_GT(c["timing"]["fraction_of_ceiling"].get<double>(), 0.0) << c["id"];
  }
  ProcResult cpu = RunCutover({"compat", "run", "--ops", "copy,reduce_max", "--reps", "2",
                               "--record", dir.Join("cpu.rec")});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ProcResult cmp =
      RunCutover({"compat", "compare", dir.Join("cpu.rec"), dir.Join("cuda.rec"), "--json"});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.err;
  nlohmann::json doc = nlohmann::json::parse(cmp.out);
  std::map<std::string, std::string> verdicts;
  for (const nlohmann::json& c : doc["cases"]) verdicts[c["op"]] = c["verdict"];
  EXPECT_EQ(verdicts["copy"], "identical") << cmp.out;
  EXPECT_EQ(verdicts["reduce_max"], "missing") << cmp.out;
  // The cpu backend refuses a cuda-only option value rather than ignoring it.
  ProcResult fp64 = RunCutover(
      {"compat", "run", "--backend", "cuda", "--accumulate", "fp64", "--record", dir.Join("x.rec")},
      env);
  EXPECT_EQ(fp64.exit_code, 2);
  EXPECT_EQ(fp64.err, "cutover: compat run: --accumulate fp64 applies to the cpu backend only\n");
}

TEST(CutoverBinary, CompatRunWithFakeNoDriverExits3) {
  testing::TempDir dir;
  ProcResult r = RunCutover(
      {"compat", "run", "--backend", "cuda", "--record", dir.Join("c.rec")},
      {std::string("CUTOVER_CUDA_PLUGIN=") + CUTOVER_TEST_PLUGIN_FAKE, "CUTOVER_FAKE_DEVICES="});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, "cutover: CUDA backend: no CUDA driver: the fake plugin has none\n");
}

TEST(CutoverBinary, CompatRunRefusesPluginOfAnotherAbi) {
  testing::TempDir dir;
  ProcResult r = RunCutover({"compat", "run", "--backend", "cuda", "--record", dir.Join("c.rec")},
                            {std::string("CUTOVER_CUDA_PLUGIN=") + CUTOVER_TEST_PLUGIN_ABI999});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.err, std::string("cutover: CUDA backend plugin ") + CUTOVER_TEST_PLUGIN_ABI999 +
                       " refused: plugin ABI 999, this cutover speaks 2\n");
}

TEST(CutoverBinary, CompatRunCpuNeedsARecord) {
  ProcResult r = RunCutover({"compat", "run", "--backend", "cpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cutover: --record is required\nRun with --help for usage.\n");
}

TEST(CutoverBinary, CompatRunKilledResumesAndCompareExitCodes) {
  testing::TempDir dir;
  const std::vector<std::string> run = {"compat", "run", "--ops",   "softmax,reduce_max,h2d_copy",
                                        "--reps", "2",   "--record"};
  auto with_record = [&](const std::string& rec, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = run;
    args.push_back(dir.Join(rec));
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ProcResult whole = RunCutover(with_record("whole.rec"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ProcResult killed = RunCutover(with_record("part.rec"),
                                 {"CUTOVER_FAILPOINTS=compat.run.case_saved:after=1:kill"});
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  ProcResult refused = RunCutover(with_record("part.rec", {"--resume", "--accumulate", "fp64"}));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err,
              ::testing::EndsWith("cutover: compat run --resume: " + dir.Join("part.rec") +
                                  " was made with accumulate fp32, this run uses "
                                  "fp64 (use the same options or another --record)\n"));
  ProcResult resumed = RunCutover(with_record("part.rec", {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // softmax's quick cases include a stress one: 4 cases.
  EXPECT_THAT(resumed.out, HasSubstr("4 cases written to " + dir.Join("part.rec") +
                                     " (1 kept from the record, 3 run now)"));
  // The resumed run kept the killed run's calibration: one yardstick for every case.
  nlohmann::json part = nlohmann::json::parse(Slurp(dir.Join("part.rec")));
  ASSERT_TRUE(part.contains("calibration")) << resumed.out;
  EXPECT_GT(part["calibration"]["gemm_gflops"].get<double>(), 0);
  char kept[64];
  std::snprintf(kept, sizeof(kept), "calibration: copy %.2f GB/s",
                part["calibration"]["copy_gbps"].get<double>());
  EXPECT_THAT(resumed.out, HasSubstr(kept));
  // The same numerics as the uninterrupted run (speed is not judged into the exit code).
  ProcResult same = RunCutover({"compat", "compare", dir.Join("whole.rec"), dir.Join("part.rec")});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_THAT(same.out, HasSubstr("4 cases: 3 identical 1 n/a"));

  // Steady timings on the source, twice as long on the target: slower, and failing only with
  // --fail-on-slower.
  nlohmann::json doc = nlohmann::json::parse(Slurp(dir.Join("whole.rec")));
  auto retime = [&doc](double factor) {
    for (nlohmann::json& c : doc["cases"]) {
      if (c["status"] != "ok") continue;
      const double t = c["timing"]["median_s"].get<double>() * factor;
      c["timing"]["reps_s"] = {t, t, t};
      for (const char* k : {"median_s", "p10_s", "p90_s"}) c["timing"][k] = t;
    }
  };
  retime(1);
  std::ofstream(dir.Join("steady.rec")) << doc.dump();
  retime(2);
  std::ofstream(dir.Join("slow.rec")) << doc.dump();
  const std::vector<std::string> compare = {"compat", "compare", dir.Join("steady.rec"),
                                            dir.Join("slow.rec")};
  EXPECT_EQ(RunCutover(compare).exit_code, 0);
  std::vector<std::string> gate = compare;
  gate.push_back("--fail-on-slower");
  ProcResult slow = RunCutover(gate);
  EXPECT_EQ(slow.exit_code, 1) << slow.out;
  EXPECT_THAT(slow.out, HasSubstr("4 cases: 3 identical 1 n/a; 3 slower (failing)"));

  doc["op_table_version"] = kOpTableVersion + 1;
  std::ofstream(dir.Join("v2.rec")) << doc.dump();
  ProcResult other = RunCutover({"compat", "compare", dir.Join("whole.rec"), dir.Join("v2.rec")});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_EQ(other.err, "cutover: compat compare: " + dir.Join("whole.rec") +
                           " has op table version " + std::to_string(kOpTableVersion) + ", " +
                           dir.Join("v2.rec") + " " + std::to_string(kOpTableVersion + 1) +
                           ": cases of different op tables are not comparable (record both "
                           "with the same cutover)\n");

  // A timing that is no measurement is refused when the record is read: exit 2, one line.
  doc["op_table_version"] = kOpTableVersion;
  doc["cases"][0]["timing"]["reps_s"][1] = 1e308;
  std::ofstream(dir.Join("huge.rec")) << doc.dump();
  ProcResult huge = RunCutover({"compat", "compare", dir.Join("whole.rec"), dir.Join("huge.rec")});
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_EQ(huge.err, "cutover: " + dir.Join("huge.rec") +
                          ": /cases/0: /timing/reps_s/1: expected a time in seconds above 0 and "
                          "at most 86400, got 1e+308\n");
}

TEST(CutoverBinary, ProbeFleetAndHealthExitCodes) {
  testing::TempDir dir;
  const std::string fixtures = testing::SourceDir() + "/tests/fixtures/hosts/";
  ASSERT_EQ(::mkdir(dir.Join("fleet").c_str(), 0755), 0);
  ProcResult a = RunCutover({"probe", "collect", "--root", fixtures + "h100-cuda12.4", "--out",
                             dir.Join("fleet/a.json")});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ProcResult b = RunCutover({"probe", "collect", "--root", fixtures + "a100-cuda11.8", "--out",
                             dir.Join("fleet/b.json")});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // Two different stacks: exit 1, the table names the minority's differences.
  ProcResult f = RunCutover({"probe", "fleet", dir.Join("fleet")});
  EXPECT_EQ(f.exit_code, 1) << f.err;
  EXPECT_THAT(f.out, HasSubstr("fleet: 2 hosts, 2 stacks: NOT consistent"));
  // One host alone is consistent; a missing path is bad input.
  EXPECT_EQ(RunCutover({"probe", "fleet", dir.Join("fleet/a.json")}).exit_code, 0);
  ProcResult m = RunCutover({"probe", "fleet", dir.Join("nope")});
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_THAT(m.err, HasSubstr("no such file or directory"));

  // health: healthy without Xids; an Xid 79 in the given kernel log fails GPU 0 (exit 1).
  ProcResult h = RunCutover({"probe", "health", dir.Join("fleet/a.json")});
  EXPECT_EQ(h.exit_code, 0) << h.out << h.err;
  EXPECT_THAT(h.out, HasSubstr("Xid events not checked"));
  {
    std::ofstream log(dir.Join("kern.log"));
    log << "[ 99.1] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n";
  }
  ProcResult x = RunCutover({"probe", "health", dir.Join("fleet/a.json"), "--kernel-log",
                             dir.Join("kern.log"), "--json"});
  EXPECT_EQ(x.exit_code, 1) << x.err;
  auto doc = nlohmann::json::parse(x.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << x.out;
  EXPECT_EQ(doc["gpus"][0]["verdict"], "failed");
  EXPECT_EQ(doc["healthy"], false);

  // An image root with that kernel log: collect records the Xid on GPU 0, and health of the
  // saved fingerprint judges it without --kernel-log.
  ASSERT_EQ(testing::RunShell("cp -a " + fixtures + "h100-cuda12.4 " + dir.Join("root") +
                              " && mkdir -p " + dir.Join("root/var/log") + " && cp " +
                              dir.Join("kern.log") + " " + dir.Join("root/var/log/kern.log")),
            0);
  ProcResult c =
      RunCutover({"probe", "collect", "--root", dir.Join("root"), "--out", dir.Join("xid.json")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  ProcResult saved = RunCutover({"probe", "health", dir.Join("xid.json")});
  EXPECT_EQ(saved.exit_code, 1) << saved.out << saved.err;
  EXPECT_THAT(saved.out, HasSubstr("Xid 79: GPU has fallen off the bus"));
  EXPECT_THAT(saved.out, HasSubstr("kernel log: the fingerprint's gpus[].xid_events (collected "
                                   "from /var/log/kern.log)"));
}

// collect --deep on an image root holding the library nvcc built here: hashed into the cache
// named by XDG_CACHE_HOME (the second run hits it), never loaded.
TEST(CutoverBinary, ProbeCollectDeepOnARoot) {
  testing::TempDir dir;
  ASSERT_EQ(
      testing::RunShell("mkdir -p " + dir.Join("root/usr/lib/x86_64-linux-gnu") + " && cp " +
                        testing::SourceDir() + "/tests/fixtures/binaries/libscale-sm80-ptx90.so " +
                        dir.Join("root/usr/lib/x86_64-linux-gnu/libnccl-net-x.so")),
      0);
  const std::vector<std::string> env = {"XDG_CACHE_HOME=" + dir.Join("cache")};
  for (int run = 0; run < 2; ++run) {
    ProcResult r =
        RunCutover({"probe", "collect", "--root", dir.Join("root"), "--deep", "--json"}, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto doc = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out;
    const auto& lib = doc["libraries"][0];
    EXPECT_EQ(lib["sha256"].get<std::string>().size(), 64u);
    EXPECT_EQ(lib["cuda_archs"], nlohmann::json({"compute_90", "sm_80"}));
    EXPECT_TRUE(lib["loaded_version"].is_null());
    EXPECT_EQ(doc["collection"]["deep"]["hash_cache"],
              dir.Join("cache") + "/cutover/sha256-cache.json");
    EXPECT_EQ(doc["collection"]["deep"]["hashes_from_cache"], run);
    EXPECT_EQ(doc["collection"]["deep"]["hashes_computed"], 1 - run);
  }
}

TEST(CutoverBinary, CompatRunRejectsUnknownBackend) {
  ProcResult r = RunCutover({"compat", "run", "--backend", "rocm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--backend"));
}

#ifdef CUTOVER_HAVE_CUDA_PLUGIN
TEST(CutoverBinary, CudaLibrariesLoadOnlyInAProcessThatAskedForThem) {
  ProcResult version = RunCutover({"--version"}, {"LD_DEBUG=libs", "CUTOVER_CUDA_PLUGIN="});
  ASSERT_EQ(version.exit_code, 0);
  EXPECT_THAT(version.err, Not(HasSubstr("libcudart")));
  EXPECT_THAT(version.err, Not(HasSubstr("libcutover_compat_cuda")));
  testing::TempDir dir;
  const std::vector<std::string> cuda_run = {"compat", "run",  "--backend", "cuda",
                                             "--ops",  "copy", "--record",  dir.Join("c.rec")};
  ProcResult compat = RunCutover(cuda_run, {"LD_DEBUG=libs", "CUTOVER_CUDA_PLUGIN="});
  EXPECT_THAT(compat.err, HasSubstr("libcutover_compat_cuda.so"));
  EXPECT_THAT(compat.err, HasSubstr("libcudart.so"));
  EXPECT_THAT(compat.err, HasSubstr("libcudnn.so"));
  // And the memory that costs shows only there.
  ProcResult v2 = RunCutover({"--version"}, {"CUTOVER_CUDA_PLUGIN="});
  ProcResult c2 = RunCutover(cuda_run, {"CUTOVER_CUDA_PLUGIN="});
  RecordProperty("version_max_rss_kib", std::to_string(v2.max_rss_kib));
  RecordProperty("compat_cuda_max_rss_kib", std::to_string(c2.max_rss_kib));
  EXPECT_GT(c2.max_rss_kib, v2.max_rss_kib + 1024)
      << "--version " << v2.max_rss_kib << " KiB, compat run " << c2.max_rss_kib << " KiB";
}
#endif

}  // namespace
}  // namespace cutover
