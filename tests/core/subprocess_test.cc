#include "core/subprocess.h"

#include <chrono>

#include <gtest/gtest.h>

namespace cutover {
namespace {

TEST(RunProgramTest, ReturnsStdoutAndStderr) {
  auto out = RunProgram({"/bin/sh", "-c", "echo out; echo err >&2"}, 5000);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "out\nerr\n");
}

TEST(RunProgramTest, NonZeroExitEndsWithTheLastLinePrinted) {
  auto out = RunProgram({"/bin/sh", "-c", "echo first; echo 'nginx: [emerg] bad' >&2; exit 3"},
                        5000);
  EXPECT_EQ(out.status().code(), Code::kEnvironment);
  EXPECT_EQ(out.status().message(), "/bin/sh exited with status 3: nginx: [emerg] bad");
  auto quiet = RunProgram({"/bin/sh", "-c", "exit 1"}, 5000);
  EXPECT_EQ(quiet.status().message(), "/bin/sh exited with status 1");
}

TEST(RunProgramTest, MissingProgramIsNotFound) {
  auto out = RunProgram({"/nonexistent/program"}, 5000);
  EXPECT_EQ(out.status().code(), Code::kNotFound);
}

TEST(RunProgramTest, HangingProgramIsKilledAtTheDeadline) {
  auto t0 = std::chrono::steady_clock::now();
  auto out = RunProgram({"/bin/sleep", "10"}, 200);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out.status().code(), Code::kDeadlineExceeded);
  EXPECT_EQ(out.status().message(), "/bin/sleep timed out after 200 ms");
  EXPECT_LT(s, 5);
}

TEST(RunInChildTest, ReturnsWhatTheChildReturns) {
  auto out = RunInChild("work", [] { return std::string("done"); }, 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "done");
}

}  // namespace
}  // namespace cutover
