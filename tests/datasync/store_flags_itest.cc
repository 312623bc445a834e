// The store flags of the datasync CLI against real servers: --s3-endpoint (and AWS_ENDPOINT_URL)
// against s3rver, --cacert and --insecure against nginx WebDAV over TLS with a self-signed
// certificate, and `datasync check` against both. The known test credentials must appear in no
// output and no state file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "core/file_util.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::NginxDav;
using testing::S3rver;

// s3rver knows the access key id S3RVER and does not check signatures, so any secret works:
// this one is unique enough to grep for.
constexpr char kSecret[] = "tEsT-sEcReT-0f1e2d3c";

class StoreFlagsItest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_ + "/d").ok());
    std::mt19937_64 rng(5);
    std::string big(300000, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/d/big", big).ok());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/small", "hello").ok());
  }

  // Runs the binary with the test credentials and its own state file; stdout and stderr.
  int Run(const std::string& args, std::string* out, const std::string& env = "") {
    std::string cmd = "env AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=" + std::string(kSecret) +
                      " CUTOVER_DB=" + dir_.Join("state.db") + " " + env + " " +
                      CUTOVER_TEST_CUTOVER_BIN + " " + args;
    int rc = testing::RunShell(cmd, out);
    outputs_ += *out;
    return rc;
  }

  // Run(args) that must succeed; the seconds it took.
  double RunTimed(const std::string& args, std::string* out) {
    auto t0 = std::chrono::steady_clock::now();
    int rc = Run(args, out);
    EXPECT_EQ(rc, 0) << args << ":\n" << *out;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // SRC's d/big: 1.5 MB of random bytes, the payload of the --bwlimit tests.
  void WriteBig(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string big(1500000, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/d/big", big).ok());
  }

  void ExpectNoCredentialAnywhere() {
    EXPECT_EQ(outputs_.find(kSecret), std::string::npos) << outputs_;
    std::ifstream db(dir_.Join("state.db"), std::ios::binary);
    std::stringstream ss;
    ss << db.rdbuf();
    EXPECT_EQ(ss.str().find(kSecret), std::string::npos) << "the secret is in the state file";
  }

  testing::TempDir dir_;
  std::string src_;
  std::string outputs_;
};

TEST_F(StoreFlagsItest, S3EndpointFlagAndEnvironmentReachS3rver) {
  S3rver s3;
  Status s = s3.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string store = "s3://" + s3.bucket() + "/flags";
  const std::string ep = " --s3-endpoint " + s3.url();
  std::string out;

  ASSERT_EQ(Run("datasync check " + store + ep + " --sample 1MiB --json", &out), 0) << out;
  auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out;
  EXPECT_EQ(doc["schema"], "cutover.datasync-check/1");
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["config_present"], false);
  EXPECT_EQ(doc["steps"].size(), 8u);
  std::printf("s3rver check: latency %.2f ms, put %.1f MiB/s, get %.1f MiB/s\n",
              doc["latency_ms"].get<double>(),
              doc["steps"][2]["bytes_per_s"].get<double>() / (1 << 20),
              doc["steps"][4]["bytes_per_s"].get<double>() / (1 << 20));

  ASSERT_EQ(Run("datasync push " + src_ + " " + store + ep + " --name snap", &out), 0) << out;
  // The endpoint from the environment, as AWS's own tools read it.
  std::string dest = dir_.Join("dest");
  ASSERT_EQ(
      Run("datasync pull " + store + " --name snap " + dest, &out, "AWS_ENDPOINT_URL=" + s3.url()),
      0)
      << out;
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r " + src_ + " " + dest, &diff), 0) << diff;
  ASSERT_EQ(Run("datasync verify " + store + ep + " --name snap " + dest, &out), 0) << out;
  ASSERT_EQ(Run("datasync ls " + store + ep + " --json", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["snapshots"][0]["name"], "snap");
  // Now the store has a config; check says so, and left no probe behind.
  ASSERT_EQ(Run("datasync check " + store + ep + " --sample 64KiB --json", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["config_present"], true);
  EXPECT_EQ(nlohmann::json::parse(out)["snapshots"], 1);

  // Bad flags are usage errors.
  EXPECT_EQ(Run("datasync check " + store + " --s3-endpoint ftp://x", &out), 2) << out;
  EXPECT_NE(out.find("--s3-endpoint must be an http:// or https:// URL"), std::string::npos);
  EXPECT_EQ(Run("datasync check " + store + " --s3-virtual-host", &out), 2) << out;
  EXPECT_EQ(Run("datasync check " + store + ep + " --cacert /nonexistent.pem", &out), 2) << out;
  EXPECT_NE(out.find("--cacert /nonexistent.pem: cannot read the file"), std::string::npos);
  ExpectNoCredentialAnywhere();
}

TEST_F(StoreFlagsItest, SelfSignedWebDavIsRefusedUnlessItsCaIsGiven) {
  NginxDav dav({.tls = true});
  Status s = dav.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string store = dav.url() + "/store";
  std::string out;

  // No CA given: the certificate is not trusted; the check fails at its first step (exit 1) and
  // a push is an environment error (exit 3), both naming the certificate problem.
  EXPECT_EQ(Run("datasync check " + store, &out), 1) << out;
  EXPECT_NE(out.find("list\tfailed"), std::string::npos) << out;
  EXPECT_NE(out.find("certificate"), std::string::npos) << out;
  EXPECT_EQ(Run("datasync push " + src_ + " " + store + " --name snap", &out), 3) << out;
  EXPECT_NE(out.find("certificate"), std::string::npos) << out;

  // With its CA: every step passes, and a push and pull round-trip.
  const std::string ca = " --cacert " + dav.cert_path();
  ASSERT_EQ(Run("datasync check " + store + ca, &out), 0) << out;
  EXPECT_NE(out.find("store ok: "), std::string::npos) << out;
  ASSERT_EQ(Run("datasync push " + src_ + " " + store + ca + " --name snap", &out), 0) << out;
  std::string dest = dir_.Join("dest");
  ASSERT_EQ(Run("datasync pull " + store + ca + " --name snap " + dest, &out), 0) << out;
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r " + src_ + " " + dest, &diff), 0) << diff;

  // $SSL_CERT_FILE works as --cacert does; --insecure works and warns.
  ASSERT_EQ(Run("datasync ls " + store, &out, "SSL_CERT_FILE=" + dav.cert_path()), 0) << out;
  ASSERT_EQ(Run("datasync ls " + store + " --insecure", &out), 0) << out;
  EXPECT_NE(out.find("warning: --insecure"), std::string::npos) << out;
  ExpectNoCredentialAnywhere();
}

// --bwlimit caps push, pull and verify: 1.5 MB at 512 KiB/s over two transfers cannot take under
// about 2.9 s, whatever the machine; without the cap the same transfer is much faster.
TEST_F(StoreFlagsItest, BwlimitCapsPushPullAndVerify) {
  NginxDav dav;
  Status s = dav.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  WriteBig(9);
  const std::string store = dav.url() + "/bw";
  const std::string limit = " --jobs 2 --bwlimit 512KiB";
  std::string out;
  auto timed = [&](const std::string& args) { return RunTimed(args, &out); };
  double push = timed("datasync push " + src_ + " " + store + " --name snap" + limit);
  const std::string dest = dir_.Join("dest");
  double pull = timed("datasync pull " + store + " --name snap " + dest + limit);
  double verify = timed("datasync verify " + store + " --name snap" + limit);
  double free_pull = timed("datasync pull " + store + " --name snap " + dir_.Join("dest2"));
  std::printf(
      "1.5 MB at --bwlimit 512KiB: push %.2f s, pull %.2f s, verify %.2f s; "
      "pull without a limit %.2f s\n",
      push, pull, verify, free_pull);
  const double floor = 1500000.0 / (512 * 1024) * 0.8;  // libcurl averages; allow 20 %
  EXPECT_GE(push, floor);
  EXPECT_GE(pull, floor);
  EXPECT_GE(verify, floor);
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r " + src_ + " " + dest, &diff), 0) << diff;

  // A share under 1 KiB/s per transfer, or no bandwidth at all, is refused up front.
  EXPECT_EQ(
      Run("datasync pull " + store + " --name snap " + dest + " --bwlimit 4KiB --jobs 8", &out), 2)
      << out;
  EXPECT_NE(out.find("--bwlimit 4KiB leaves under 1 KiB/s to each of 8 transfers"),
            std::string::npos)
      << out;
  EXPECT_EQ(Run("datasync push " + src_ + " " + store + " --name x --bwlimit fast", &out), 2)
      << out;
  EXPECT_NE(out.find("fast"), std::string::npos) << out;
}

// A file:// store is capped too (it has no HTTP client to do it: the store is wrapped), also
// under --encrypt, and says nothing about it; without the cap the same push is much faster.
TEST_F(StoreFlagsItest, BwlimitCapsAFileStoreToo) {
  WriteBig(10);
  const std::string limit = " --jobs 2 --bwlimit 512KiB";
  std::string out;
  auto timed = [&](const std::string& args) {
    const double seconds = RunTimed(args, &out);
    EXPECT_EQ(out.find("warning"), std::string::npos) << out;
    return seconds;
  };
  const std::string store = "file://" + dir_.Join("fstore");
  double push = timed("datasync push " + src_ + " " + store + " --name snap" + limit);
  double pull = timed("datasync pull " + store + " --name snap " + dir_.Join("fdest") + limit);
  double free_push =
      timed("datasync push " + src_ + " file://" + dir_.Join("fstore2") + " --name snap");
  std::printf(
      "1.5 MB to file:// at --bwlimit 512KiB: push %.2f s, pull %.2f s; push without a "
      "limit %.2f s\n",
      push, pull, free_push);
  const double floor = 1500000.0 / (512 * 1024) * 0.8;
  EXPECT_GE(push, floor);
  EXPECT_GE(pull, floor);
  EXPECT_LT(free_push, floor);
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r " + src_ + " " + dir_.Join("fdest"), &diff), 0) << diff;
}

// push --dry-run chunks and dedups against the store but writes neither the store nor the
// state; the real push that follows uploads exactly what the dry run announced.
TEST_F(StoreFlagsItest, PushDryRunWritesNothingAndAnnouncesTheUpload) {
  NginxDav dav;
  Status s = dav.Start();
  if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
  ASSERT_TRUE(s.ok()) << s.ToString();
  const std::string store = dav.url() + "/dry";
  std::string out;
  ASSERT_EQ(Run("--json datasync push " + src_ + " " + store + " --name snap --dry-run", &out), 0)
      << out;
  auto dry = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(dry.is_discarded()) << out;
  EXPECT_EQ(dry["dry_run"], true);
  EXPECT_EQ(dry["uploaded_bytes"], 0);
  EXPECT_GT(dry["would_upload_bytes"].get<uint64_t>(), 300000u);
  struct stat st;
  EXPECT_NE(::stat((dav.root() + "/dry").c_str(), &st), 0) << "the dry run wrote to the store";
  ASSERT_EQ(Run("datasync history", &out), 0) << out;
  EXPECT_EQ(out.find("push"), std::string::npos) << "a dry run was audited:\n" << out;

  ASSERT_EQ(Run("--json datasync push " + src_ + " " + store + " --name snap", &out), 0) << out;
  auto real = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(real.is_discarded()) << out;
  EXPECT_EQ(real["uploaded_bytes"], dry["would_upload_bytes"]);
  EXPECT_EQ(real["uploaded_objects"], dry["would_upload_objects"]);
  // Against the now-full store, a dry run would send nothing.
  ASSERT_EQ(Run("datasync push " + src_ + " " + store + " --name snap2 --dry-run", &out), 0) << out;
  EXPECT_NE(out.find("would upload"), std::string::npos) << out;
  EXPECT_NE(out.find("nothing was written"), std::string::npos) << out;
}

}  // namespace
}  // namespace cutover
