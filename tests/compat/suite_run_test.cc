#include "compat/suite_run.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

std::vector<CaseSpec> Cases() {
  return {{"gemm", "fp32", {32, 32, 64}, "row-major", 1},
          {"softmax", "fp32", {8, 100}, "row-major", 1},
          {"h2d_copy", "u8", {64}, "row-major", 1},
          {"reduce_sum", "fp32", {16, 256}, "row-major", 1},
          {"gelu", "fp32", {1000}, "row-major", 1}};
}

SuiteRunOptions Options(const std::string& path, bool resume) {
  SuiteRunOptions o;
  o.record_path = path;
  o.resume = resume;
  o.header = {.backend = "cpu",
              .suite = "quick",
              .accumulate = "fp32",
              .threads = 2,
              .created_at = "2026-12-05T00:00:00Z"};
  o.cases = Cases();
  o.config.reps = 2;
  return o;
}

std::vector<std::string> Ids(const CompatRecord& r) {
  std::vector<std::string> ids;
  for (const CaseResult& c : r.cases) ids.push_back(c.id);
  return ids;
}

// The same cases with the same output bits and samples (timings differ run to run).
void ExpectSameCases(const CompatRecord& a, const CompatRecord& b) {
  ASSERT_EQ(Ids(a), Ids(b));
  for (size_t i = 0; i < a.cases.size(); ++i) {
    EXPECT_EQ(a.cases[i].status, b.cases[i].status) << a.cases[i].id;
    EXPECT_EQ(a.cases[i].digest, b.cases[i].digest) << a.cases[i].id;
    EXPECT_EQ(a.cases[i].tiles, b.cases[i].tiles) << a.cases[i].id;
    EXPECT_EQ(a.cases[i].sample_value, b.cases[i].sample_value) << a.cases[i].id;
  }
}

class SuiteRunTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(failpoint::Configure("").ok()); }
  testing::TempDir dir_;
};

TEST_F(SuiteRunTest, InterruptedRunResumedGivesTheCasesOfAnUninterruptedRun) {
  auto whole = RunSuiteToRecord(Options(dir_.Join("whole.rec"), false), nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->ran, 5u);

  const std::string path = dir_.Join("part.rec");
  ASSERT_TRUE(failpoint::Configure("compat.run.case_saved:after=2:error").ok());
  auto cut = RunSuiteToRecord(Options(path, false), nullptr);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().message(), "failpoint compat.run.case_saved");
  ASSERT_TRUE(failpoint::Configure("").ok());
  auto partial = LoadRecord(path);
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_EQ(Ids(*partial), (std::vector<std::string>{Cases()[0].Id(), Cases()[1].Id()}));

  int calls = 0;
  auto resumed = RunSuiteToRecord(Options(path, true), [&calls] { ++calls; });
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->kept, 2u);
  EXPECT_EQ(resumed->ran, 3u);
  EXPECT_EQ(calls, 5);
  // The kept cases are the ones on disk, untouched (their timings too).
  EXPECT_EQ(resumed->record.cases[0].timing.reps_s, partial->cases[0].timing.reps_s);
  auto final_rec = LoadRecord(path);
  ASSERT_TRUE(final_rec.ok()) << final_rec.status().ToString();
  ExpectSameCases(*final_rec, whole->record);
  CUTOVER_EXPECT_VALID(RecordToJson(*partial), "compat-record-1.json");
  CUTOVER_EXPECT_VALID(RecordToJson(*final_rec), "compat-record-1.json");
  EXPECT_EQ(RecordToJson(*final_rec), RecordToJson(resumed->record));
}

TEST_F(SuiteRunTest, ResumingACompleteRecordRunsNothing) {
  const std::string path = dir_.Join("r.rec");
  ASSERT_TRUE(RunSuiteToRecord(Options(path, false), nullptr).ok());
  auto before = LoadRecord(path);
  ASSERT_TRUE(before.ok());
  auto again = RunSuiteToRecord(Options(path, true), nullptr);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->kept, 5u);
  EXPECT_EQ(again->ran, 0u);
  auto after = LoadRecord(path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(RecordToJson(*after), RecordToJson(*before));
}

TEST_F(SuiteRunTest, ResumeWithoutARecordRunsEverything) {
  auto r = RunSuiteToRecord(Options(dir_.Join("new.rec"), true), nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kept, 0u);
  EXPECT_EQ(r->ran, 5u);
}

TEST_F(SuiteRunTest, WithoutResumeAnExistingRecordIsReplaced) {
  const std::string path = dir_.Join("r.rec");
  SuiteRunOptions first = Options(path, false);
  first.cases.resize(1);
  ASSERT_TRUE(RunSuiteToRecord(first, nullptr).ok());
  SuiteRunOptions second = Options(path, false);
  second.cases = {Cases()[3]};
  ASSERT_TRUE(RunSuiteToRecord(second, nullptr).ok());
  auto r = LoadRecord(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Ids(*r), std::vector<std::string>{Cases()[3].Id()});
}

// Runs the suite in a child process armed with `failpoint` and returns how it ended.
int RunInChildKilledAt(const std::string& path, const std::string& failpoint) {
  pid_t pid = fork();
  if (pid == 0) {
    if (!failpoint::Configure(failpoint).ok()) _exit(100);
    auto r = RunSuiteToRecord(Options(path, false), nullptr);
    _exit(r.ok() ? 0 : 101);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST_F(SuiteRunTest, KilledAfterACaseIsSavedLosesNothing) {
  const std::string path = dir_.Join("k.rec");
  int status = RunInChildKilledAt(path, "compat.run.case_saved:after=3:kill");
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  auto partial = LoadRecord(path);
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_EQ(partial->cases.size(), 3u);
  auto resumed = RunSuiteToRecord(Options(path, true), nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->kept, 3u);
  EXPECT_EQ(resumed->ran, 2u);
  auto whole = RunSuiteToRecord(Options(dir_.Join("whole.rec"), false), nullptr);
  ASSERT_TRUE(whole.ok());
  ExpectSameCases(resumed->record, whole->record);
}

TEST_F(SuiteRunTest, KilledInTheMiddleOfAWriteLosesOnlyTheCaseInFlight) {
  const std::string path = dir_.Join("k.rec");
  // The third record write dies before its fsync and rename: the file keeps two cases.
  int status = RunInChildKilledAt(path, "file.write_atomic.before_fsync:after=3:kill");
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  auto partial = LoadRecord(path);
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_EQ(partial->cases.size(), 2u);
  auto resumed = RunSuiteToRecord(Options(path, true), nullptr);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->kept, 2u);
  EXPECT_EQ(resumed->ran, 3u);
  EXPECT_EQ(Ids(resumed->record).size(), 5u);
}

TEST_F(SuiteRunTest, RefusesToResumeARecordOfOtherOptions) {
  const std::string path = dir_.Join("r.rec");
  SuiteRunOptions first = Options(path, false);
  first.cases.resize(1);
  ASSERT_TRUE(RunSuiteToRecord(first, nullptr).ok());
  auto refused = [&](void (*change)(CompatRecord*)) {
    SuiteRunOptions o = Options(path, true);
    change(&o.header);
    auto r = RunSuiteToRecord(o, nullptr);
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
    return r.status().message();
  };
  const std::string tail = ", this run uses ";
  EXPECT_EQ(refused([](CompatRecord* h) { h->backend = "cuda"; }),
            "compat run --resume: " + path + " was made with backend cpu" + tail +
                "cuda (use the same options or another --record)");
  EXPECT_EQ(refused([](CompatRecord* h) { h->accumulate = "fp64"; }),
            "compat run --resume: " + path + " was made with accumulate fp32" + tail +
                "fp64 (use the same options or another --record)");
  EXPECT_EQ(refused([](CompatRecord* h) { h->suite = "standard"; }),
            "compat run --resume: " + path + " was made with suite quick" + tail +
                "standard (use the same options or another --record)");
  EXPECT_EQ(refused([](CompatRecord* h) { h->op_table_version = 99; }),
            "compat run --resume: " + path + " was made with op table version " +
                std::to_string(kOpTableVersion) + tail +
                "99 (use the same options or another --record)");
  EXPECT_EQ(refused([](CompatRecord* h) { h->threads = 4; }),
            "compat run --resume: " + path + " was made with threads 2" + tail +
                "4 (use the same options or another --record)");
  // The refused runs left the record as it was.
  auto r = LoadRecord(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->cases.size(), 1u);
}

TEST_F(SuiteRunTest, ResumeOfAnUnreadableRecordIsAnError) {
  const std::string path = dir_.Join("bad.rec");
  ASSERT_TRUE(WriteFileAtomic(path, "{\"schema\": \"cutover.compat-record/1\"").ok());
  auto r = RunSuiteToRecord(Options(path, true), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind(path + ": ", 0), 0u) << r.status().message();
}

// Each case's rate is also a fraction of the record's calibrated ceiling of its unit, and a
// resumed run measures against the calibration the record already holds.
TEST_F(SuiteRunTest, FractionsOfTheRecordsCalibrationSurviveAResume) {
  const std::string path = dir_.Join("r.rec");
  SuiteRunOptions first = Options(path, false);
  first.header.calibration = {.measured = true, .copy_gbps = 2.0, .gemm_gflops = 4.0};
  first.cases.resize(2);  // gemm (GFLOP/s) and softmax (GB/s)
  auto a = RunSuiteToRecord(first, nullptr);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const CaseTiming& gemm = a->record.cases[0].timing;
  const CaseTiming& softmax = a->record.cases[1].timing;
  EXPECT_DOUBLE_EQ(gemm.fraction_of_ceiling, gemm.rate / 4.0);
  EXPECT_DOUBLE_EQ(softmax.fraction_of_ceiling, softmax.rate / 2.0);
  SuiteRunOptions again = Options(path, true);
  again.header.calibration = {.measured = true, .copy_gbps = 100.0, .gemm_gflops = 100.0};
  auto b = RunSuiteToRecord(again, nullptr);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->record.calibration.gemm_gflops, 4.0);
  const CaseTiming& sum = b->record.cases[3].timing;  // reduce_sum, run now
  EXPECT_DOUBLE_EQ(sum.fraction_of_ceiling, sum.rate / 2.0);
  // Without a calibration the fraction is 0 (unknown).
  auto c = RunSuiteToRecord(Options(dir_.Join("plain.rec"), false), nullptr);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->record.cases[0].timing.fraction_of_ceiling, 0);
}

TEST(CalibrationTest, CpuCeilingsAreMeasuredQuickly) {
  Calibration cal = CalibrateCpu(cpu::CpuConfig{.threads = 2, .fp64_accumulate = true});
  EXPECT_TRUE(cal.measured);
  EXPECT_GT(cal.copy_gbps, 0);
  EXPECT_GT(cal.gemm_gflops, 0);
  EXPECT_EQ(cal.gemm_shape, (std::vector<int64_t>{768, 768, 768}));
  EXPECT_EQ(cal.copy_bytes, 8.0 * (1 << 24));
  // About 1 s on 2 loaded cores; the brief allows ~3. Under AddressSanitizer the time is the
  // instrumentation's (16.7 s in CI), so the budget is not checked there.
  if (!testing::kAddressSanitizer) {
    EXPECT_LT(cal.seconds, 10.0);
  }
}

}  // namespace
}  // namespace cutover
