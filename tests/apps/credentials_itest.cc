// Credentials never leave the process: every tool is run with one known test secret in the
// places a user puts credentials (AWS_* and token variables in the environment, a password in
// the Prometheus URL), against real servers (s3rver, HAProxy, Prometheus), and every file any
// of them wrote (logs, stdout, the SQLite state with its WAL, fingerprints, history, the four
// report files) is searched for the secret.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/canary/test_backend.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using namespace std::chrono_literals;

// Unique enough to grep for; s3rver checks the access key id, not the signature.
constexpr char kSecret[] = "cReD-7e5t-9a8b7c6d5e4f";

// Every regular file under `dir`, recursively.
void Files(const std::string& dir, std::vector<std::string>* out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string full = dir + "/" + n;
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) Files(full, out);
    if (S_ISREG(st.st_mode)) out->push_back(full);
  }
  ::closedir(d);
}

class CredentialsItest : public ::testing::Test {
 protected:
  // Runs the binary in `dir_/work` with the secret in its environment; output to `log`.
  int Run(const std::string& args, const std::string& log) {
    const std::string cmd =
        "cd " + dir_.Join("work") +
        " && umask 002 && env AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=" + kSecret +
        " HF_TOKEN=" + kSecret + " WANDB_API_KEY=" + kSecret + " DB_PASSWORD=" + kSecret +
        " CUTOVER_DB=" + dir_.Join("work/state.db") + " " + CUTOVER_TEST_CUTOVER_BIN + " " + args +
        " > " + dir_.Join("work/" + log) + " 2>&1";
    return testing::RunShell(cmd);
  }

  testing::TempDir dir_;
};

TEST_F(CredentialsItest, NoToolWritesTheSecretAnywhere) {
  testing::S3rver s3;
  Status ss = s3.Start();
  if (ss.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(ss.message());
  ASSERT_TRUE(ss.ok()) << ss.ToString();
  canary::testing::TestBackend s1("s1"), d1("d1");
  ASSERT_TRUE(s1.Start().ok());
  ASSERT_TRUE(d1.Start().ok());
  testing::Haproxy haproxy(
      testing::HaproxyOptions{.servers = {{"s1", s1.address(), 1}, {"d1", d1.address(), 0}}});
  Status hs = haproxy.Start();
  if (hs.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(hs.message());
  ASSERT_TRUE(hs.ok()) << hs.ToString();
  testing::Prometheus prometheus(testing::PrometheusOptions{
      .jobs = {{"haproxy", {"127.0.0.1:" + std::to_string(haproxy.metrics_port())}}}});
  Status ps = prometheus.Start();
  if (ps.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(ps.message());
  ASSERT_TRUE(ps.ok()) << ps.ToString();

  const std::string work = dir_.Join("work");
  ASSERT_TRUE(MakeDirs(work + "/src/d").ok());
  ASSERT_TRUE(WriteFileAtomic(work + "/src/d/a", std::string(200000, 'a')).ok());
  ASSERT_TRUE(WriteFileAtomic(work + "/src/b", "bytes").ok());

  // probe: the fingerprint records the environment, redacted.
  EXPECT_EQ(Run("probe collect --out fp.json", "probe.log"), 0);
  // datasync: every command that talks to the store, credentials from the environment.
  const std::string store = "s3://" + s3.bucket() + "/creds --s3-endpoint " + s3.url();
  EXPECT_EQ(Run("datasync check " + store, "check.log"), 0);
  EXPECT_EQ(Run("--progress json datasync push src " + store + " --name snap", "push.log"), 0);
  EXPECT_EQ(Run("datasync pull " + store + " --name snap dest", "pull.log"), 0);
  EXPECT_EQ(Run("datasync verify " + store + " --name snap dest", "verify.log"), 0);
  EXPECT_EQ(Run("--json datasync ls " + store, "ls.log"), 0);
  EXPECT_EQ(Run("datasync plan src " + store + " --json", "plan.json"), 0);
  EXPECT_EQ(Run("datasync history", "history.log"), 0);
  // canary: the Prometheus URL carries a password (Prometheus ignores it; a proxy in front of a
  // managed one would check it).
  std::string prom = prometheus.url();
  prom.insert(prom.find("://") + 3, std::string("cutover:") + kSecret + "@");
  const std::string count =
      "haproxy_server_http_responses_total{proxy=\"infer\",server=~\"{{servers}}\"";
  const std::string spec =
      "apiVersion: cutover/v1\nname: creds\n"
      "traffic: {provider: haproxy, socket: '" +
      haproxy.admin_socket() +
      "', backend: infer, baseline: [s1], canary: [d1]}\n"
      "metrics: {provider: prometheus, url: '" +
      prom +
      "', step: 1s, timeout: 1s}\n"
      "steps: [{weight: 50}, {weight: 100}]\n"
      "analysis:\n  interval: 3s\n  min_requests: 10\n"
      "  requests: 'sum(increase(" +
      count +
      "}[{{interval}}]))'\n"
      "  checks:\n    - name: error-rate\n"
      "      query: 'sum(increase(" +
      count + ",code=\"5xx\"}[{{interval}}])) / sum(increase(" + count +
      "}[{{interval}}]))'\n      max: 0.01\n";
  ASSERT_TRUE(WriteFileAtomic(work + "/spec.yaml", spec).ok());
  canary::testing::LoadGenerator load("http://127.0.0.1:" + std::to_string(haproxy.port()) + "/", 2,
                                      50);
  load.Start();
  // canary start's pre-flight asks every query for a baseline series: let Prometheus scrape
  // HAProxy under load first, as the canary itests' fixture does.
  Status up = canary::testing::WaitForTargetsUp(prometheus.url(), 1);
  ASSERT_TRUE(up.ok()) << up.ToString();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(Run("--log-level debug canary start spec.yaml", "canary.log"), 0)
      << ReadFile(work + "/canary.log").value_or("");
  load.Stop();
  EXPECT_EQ(Run("canary status --name creds", "status.log"), 0);
  EXPECT_EQ(Run("canary history --name creds --json --out history.json", "chist.log"), 0);
  // A Prometheus that is down: the error names the URL, without its password.
  std::string down = prom.substr(0, prom.rfind(':')) + ":9";
  std::string bad_spec = spec;
  bad_spec.replace(bad_spec.find(prom), prom.size(), down);
  bad_spec.replace(bad_spec.find("name: creds"), 11, "name: down");
  ASSERT_TRUE(WriteFileAtomic(work + "/down.yaml", bad_spec).ok());
  EXPECT_NE(Run("canary start down.yaml", "down.log"), 0);
  // assess: the report joins the fingerprint and the rollout (no-go on a host without a GPU:
  // exit 1, the report written all the same).
  EXPECT_LE(
      Run("assess --source fp.json --target fp.json --canary creds --out report", "assess.log"), 1)
      << ReadFile(work + "/assess.log").value_or("");
  for (const char* f : {"report.html", "report.md", "report.json", "junit.xml"}) {
    EXPECT_EQ(::access((work + "/report/" + f).c_str(), R_OK), 0) << f;
  }

  std::vector<std::string> files;
  Files(work, &files);
  int searched = 0;
  bool saw_redacted_url = false;
  for (const std::string& f : files) {
    // The test's own inputs hold the secret by design.
    if (f.rfind(work + "/src/", 0) == 0 || f.rfind(work + "/dest/", 0) == 0 ||
        f == work + "/spec.yaml" || f == work + "/down.yaml") {
      continue;
    }
    std::string text = ReadFile(f).value_or("");
    ++searched;
    EXPECT_EQ(text.find(kSecret), std::string::npos) << "the secret is in " << f;
    saw_redacted_url = saw_redacted_url || text.find("cutover:[REDACTED]@") != std::string::npos;
  }
  EXPECT_TRUE(saw_redacted_url) << "some output names the Prometheus URL, redacted";
  // The state (datasync's audit and cache, canary's rollouts, one file here) is private to its
  // owner even under a group-writable umask, and so are SQLite's -wal and -shm beside it.
  int state_files = 0;
  for (const std::string& f : files) {
    if (f.rfind(work + "/state.db", 0) != 0) continue;
    struct stat st;
    ASSERT_EQ(::stat(f.c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f << " has mode " << std::oct << (st.st_mode & 0777);
    ++state_files;
  }
  EXPECT_GE(state_files, 1);
  std::printf("state files with mode 0600: %d\n", state_files);
  EXPECT_GE(searched, 18);
  std::printf("files searched for the test credential: %d, found in none\n", searched);
  RecordProperty("credential_files_searched", searched);
}

}  // namespace
}  // namespace cutover
