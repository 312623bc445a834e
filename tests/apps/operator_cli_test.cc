// The CLI conventions an operator relies on, run against the built binary: read-only commands
// create nothing, a mistyped command is named with a suggestion, every subcommand's --help lists
// the global options, a bad value names its flag and type, `-` reads stdin, `probe check
// --strict` fails on warnings.
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

constexpr char kCutover[] = CUTOVER_TEST_CUTOVER_BIN;

struct CliRun {
  int rc = -1;
  std::string out;  // stdout and stderr together
};

CliRun Cutover(const std::string& args) {
  CliRun r;
  r.rc = testing::RunShell(std::string(kCutover) + " " + args + " 2>&1", &r.out);
  return r;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(OperatorCli, ReadOnlyCommandsCreateNoStateFile) {
  testing::TempDir dir;
  const std::string db = dir.Join("nowhere/x.db");
  for (const char* cmd : {"canary status", "canary history", "datasync history"}) {
    CliRun r = Cutover(std::string(cmd) + " --db " + db);
    EXPECT_EQ(r.rc, 2) << cmd << ": " << r.out;
    EXPECT_EQ(r.out, "cutover: " + db + ": no state file there (nothing has been recorded yet)\n")
        << cmd;
    EXPECT_FALSE(Exists(dir.Join("nowhere"))) << cmd << " created the directory";
  }
  // The default state file under $HOME is not created either.
  std::string home_run;
  EXPECT_EQ(testing::RunShell("HOME=" + dir.path() + " CUTOVER_DB= " + std::string(kCutover) +
                                  " canary status 2>&1",
                              &home_run),
            2)
      << home_run;
  EXPECT_FALSE(Exists(dir.Join(".local"))) << home_run;
}

TEST(OperatorCli, MistypedCommandSuggestsTheNearestExit2) {
  CliRun push = Cutover("datasync psuh");
  EXPECT_EQ(push.rc, 2);
  EXPECT_EQ(push.out, "cutover: unknown command 'psuh' (did you mean 'push'?)\n");
  CliRun collect = Cutover("probe colect --json");
  EXPECT_EQ(collect.rc, 2);
  EXPECT_EQ(collect.out, "cutover: unknown command 'colect' (did you mean 'collect'?)\n");
  CliRun tool = Cutover("--db /tmp/x.db canery status");
  EXPECT_EQ(tool.rc, 2);
  EXPECT_EQ(tool.out, "cutover: unknown command 'canery' (did you mean 'canary'?)\n");
  CliRun far = Cutover("canary zzzzzz");
  EXPECT_EQ(far.rc, 2);
  EXPECT_EQ(far.out, "cutover: unknown command 'zzzzzz' (canary --help lists the commands)\n");
}

TEST(OperatorCli, EverySubcommandHelpListsTheGlobalOptions) {
  for (const char* cmd :
       {"canary status", "canary start", "datasync push", "probe check", "compat run", "assess"}) {
    CliRun r = Cutover(std::string(cmd) + " --help");
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_NE(r.out.find("Global options (accepted before or after the command):"),
              std::string::npos)
        << cmd << ":\n"
        << r.out;
    EXPECT_NE(r.out.find("--db FILE"), std::string::npos) << cmd;
  }
  // Required options are marked.
  CliRun check = Cutover("probe check --help");
  EXPECT_NE(check.out.find("REQUIRED"), std::string::npos) << check.out;
}

TEST(OperatorCli, BadValueNamesTheFlagAndTheType) {
  CliRun reps = Cutover("compat run --reps abc");
  EXPECT_EQ(reps.rc, 2);
  EXPECT_NE(reps.out.find("--reps: expected an integer in 1..1000, got 'abc'"), std::string::npos)
      << reps.out;
  CliRun jobs = Cutover("datasync push --jobs 0 /tmp file:///tmp/x");
  EXPECT_EQ(jobs.rc, 2);
  EXPECT_NE(jobs.out.find("--jobs: must be in 1..256, got 0"), std::string::npos) << jobs.out;
}

// The words of a --help section ("Subcommands:", "Options:"), up to the blank line after it.
std::vector<std::string> SectionLines(const std::string& help, const std::string& title) {
  std::vector<std::string> lines;
  size_t at = help.find("\n" + title + "\n");
  if (at == std::string::npos) return lines;
  at += title.size() + 2;
  while (at < help.size()) {
    const size_t end = help.find('\n', at);
    const std::string line = help.substr(at, end == std::string::npos ? end : end - at);
    if (line.empty()) break;
    lines.push_back(line);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return lines;
}

// Every numeric option of every command (found by walking --help, so a new one is covered the
// day it is added) answers a word with its flag and the type it expects, exit 2, never CLI11's
// conversion message.
TEST(OperatorCli, EveryNumericOptionOfEveryCommandNamesItsFlagAndType) {
  std::vector<std::string> todo = {""};
  int checked = 0, commands = 0;
  while (!todo.empty()) {
    const std::string cmd = todo.back();
    todo.pop_back();
    ++commands;
    CliRun help = Cutover(cmd + " --help");
    ASSERT_EQ(help.rc, 0) << cmd << ": " << help.out;
    for (const std::string& line : SectionLines(help.out, "Subcommands:")) {
      const size_t from = line.find_first_not_of(' ');
      todo.push_back(cmd + " " + line.substr(from, line.find(' ', from) - from));
    }
    for (const std::string& line : SectionLines(help.out, "Options:")) {
      // "  -f,--step-factor INT:INT in 2..1024  ..." or "  --rel-tol FLOAT=0.001  ...".
      const size_t flag = line.find("--");
      if (flag == std::string::npos) continue;
      const size_t space = line.find(' ', flag);
      if (space == std::string::npos) continue;
      const std::string name = line.substr(flag, space - flag);
      const std::string type = line.substr(space + 1, line.find_first_of(" :=", space + 1) - space - 1);
      if (type != "INT" && type != "UINT" && type != "FLOAT") continue;
      ++checked;
      CliRun r = Cutover(cmd + " " + name + " abc");
      EXPECT_EQ(r.rc, 2) << cmd << " " << name << ": " << r.out;
      const std::string expected = "cutover: " + name + ": expected " +
                                   (type == "FLOAT"  ? std::string("a number")
                                    : type == "UINT" ? std::string("a non-negative integer")
                                                     : std::string("an integer")) ;
      EXPECT_EQ(r.out.rfind(expected, 0), 0u) << cmd << " " << name << ":\n" << r.out;
      EXPECT_NE(r.out.find("got 'abc'"), std::string::npos) << cmd << " " << name << ": " << r.out;
    }
  }
  EXPECT_GT(commands, 30);
  EXPECT_GE(checked, 25) << "the walk found too few numeric options to be the whole CLI";
}

TEST(OperatorCli, DashReadsStdinAndStrictFailsOnWarnings) {
  testing::TempDir dir;
  const std::string fixtures = testing::SourceDir() + "/tests/fixtures/hosts/";
  CliRun fp =
      Cutover("probe collect --root " + fixtures + "h100-cuda12.4 --out " + dir.Join("fp.json"));
  ASSERT_EQ(fp.rc, 0) << fp.out;
  // A driver one CUDA minor behind the image: holds, with a warning.
  const std::string policy =
      "apiVersion: cutover/v1\nkind: ProbePolicy\nname: t\nrequirements:\n"
      "  node_driver: \"535.104.05\"\n";
  std::string out;
  EXPECT_EQ(testing::RunShell("printf '" + policy + "' | " + kCutover + " probe check --policy - " +
                                  dir.Join("fp.json") + " 2>&1",
                              &out),
            0)
      << out;
  EXPECT_NE(out.find("warn"), std::string::npos) << out;
  EXPECT_EQ(
      testing::RunShell("printf '" + policy + "' | " + kCutover +
                            " probe check --strict --policy - " + dir.Join("fp.json") + " 2>&1",
                        &out),
      1)
      << out;
  // The fingerprint from stdin too.
  ASSERT_EQ(testing::RunShell("printf '" + policy + "' > " + dir.Join("p.yaml")), 0);
  EXPECT_EQ(testing::RunShell(std::string(kCutover) + " probe check --policy " +
                                  dir.Join("p.yaml") + " - < " + dir.Join("fp.json") + " 2>&1",
                              &out),
            0)
      << out;
}

}  // namespace
}  // namespace cutover
