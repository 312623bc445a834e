// `compat run --soak` against a CPU hog the test starts and stops: the test pins itself to one
// CPU, soaks a few cases quietly twice and once with a busy loop pinned (taskset) to the same
// CPU, and checks that only the hog soak is judged noisier, with involuntary context switches
// named as the cause (a local hog makes no steal time). Timing-sensitive: registered serially
// (RUN_SERIAL) and never under the sanitizers (tests/compat/CMakeLists.txt).
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "compat/compare.h"
#include "compat/soak.h"
#include "core/file_system.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

constexpr auto kSoak = std::chrono::seconds(4);

// The first CPU this process may run on, after pinning the process to it.
int PinToOneCpu() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0 ? c : -1;
  }
  return -1;
}

// A busy loop pinned to `cpu`, killed by the test (and by timeout after 60 s whatever happens).
class Hog {
 public:
  explicit Hog(int cpu) {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string c = std::to_string(cpu);
      execlp("timeout", "timeout", "60", "taskset", "-c", c.c_str(), "sh", "-c",
             "while :; do :; done", static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Hog() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);  // timeout passes it on to the loop
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// The soak's record, and its figures in *result.
CompatRecord Soak(const std::string& path, const std::vector<CaseSpec>& cases, SoakResult* result) {
  RealFileSystem fs("/");
  SoakOptions o;
  o.run.record_path = path;
  o.run.header =
      CompatRecord{.backend = "cpu", .suite = "quick", .accumulate = "fp32", .threads = 1};
  o.run.cases = cases;
  o.run.config.cpu.threads = 1;
  o.duration = kSoak;
  // Rounds longer than the schedule's 40 ms: back to back, so a hog competes for all of them.
  o.reps_per_round = 40;
  o.fs = &fs;
  Result<SoakResult> r = RunSoak(o, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  std::printf(
      "%s: %d rounds, wall %.3f s, round 0 %.3f s, timed %.3f s, planned idle %.3f s, "
      "overhead %.4f s (%.2f%% of the wall time)\n",
      path.c_str(), r->rounds, r->wall_s, r->prepare_s, r->timed_s, r->idle_s, r->OverheadS(),
      100 * r->OverheadS() / r->wall_s);
  *result = *r;
  return r->record;
}

// The soak's own cost stays small beside what it times and its planned idle.
void ExpectSmallOverhead(const SoakResult& r) {
  EXPECT_LT(r.OverheadS(), 0.05 * r.wall_s) << "wall " << r.wall_s << " round 0 " << r.prepare_s
                                            << " timed " << r.timed_s << " idle " << r.idle_s;
}

// The most a quiet soak's repetitions may spread (CV). A quiet 2-core AMD EPYC VM of this
// project gives softmax 0.03-0.28 and reduce_max 0.10-0.33; the hog gives 0.72-0.79 and 2.1-2.3.
// At the gate a hogged soak is still past compare's 1.75x for "noisier" (and the tail judges
// too), so the test keeps its meaning; above it the host is too busy to judge by.
constexpr double kQuietCv = 0.4;

// Why a soak gives no quiet baseline ("" when it does): too few rounds, or a case whose
// repetitions spread by more than a quiet CPU's.
std::string TooBusy(const CompatRecord& record, const SoakResult& figures) {
  if (figures.rounds < kStabilityMinReps) {
    return std::to_string(figures.rounds) + " rounds in a 4 s soak; ";
  }
  std::string why;
  for (const CaseResult& c : record.cases) {
    const double cv = ComputeSpread(c.timing.reps_s).cv;
    if (cv > kQuietCv) why += "CV " + std::to_string(cv) + " in a quiet soak of " + c.id + "; ";
  }
  return why;
}

TEST(SoakTiming, ACpuHogOnOurCpuIsNoisierAndNamedAQuietSoakIsNot) {
  if (system("command -v taskset >/dev/null && command -v timeout >/dev/null") != 0) {
    CUTOVER_SKIP_OR_FAIL("taskset (util-linux) and timeout (coreutils) are needed");
  }
  const int cpu = PinToOneCpu();
  ASSERT_GE(cpu, 0);
  std::vector<CaseSpec> cases = {
      {.op = "softmax", .dtype = "fp32", .shape = {256, 1024}, .layout = "row-major"},
      {.op = "reduce_max", .dtype = "fp32", .shape = {512, 1024}, .layout = "row-major"}};
  testing::TempDir dir;
  // A quiet baseline and its repeat, which must not be judged noisier than each other. A shared
  // machine has noise that is not ours (another VM, a process a test before left exiting), and
  // compare's A/A false-difference rate is not zero (StabilityVerdictTest states it): a pair
  // that is too busy to judge by, or judged noisier, is soaked again, up to three times. The
  // A/A claim fails only when no pair of three holds it.
  SoakResult figures;
  CompatRecord quiet, again;
  std::string busy, aa_noisier;
  bool held = false;
  for (int attempt = 0; attempt < 3 && !held; ++attempt) {
    SoakResult quiet_figures, again_figures;
    quiet = Soak(dir.Join("quiet.rec"), cases, &quiet_figures);
    again = Soak(dir.Join("again.rec"), cases, &again_figures);
    busy = TooBusy(quiet, quiet_figures) + TooBusy(again, again_figures);
    if (!busy.empty()) {
      std::printf("attempt %d: too busy: %s\n", attempt + 1, busy.c_str());
      continue;
    }
    ExpectSmallOverhead(quiet_figures);
    ExpectSmallOverhead(again_figures);
    std::string noisier;
    for (const CaseComparison& c : CompareRecords(quiet, again).cases) {
      const StabilityComparison& s = c.stability;
      if (s.verdict != StabilityVerdict::kNoisier) continue;
      noisier += c.id + ": CV " + std::to_string(s.source.cv) + " -> " +
                 std::to_string(s.target.cv) + ", p99/p50 " + std::to_string(s.source.Tail()) +
                 " -> " + std::to_string(s.target.Tail()) + "; ";
    }
    if (noisier.empty()) {
      held = true;
    } else {
      aa_noisier = noisier;
      std::printf("attempt %d: a quiet repeat judged noisier: %s\n", attempt + 1, noisier.c_str());
    }
  }
  if (!held && !aa_noisier.empty()) {
    FAIL() << "no quiet pair of three held the A/A claim; the last judged noisier: " << aa_noisier;
  }
  if (!held) CUTOVER_SKIP_OR_FAIL("the host is too busy for a timing test: " + busy);
  CompatRecord hogged;
  {
    Hog hog(cpu);
    ASSERT_TRUE(hog.ok());
    hogged = Soak(dir.Join("hog.rec"), cases, &figures);
  }
  ASSERT_EQ(hogged.cases.size(), cases.size());

  Comparison with_hog = CompareRecords(quiet, hogged);
  for (const CaseComparison& c : with_hog.cases) {
    const StabilityComparison& s = c.stability;
    EXPECT_EQ(s.verdict, StabilityVerdict::kNoisier)
        << c.id << ": CV " << s.source.cv << " -> " << s.target.cv << ", p99/p50 "
        << s.source.Tail() << " -> " << s.target.Tail();
    EXPECT_NE(s.cause.find("involuntary context switches"), std::string::npos) << s.cause;
    EXPECT_EQ(s.cause.find("steal time"), std::string::npos) << s.cause;
  }
  Comparison aa = CompareRecords(quiet, again);
  std::printf("quiet CV %.4f %.4f, again %.4f %.4f, hog %.4f %.4f\n",
              with_hog.cases[0].stability.source.cv, with_hog.cases[1].stability.source.cv,
              aa.cases[0].stability.target.cv, aa.cases[1].stability.target.cv,
              with_hog.cases[0].stability.target.cv, with_hog.cases[1].stability.target.cv);
}

}  // namespace
}  // namespace cutover
