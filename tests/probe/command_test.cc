// The `cutover probe collect` command layer, run in-process on fixture trees: --format
// prometheus|labels, the --json conflict, and --db / $CUTOVER_DB storing the document (and
// nothing stored without them).
#include "probe/command.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/cli.h"
#include "core/fingerprint.h"
#include "core/status.h"
#include "probe/store.h"
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

// Sets (or, with nullopt, unsets) an environment variable for one test and puts the old value
// back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
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

TEST(CollectCommandTest, DbStoresTheDocumentByHostAndTime) {
  testing::TempDir dir;
  const std::string db = dir.Join("state.db");
  std::string out, err;
  ASSERT_EQ(
      RunProbe({"--db", db, "collect", "--root", FixtureRoot("h100-cuda12.4"), "--format", "json"},
               &out, &err),
      0)
      << err;
  const nlohmann::json printed = nlohmann::json::parse(out);
  ASSERT_EQ(RunProbe({"--db", db, "collect", "--root", FixtureRoot("h100-cuda12.4")}, &out, &err),
            0)
      << err;
  struct stat st;
  ASSERT_EQ(::stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  Result<probe::FingerprintStore> store = probe::FingerprintStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  // A tree has no hostname: it is stored under its (real) root directory.
  ASSERT_FALSE(printed.contains("hostname") && printed["hostname"].is_string());
  const std::string host = "root:" + printed["collection"]["root"].get<std::string>();
  Result<std::vector<probe::StoredFingerprint>> rows = store->ForHost(host);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_LE((*rows)[0].collected_at, (*rows)[1].collected_at);
  // The stored document is the one printed.
  EXPECT_EQ(nlohmann::json::parse((*rows)[0].document), printed);
  Result<Fingerprint> back = ParseFingerprint((*rows)[0].document);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->collection.collected_at, (*rows)[0].collected_at);
  EXPECT_EQ(back->driver.version, "550.54.14");
  ASSERT_EQ(back->gpus.size(), 2u);
  EXPECT_EQ(back->gpus[0].uuid, "GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31");
  EXPECT_EQ(store->ForHost("other")->size(), 0u);
}

TEST(CollectCommandTest, CutoverDbEnvironmentVariableAlsoStores) {
  testing::TempDir dir;
  const std::string db = dir.Join("env.db");
  ScopedEnv env("CUTOVER_DB", db);
  std::string out, err;
  ASSERT_EQ(RunProbe({"--json", "collect", "--root", FixtureRoot("a100-cuda11.8")}, &out, &err), 0)
      << err;
  Result<Fingerprint> printed = ParseFingerprint(out);
  ASSERT_TRUE(printed.ok()) << printed.status().ToString();
  Result<probe::FingerprintStore> store = probe::FingerprintStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<std::vector<probe::StoredFingerprint>> rows =
      store->ForHost(probe::FingerprintStore::HostKey(*printed));
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].collected_at, printed->collection.collected_at);
}

TEST(CollectCommandTest, NothingIsWrittenWithoutDb) {
  testing::TempDir dir;
  ScopedEnv home("HOME", dir.path());
  ScopedEnv no_db("CUTOVER_DB", std::nullopt);
  std::string out, err;
  ASSERT_EQ(RunProbe({"collect", "--root", FixtureRoot("h100-cuda12.4")}, &out, &err), 0) << err;
  // Neither the default state file other tools fall back to, nor anything else under HOME.
  EXPECT_FALSE(Exists(ResolveDbPath(GlobalOptions{})));
  EXPECT_FALSE(Exists(dir.Join(".local")));
}

TEST(CollectCommandTest, UnusableDbIsAnErrorNamingTheFile) {
  testing::TempDir dir;
  const std::string db = dir.Join("not-a-db");
  {
    std::FILE* f = std::fopen(db.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("this is not a SQLite database, but long enough to have a header page\n", f);
    std::fclose(f);
  }
  std::string out, err;
  int rc = RunProbe({"--db", db, "collect", "--root", FixtureRoot("h100-cuda12.4")}, &out, &err);
  EXPECT_NE(rc, 0);
  EXPECT_EQ(err.rfind(db + ": ", 0), 0u) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace cutover
