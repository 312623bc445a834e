// End-to-end tests of `cutover datasync push|pull` with a file:// store: the real binary, its
// output and its exit codes.
#include <sys/stat.h>
#include <unistd.h>

#include <random>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

std::string Bin() { return CUTOVER_TEST_CUTOVER_BIN; }

int RunCutover(const std::string& args, std::string* out) {
  return testing::RunShell(Bin() + " " + args + " 2>&1", out);
}

class DatasyncCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    store_ = "file://" + dir_.Join("store");
    ASSERT_TRUE(MakeDirs(src_ + "/a/b").ok());
    std::mt19937_64 rng(9);
    std::string big(700000, '\0');
    for (auto& c : big) c = static_cast<char>(rng());
    ASSERT_TRUE(WriteFileAtomic(src_ + "/a/big", big).ok());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(
          WriteFileAtomic(src_ + "/a/b/f" + std::to_string(i), "x" + std::to_string(i), 0600).ok());
    }
    ASSERT_EQ(::symlink("a/big", (src_ + "/link").c_str()), 0);
  }

  std::string PushArgs() {
    return "datasync push " + src_ + " " + store_ +
           " --name snap --chunk-min 4096 --chunk-avg 16384 --chunk-max 131072";
  }

  testing::TempDir dir_;
  std::string src_;
  std::string store_;
};

TEST_F(DatasyncCommandTest, PushThenPullGivesAnIdenticalTree) {
  std::string out;
  ASSERT_EQ(RunCutover(PushArgs() + " --json", &out), 0) << out;
  auto doc = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out;
  EXPECT_EQ(doc["schema"], "cutover.datasync-push/1");
  EXPECT_EQ(doc["files"], 21);
  EXPECT_EQ(doc["symlinks"], 1);
  EXPECT_GT(doc["uploaded_objects"].get<int>(), 1);
  std::string dest = dir_.Join("dest");
  ASSERT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dest, &out), 0) << out;
  EXPECT_EQ(out, "pulled snapshot snap into " + dest + ": 21 files, 2 dirs, 1 symlinks, " +
                     std::to_string(700000 + 10 * 2 + 10 * 3) + " bytes\n");
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r --no-dereference " + src_ + " " + dest, &diff), 0) << diff;
  struct stat st;
  ASSERT_EQ(::stat((dest + "/a/b/f3").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);

  // A second push sends nothing.
  ASSERT_EQ(RunCutover(PushArgs() + " --json", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["uploaded_objects"], 0);
}

TEST_F(DatasyncCommandTest, CorruptChunkExitsOneAndUnsafeManifestExitsTwo) {
  std::string out;
  ASSERT_EQ(RunCutover(PushArgs(), &out), 0) << out;
  auto fs = FileStore::Open(store_);
  ASSERT_TRUE(fs.ok());
  auto m = DecodeManifest(*(*fs)->Get("snapshots/snap"));
  ASSERT_TRUE(m.ok());
  ChunkId victim{};
  for (const Entry& e : m->entries) {
    if (e.path == "a/big") victim = e.chunks[0].id;
  }
  ASSERT_TRUE((*fs)->Put(ChunkKey(victim), "garbage").ok());
  std::string dest = dir_.Join("dest");
  EXPECT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dest, &out), 1);
  EXPECT_EQ(out, "cutover: pull: file a/big: chunk " + ToHex(victim) +
                     " is corrupt in the store (its SHA-256 does not match)\n");
  struct stat st;
  EXPECT_NE(::lstat((dest + "/a/big").c_str(), &st), 0);

  // A manifest written by hand (not by EncodeManifest, which refuses it) with an absolute path.
  std::string text = R"({"format":1,"name":"e","created_ns":0,"chunker":{"version":1,)"
                     R"("min":4096,"avg":16384,"max":131072},"hash":"sha256","entries":)"
                     R"([{"path":"/etc/x","type":"dir","mode":493,"mtime_ns":0}]})";
  ASSERT_EQ(testing::RunShell("printf '%s' '" + text + "' | zstd -q -c > " +
                              dir_.Join("store/snapshots/evil")),
            0);
  EXPECT_EQ(RunCutover("datasync pull " + store_ + " --name evil " + dir_.Join("d2"), &out), 2);
  EXPECT_EQ(out, "cutover: pull: snapshot evil: manifest entry 0: path \"/etc/x\" is absolute\n");
}

TEST_F(DatasyncCommandTest, BadInputExitsTwo) {
  std::string out;
  EXPECT_EQ(RunCutover("datasync push " + src_ + " " + store_ + " --name s --chunk-avg 1000", &out),
            2);
  EXPECT_EQ(out, "cutover: chunker: avg size 1000 is not a power of two of at least 256 bytes\n");
  EXPECT_EQ(testing::RunShell("env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE "
                              "AWS_SHARED_CREDENTIALS_FILE=/nonexistent " +
                                  Bin() + " datasync push " + src_ + " s3://bucket/x --name s",
                              &out),
            2);
  EXPECT_EQ(out.rfind("cutover: no AWS credentials: set AWS_ACCESS_KEY_ID", 0), 0u) << out;
  EXPECT_EQ(RunCutover("datasync pull " + store_ + " --name nope " + dir_.Join("d"), &out), 2);
  EXPECT_EQ(out, "cutover: pull: no snapshot nope in " + store_ + "\n");
  EXPECT_EQ(RunCutover("datasync verify " + store_ + " --name s", &out), 2);
}

}  // namespace
}  // namespace cutover
