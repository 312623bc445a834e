#include "core/failpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::cutover::testing::TempDir;

// The environment variable that tells FailpointEnvTest.PointThenMarker it runs as the re-executed
// child of another test, and where to write its markers.
constexpr char kChildDirEnv[] = "CUTOVER_FAILPOINT_TEST_DIR";

class FailpointTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(failpoint::Configure("").ok()); }
  void TearDown() override { ASSERT_TRUE(failpoint::Configure("").ok()); }
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void Touch(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

Status Guarded() {
  CUTOVER_FAILPOINT_RETURN("test.guarded");
  return Status::Ok();
}

Result<int> GuardedValue() {
  CUTOVER_FAILPOINT_RETURN("test.guarded_value");
  return 42;
}

// Waits for `pid` and returns its wait status.
int Wait(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST_F(FailpointTest, ConfigureRejectsMalformedSpecs) {
  struct Case {
    const char* spec;
    const char* message;
  };
  const Case cases[] = {
      {":kill", "failpoint entry with an empty name"},
      {"a:after=0", "failpoint a: after= needs an integer >= 1"},
      {"a:after=x:kill", "failpoint a: after= needs an integer >= 1"},
      {"a:after=", "failpoint a: after= needs an integer >= 1"},
      {"a:sleep=-1", "failpoint a: sleep= needs milliseconds"},
      {"a:explode", "failpoint a: unknown option 'explode'"},
      {"a:kill:", "failpoint a: unknown option ''"},
      {"a:kill:error", "failpoint a: more than one action"},
      {"a:kill, a:error", "failpoint a: named twice"},
  };
  for (const Case& c : cases) {
    Status s = failpoint::Configure(c.spec);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.spec;
    EXPECT_EQ(s.message(), c.message) << c.spec;
  }
  EXPECT_FALSE(failpoint::g_armed.load());
}

TEST_F(FailpointTest, MalformedSpecKeepsThePreviousSet) {
  ASSERT_TRUE(failpoint::Configure(" test.guarded:error , other:sleep=0 ,,").ok());
  EXPECT_FALSE(failpoint::Configure("test.guarded:bogus").ok());
  EXPECT_TRUE(failpoint::g_armed.load());
  EXPECT_EQ(Guarded().message(), "failpoint test.guarded");
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 1);
  ASSERT_TRUE(failpoint::Configure("").ok());
  EXPECT_FALSE(failpoint::g_armed.load());
  EXPECT_TRUE(Guarded().ok());
}

TEST_F(FailpointTest, ErrorFiresFromTheNthHitOn) {
  ASSERT_TRUE(failpoint::Configure("test.guarded:after=3:error,test.guarded_value:error").ok());
  EXPECT_TRUE(Guarded().ok());
  EXPECT_TRUE(Guarded().ok());
  for (int i = 0; i < 2; ++i) {
    Status s = Guarded();
    EXPECT_EQ(s.code(), Code::kIoError);
    EXPECT_EQ(s.message(), "failpoint test.guarded");
  }
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 4);

  Result<int> v = GuardedValue();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().ToString(), "io_error: failpoint test.guarded_value");
  EXPECT_EQ(failpoint::HitCount("test.guarded_value"), 1);
  EXPECT_EQ(failpoint::HitCount("never.armed"), 0);

  // Reconfiguring resets the counts.
  ASSERT_TRUE(failpoint::Configure("test.guarded:after=3:error").ok());
  EXPECT_EQ(failpoint::HitCount("test.guarded"), 0);
  EXPECT_TRUE(Guarded().ok());
}

TEST_F(FailpointTest, PointsNotArmedCountNothing) {
  ASSERT_TRUE(failpoint::Configure("something.else:kill").ok());
  CUTOVER_FAILPOINT("test.plain");
  EXPECT_TRUE(Guarded().ok());
  EXPECT_EQ(failpoint::HitCount("test.plain"), 0);
  EXPECT_EQ(failpoint::HitCount("something.else"), 0);
}

TEST_F(FailpointTest, SleepDelaysOnlyTheNthHit) {
  ASSERT_TRUE(failpoint::Configure("test.sleep:after=2:sleep=60").ok());
  auto start = std::chrono::steady_clock::now();
  CUTOVER_FAILPOINT("test.sleep");
  CUTOVER_FAILPOINT("test.sleep");
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(60));
  EXPECT_EQ(failpoint::HitCount("test.sleep"), 2);
}

TEST_F(FailpointTest, KillEndsTheProcessAtTheNthHit) {
  TempDir tmp;
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!failpoint::Configure("test.kill:after=3:kill").ok()) ::_exit(10);
    for (int i = 1; i <= 5; ++i) {
      Touch(tmp.Join("before-" + std::to_string(i)));
      CUTOVER_FAILPOINT("test.kill");
      Touch(tmp.Join("after-" + std::to_string(i)));
    }
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = Wait(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(Exists(tmp.Join("after-2")));
  EXPECT_TRUE(Exists(tmp.Join("before-3")));
  EXPECT_FALSE(Exists(tmp.Join("after-3")));
  EXPECT_FALSE(Exists(tmp.Join("before-4")));
}

TEST_F(FailpointTest, AbortRaisesSigabrt) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!failpoint::Configure("test.abort:abort").ok()) ::_exit(10);
    CUTOVER_FAILPOINT("test.abort");
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = Wait(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
}

TEST_F(FailpointTest, KilledAtomicWriteKeepsTheOldContent) {
  TempDir tmp;
  const std::string path = tmp.Join("config.json");
  ASSERT_TRUE(WriteFileAtomic(path, "old").ok());
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!failpoint::Configure("file.write_atomic.before_fsync:kill").ok()) ::_exit(10);
    (void)WriteFileAtomic(path, "new content that never lands");
    ::_exit(0);
  }
  ASSERT_GT(pid, 0);
  int status = Wait(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  Result<std::string> content = ReadFile(path);
  ASSERT_TRUE(content.ok()) << content.status().ToString();
  EXPECT_EQ(*content, "old");
  // Unarmed, the same write goes through.
  ASSERT_TRUE(WriteFileAtomic(path, "new").ok());
  EXPECT_EQ(*ReadFile(path), "new");
}

// Re-executes this test binary running only `test`, with CUTOVER_FAILPOINTS=`spec` and the marker
// directory `dir`; its stdout and stderr go to `dir`/output. Returns the wait status.
int ReexecChild(const std::string& test, const std::string& spec, const std::string& dir) {
  const std::string filter = "--gtest_filter=" + test;
  const std::string output = dir + "/output";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("CUTOVER_FAILPOINTS", spec.c_str(), 1);
    ::setenv(kChildDirEnv, dir.c_str(), 1);
    int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl("/proc/self/exe", "failpoint_test_child", filter.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid > 0 ? Wait(pid) : -1;
}

// Writes a marker, hits "test.env.point", writes a second marker. Run by the tests below as a
// re-executed child with the point armed from the environment; run on its own, it checks that an
// unarmed point lets the code through.
TEST(FailpointEnvTest, PointThenMarker) {
  const char* child_dir = std::getenv(kChildDirEnv);
  TempDir tmp;
  const std::string dir = child_dir != nullptr ? child_dir : tmp.path();
  if (child_dir == nullptr) {
    ASSERT_TRUE(failpoint::Configure("").ok());
  }
  Touch(dir + "/before");
  CUTOVER_FAILPOINT("test.env.point");
  Touch(dir + "/after");
  EXPECT_TRUE(Exists(dir + "/after"));
  if (child_dir == nullptr) {
    EXPECT_EQ(failpoint::HitCount("test.env.point"), 0);
  }
}

TEST(FailpointEnvTest, EnvironmentArmsAKill) {
  TempDir tmp;
  int status = ReexecChild("FailpointEnvTest.PointThenMarker", "test.env.point:kill", tmp.path());
  ASSERT_TRUE(WIFSIGNALED(status))
      << "status " << status << ", output: " << ReadFile(tmp.Join("output")).value_or("");
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(Exists(tmp.Join("before")));
  EXPECT_FALSE(Exists(tmp.Join("after")));
}

TEST(FailpointEnvTest, EnvironmentNamingAnotherPointLetsTheChildFinish) {
  TempDir tmp;
  int status = ReexecChild("FailpointEnvTest.PointThenMarker", "some.other.point:kill", tmp.path());
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << ReadFile(tmp.Join("output")).value_or("");
  EXPECT_TRUE(Exists(tmp.Join("after")));
}

TEST(FailpointEnvTest, MalformedEnvironmentExitsTwo) {
  TempDir tmp;
  int status =
      ReexecChild("FailpointEnvTest.PointThenMarker", "test.env.point:after=0:kill", tmp.path());
  ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(
      ReadFile(tmp.Join("output")).value_or(""),
      "cutover: CUTOVER_FAILPOINTS: failpoint test.env.point: after= needs an integer >= 1\n");
  EXPECT_FALSE(Exists(tmp.Join("before")));  // it stopped before any test ran
}

}  // namespace
}  // namespace cutover
