// The `cutover probe collect` command layer, run in-process on fixture trees: --format
// prometheus|labels and the --json conflict.
#include "probe/command.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/cli.h"
#include "core/fingerprint.h"
#include "core/status.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

std::string FixtureRoot(const std::string& name) {
  return testing::SourceDir() + "/tests/fixtures/hosts/" + name;
}

// Runs `cutover [--json] [--db FILE] probe ARGS...` in-process; returns the exit code the
// dispatcher would give, the error message in *error and what went to stdout in *out.
int RunProbe(std::vector<std::string> args, std::string* out, std::string* error) {
  CLI::App app("cutover");
  CommandContext ctx;
  app.add_flag("--json", ctx.global.json);
  app.add_option("--db", ctx.global.db);
  app.fallthrough();
  AddProbeCommand(app, ctx);
  args.insert(args.begin(), "probe");
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ::testing::internal::CaptureStdout();
  Result<int> rc = ctx.run();
  *out = ::testing::internal::GetCapturedStdout();
  if (!rc.ok()) {
    *error = rc.status().message();
    return ExitCodeFor(rc.status());
  }
  return *rc;
}

TEST(CollectCommandTest, FormatPrometheusAndLabels) {
  std::string out, err;
  ASSERT_EQ(RunProbe({"collect", "--root", FixtureRoot("h100-cuda12.4"), "--format", "prometheus"},
                     &out, &err),
            0)
      << err;
  EXPECT_EQ(out.rfind("# HELP cutover_gpu_info ", 0), 0u) << out;
  EXPECT_NE(out.find("\ncutover_probe_collection_seconds "), std::string::npos) << out;
  ASSERT_EQ(RunProbe({"collect", "--root", FixtureRoot("h100-cuda12.4"), "--format", "labels"},
                     &out, &err),
            0)
      << err;
  EXPECT_EQ(out.rfind("nvidia.com/cuda.driver-version.full=550.54.14\n", 0), 0u) << out;
  EXPECT_NE(out.find("\nnvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"), std::string::npos);
}

TEST(CollectCommandTest, JsonWithTextFormatIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunProbe({"--json", "collect", "--root", FixtureRoot("h100-cuda12.4"), "--format",
                      "prometheus"},
                     &out, &err),
            2);
  EXPECT_EQ(err, "--json cannot be combined with --format prometheus");
  EXPECT_EQ(out, "");
}

TEST(CollectCommandTest, UnknownFormatIsRejected) {
  CLI::App app("cutover");
  CommandContext ctx;
  AddProbeCommand(app, ctx);
  EXPECT_THROW(app.parse(std::vector<std::string>{"yaml", "--format", "collect", "probe"}),
               CLI::ValidationError);
}

}  // namespace
}  // namespace cutover
