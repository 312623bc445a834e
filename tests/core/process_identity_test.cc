#include "core/process_identity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace cutover {
namespace {

constexpr char kBoot[] = "0f0e6f4c-1111-4222-8333-944455556666";

// A /proc/PID/stat line whose command name holds spaces and a ')'.
std::string StatLine(int64_t pid, char state, uint64_t start_ticks) {
  std::string s = std::to_string(pid) + " (cut over) x) " + state + " 1 1 1 0 -1 4194560";
  for (int field = 10; field <= 21; ++field) s += " " + std::to_string(field);
  s += " " + std::to_string(start_ticks) + " 12345 678\n";
  return s;
}

FakeFileSystem FakeProc(int64_t pid, char state, uint64_t start_ticks) {
  FakeFileSystem fs;
  fs.AddFile("/proc/sys/kernel/random/boot_id", std::string(kBoot) + "\n");
  fs.AddFile("/proc/" + std::to_string(pid) + "/stat", StatLine(pid, state, start_ticks));
  return fs;
}

ProcessIdentity Holder(int64_t pid, uint64_t start_ticks, std::string host = "node-a") {
  return ProcessIdentity{pid, start_ticks, kBoot, std::move(host)};
}

TEST(ProcessIdentityTest, IdentifyReadsStartTimeAfterACommandNameWithParentheses) {
  FakeFileSystem fs = FakeProc(4242, 'S', 987654);
  auto id = IdentifyProcess(fs, 4242, "node-a");
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(id->pid, 4242);
  EXPECT_EQ(id->start_ticks, 987654u);
  EXPECT_EQ(id->boot_id, kBoot);
  EXPECT_EQ(id->host, "node-a");
}

TEST(ProcessIdentityTest, IdentifyErrors) {
  FakeFileSystem fs = FakeProc(1, 'S', 5);
  EXPECT_EQ(IdentifyProcess(fs, 77, "h").status().message(), "/proc/77/stat: no such process");
  fs.AddFile("/proc/78/stat", "78 no-parenthesis S 1\n");
  EXPECT_EQ(IdentifyProcess(fs, 78, "h").status().message(),
            "/proc/78/stat: no ')' after the command name");
  fs.AddFile("/proc/79/stat", "79 (x) S 1 2 3\n");
  EXPECT_EQ(IdentifyProcess(fs, 79, "h").status().message(), "/proc/79/stat: fewer than 22 fields");
}

TEST(ProcessIdentityTest, JudgesTheHolderOnThisHost) {
  FakeFileSystem fs = FakeProc(4242, 'S', 987654);
  EXPECT_EQ(JudgeHolder(fs, "node-a", Holder(4242, 987654)).state, HolderState::kAlive);

  HolderVerdict gone = JudgeHolder(fs, "node-a", Holder(4243, 987654));
  EXPECT_EQ(gone.state, HolderState::kGone);
  EXPECT_EQ(gone.reason, "pid 4243 is not running");

  HolderVerdict reused = JudgeHolder(fs, "node-a", Holder(4242, 111));
  EXPECT_EQ(reused.state, HolderState::kGone);
  EXPECT_EQ(reused.reason, "pid 4242 now belongs to another process");

  ProcessIdentity before_reboot = Holder(4242, 987654);
  before_reboot.boot_id = "another-boot";
  HolderVerdict rebooted = JudgeHolder(fs, "node-a", before_reboot);
  EXPECT_EQ(rebooted.state, HolderState::kGone);
  EXPECT_EQ(rebooted.reason, "host rebooted since");

  FakeFileSystem zombie = FakeProc(4242, 'Z', 987654);
  EXPECT_EQ(JudgeHolder(zombie, "node-a", Holder(4242, 987654)).state, HolderState::kGone);
}

TEST(ProcessIdentityTest, AnotherHostOrAnIncompleteIdentityIsNeverJudgedGone) {
  FakeFileSystem fs = FakeProc(4242, 'S', 987654);
  HolderVerdict elsewhere = JudgeHolder(fs, "node-a", Holder(4243, 987654, "node-b"));
  EXPECT_EQ(elsewhere.state, HolderState::kUnknown);
  EXPECT_EQ(elsewhere.reason, "holder runs on host 'node-b', not this one");

  ProcessIdentity old_writer = Holder(4243, 0);
  EXPECT_EQ(JudgeHolder(fs, "node-a", old_writer).state, HolderState::kUnknown);
  old_writer = Holder(4243, 987654);
  old_writer.boot_id.clear();
  EXPECT_EQ(JudgeHolder(fs, "node-a", old_writer).state, HolderState::kUnknown);
}

TEST(ProcessIdentityTest, LiveHostSelfIsAliveAndAKilledChildIsGone) {
  const ProcessIdentity& self = SelfIdentity();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_ticks, 0u);
  EXPECT_FALSE(self.boot_id.empty());
  EXPECT_EQ(JudgeHolder(self).state, HolderState::kAlive);

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  RealFileSystem fs("/");
  auto id = IdentifyProcess(fs, child, ThisHostName());
  ASSERT_TRUE(id.ok()) << id.status().message();
  EXPECT_EQ(JudgeHolder(*id).state, HolderState::kAlive);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  // Killed but not reaped: a zombie, already gone.
  for (int i = 0; i < 200 && JudgeHolder(*id).state == HolderState::kAlive; ++i) usleep(5000);
  EXPECT_EQ(JudgeHolder(*id).state, HolderState::kGone);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  HolderVerdict reaped = JudgeHolder(*id);
  EXPECT_EQ(reaped.state, HolderState::kGone);
  EXPECT_EQ(reaped.reason, "pid " + std::to_string(child) + " is not running");
}

}  // namespace
}  // namespace cutover
