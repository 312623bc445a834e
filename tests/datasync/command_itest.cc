// End-to-end tests of `cutover datasync push|pull` with a file:// store: the real binary, its
// output and its exit codes.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/time_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "tests/datasync/snapshot_keys.h"
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
  const std::string id = doc["id"];
  EXPECT_EQ(id.size(), 16u);
  std::string dest = dir_.Join("dest");
  ASSERT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dest, &out), 0) << out;
  EXPECT_EQ(out, "pulled snapshot snap " + id + " into " + dest + ": 21 files, 2 dirs, 1 symlinks, " +
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
  auto m = DecodeManifest(*(*fs)->Get(testing::NewestKey(**fs, "snap")));
  ASSERT_TRUE(m.ok());
  ChunkId victim{};
  for (const Entry& e : m->entries) {
    if (e.path == "a/big") victim = e.chunks[0].id;
  }
  ASSERT_TRUE((*fs)->Put(ChunkKey(victim), "garbage").ok());
  std::string dest = dir_.Join("dest");
  EXPECT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dest, &out), 1);
  EXPECT_EQ(out, "cutover: pull: 1 entry not restored: file a/big: chunk " + ToHex(victim) +
                     " is corrupt in the store (its SHA-256 does not match)\n");
  struct stat st;
  EXPECT_NE(::lstat((dest + "/a/big").c_str(), &st), 0);

  // A manifest written by hand (not by EncodeManifest, which refuses it) with an absolute path.
  std::string text = R"({"format":1,"name":"e","created_ns":0,"chunker":{"version":1,)"
                     R"("min":4096,"avg":16384,"max":131072},"hash":"sha256","entries":)"
                     R"([{"path":"/etc/x","type":"dir","mode":493,"mtime_ns":0}]})";
  // (where snapshots lay before ids: still read)
  ASSERT_EQ(testing::RunShell("mkdir -p " + dir_.Join("store/snapshots") + " && printf '%s' '" +
                              text + "' | zstd -q -c > " + dir_.Join("store/snapshots/evil")),
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

TEST_F(DatasyncCommandTest, GcDeletesWhatNoSnapshotNamesAndIsAudited) {
  std::string out;
  std::string db = " --db " + dir_.Join("state.db");
  ASSERT_EQ(RunCutover(PushArgs() + db, &out), 0) << out;
  std::mt19937_64 rng(10);
  std::string other(300000, '\0');
  for (auto& c : other) c = static_cast<char>(rng());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/a/big", other).ok());
  ASSERT_EQ(RunCutover(PushArgs() + db, &out), 0) << out;
  // Both pushes are snapshots of "snap": gc has nothing to delete until the first is forgotten.
  ASSERT_EQ(RunCutover("datasync gc " + store_ + " --dry-run --json" + db, &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out, nullptr, false)["would_delete_objects"], 0) << out;
  ASSERT_EQ(RunCutover("datasync forget " + store_ + " --name snap --keep-last 1", &out), 0)
      << out;  // the old big's chunks: orphans
  EXPECT_EQ(out.rfind("forgot ", 0), 0u) << out;

  ASSERT_EQ(RunCutover("datasync gc " + store_ + " --dry-run --json" + db, &out), 0) << out;
  auto plan = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(plan.is_discarded()) << out;
  EXPECT_EQ(plan["schema"], "cutover.datasync-gc/1");
  EXPECT_EQ(plan["dry_run"], true);
  EXPECT_GE(plan["would_delete_bytes"].get<uint64_t>(), 700000u);

  ASSERT_EQ(RunCutover("datasync gc " + store_ + " --json" + db, &out), 0) << out;
  auto done = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(done.is_discarded()) << out;
  EXPECT_EQ(done["deleted_objects"], plan["would_delete_objects"]);
  EXPECT_EQ(done["deleted_bytes"], plan["would_delete_bytes"]);
  EXPECT_EQ(done["missing_objects"], 0);
  ASSERT_EQ(RunCutover("datasync verify " + store_ + " --name snap", &out), 0) << out;
  ASSERT_EQ(RunCutover("datasync gc " + store_ + db, &out), 0) << out;
  EXPECT_EQ(out.rfind("gc deleted 0 unreferenced objects", 0), 0u) << out;

  ASSERT_EQ(RunCutover("datasync history --json" + db, &out), 0) << out;
  auto hist = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(hist.is_discarded()) << out;
  ASSERT_EQ(hist["transfers"].size(), 4u);  // two pushes, two gc runs; the dry run is not one
  EXPECT_EQ(hist["transfers"][0]["what"], "gc");
  EXPECT_EQ(hist["transfers"][1]["bytes"], done["deleted_bytes"]);

  EXPECT_EQ(RunCutover("datasync gc " + store_ + " --grace 5m" + db, &out), 2);
  EXPECT_EQ(out, "cutover: --grace 5m is under 15m (pushes refresh their lock every 5m)\n");
  // A live lock of another gc: this one refuses, in one line, and deletes nothing.
  ASSERT_TRUE(MakeDirs(dir_.Join("store/locks")).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_.Join("store/locks/gc-0123456789abcdef"),
                              R"({"kind":"gc","host":"elsewhere","pid":7,"created_ns":)" +
                                  std::to_string(time(nullptr)) + "000000000" +
                                  R"(,"refreshed_ns":)" + std::to_string(time(nullptr)) +
                                  "000000000}")
                  .ok());
  EXPECT_EQ(RunCutover("datasync gc " + store_ + db, &out), 2);
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  EXPECT_NE(out.find("locked by a running gc (locks/gc-0123456789abcdef from elsewhere pid 7"),
            std::string::npos)
      << out;
  EXPECT_EQ(RunCutover(PushArgs() + db, &out), 2);
  EXPECT_NE(out.find("locked by a running gc"), std::string::npos) << out;
}

TEST_F(DatasyncCommandTest, ShardedPushesMergeIntoOneSnapshot) {
  std::string out;
  std::string db = " --db " + dir_.Join("state.db");
  ASSERT_EQ(RunCutover(PushArgs() + " --shard 1/2" + db, &out), 0) << out;
  EXPECT_EQ(out.rfind("pushed part 1/2 of snapshot snap to " + store_ + ": ", 0), 0u) << out;
  EXPECT_NE(out.find("publish them: cutover datasync merge " + store_ + " --name snap\n"),
            std::string::npos)
      << out;
  // One part is not a snapshot, and merge says what is missing.
  EXPECT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dir_.Join("x"), &out), 2);
  EXPECT_EQ(RunCutover("datasync merge " + store_ + " --name snap" + db, &out), 2);
  EXPECT_EQ(out,
            "cutover: snapshot snap lacks part(s) 2 of 2: push them with --shard I/2 and merge "
            "again\n");
  ASSERT_EQ(RunCutover(PushArgs() + " --shard 2/2 --json" + db, &out), 0) << out;
  auto part = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(part.is_discarded()) << out;
  EXPECT_EQ(part["shard"]["index"], 2);
  EXPECT_EQ(part["shard"]["count"], 2);

  ASSERT_EQ(RunCutover("datasync ls " + store_ + " --json", &out), 0) << out;
  auto ls = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(ls.is_discarded()) << out;
  EXPECT_EQ(ls["snapshots"].size(), 0u);
  ASSERT_EQ(ls["parts"].size(), 2u);
  EXPECT_EQ(ls["parts"][0]["name"], "snap");
  EXPECT_EQ(ls["parts"][1]["index"], 2);
  EXPECT_EQ(ls["parts"][0]["files"].get<int>() + ls["parts"][1]["files"].get<int>(), 21);

  ASSERT_EQ(RunCutover("datasync merge " + store_ + " --name snap --dry-run" + db, &out), 0) << out;
  EXPECT_EQ(out.rfind("dry run: merging 2 parts would publish snapshot snap (21 files, ", 0), 0u)
      << out;
  ASSERT_EQ(RunCutover("datasync merge " + store_ + " --name snap --json" + db, &out), 0) << out;
  auto merged = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(merged.is_discarded()) << out;
  EXPECT_EQ(merged["schema"], "cutover.datasync-merge/1");
  EXPECT_EQ(merged["files"], 21);
  EXPECT_EQ(merged["dirs"], 2);
  EXPECT_EQ(merged["symlinks"], 1);
  EXPECT_EQ(merged["parts_removed"], 2);

  std::string dest = dir_.Join("dest");
  ASSERT_EQ(RunCutover("datasync pull " + store_ + " --name snap " + dest, &out), 0) << out;
  std::string diff;
  EXPECT_EQ(testing::RunShell("diff -r --no-dereference " + src_ + " " + dest, &diff), 0) << diff;
  ASSERT_EQ(RunCutover("datasync ls " + store_ + " --json", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["parts"].size(), 0u);

  ASSERT_EQ(RunCutover("datasync history --json" + db, &out), 0) << out;
  auto hist = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(hist.is_discarded()) << out;
  ASSERT_EQ(hist["transfers"].size(), 4u);  // two part pushes, the failed merge, the merge
  EXPECT_EQ(hist["transfers"][0]["what"], "merge");
  EXPECT_EQ(hist["transfers"][0]["result"], "ok");
  EXPECT_EQ(hist["transfers"][2]["what"], "merge");
  EXPECT_NE(hist["transfers"][2]["result"], "ok");
  EXPECT_EQ(hist["transfers"][3]["snapshot"], "snap part 1/2");

  EXPECT_EQ(RunCutover(PushArgs() + " --shard 3/2", &out), 2);
  EXPECT_EQ(out,
            "cutover: --shard: expected I/N with 1 <= I <= N <= 4096 (e.g. 2/4), got "
            "\"3/2\"\n");
}

}  // namespace
// A directory an earlier pull restored with mode 555 does not stop a re-pull run by its owner:
// it is made writable while its entries are written and gets mode 555 back. Root ignores mode
// 555, so the pulls run as an unprivileged user (setpriv) when the test runs as root.
TEST_F(DatasyncCommandTest, RepullIntoAReadOnlyDirectoryAsAnUnprivilegedUser) {
  ASSERT_TRUE(MakeDirs(src_ + "/ro").ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/ro/f", "version 1").ok());
  ASSERT_EQ(::chmod((src_ + "/ro").c_str(), 0555), 0);
  std::string out;
  ASSERT_EQ(RunCutover(PushArgs(), &out), 0) << out;
  std::string as_user;
  if (::geteuid() == 0) {
    if (::access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no setpriv to drop root";
    ASSERT_EQ(testing::RunShell("chown -R 65534:65534 " + dir_.path(), &out), 0) << out;
    as_user = "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups -- ";
  }
  const std::string dest = dir_.Join("dest");
  const std::string pull = as_user + "env CUTOVER_DB=" + dir_.Join("user.db") + " " + Bin() +
                           " datasync pull " + store_ + " --name snap " + dest + " 2>&1";
  ASSERT_EQ(testing::RunShell(pull, &out), 0) << out;
  struct stat st;
  ASSERT_EQ(::stat((dest + "/ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  ASSERT_EQ(::chmod((src_ + "/ro").c_str(), 0755), 0);
  ASSERT_TRUE(WriteFileAtomic(src_ + "/ro/f", "version 2, longer").ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/ro/g", "new").ok());
  ASSERT_EQ(::chmod((src_ + "/ro").c_str(), 0555), 0);
  ASSERT_EQ(RunCutover(PushArgs(), &out), 0) << out;
  ASSERT_EQ(testing::RunShell(pull, &out), 0) << out;
  EXPECT_EQ(ReadFile(dest + "/ro/f").value_or(""), "version 2, longer");
  EXPECT_EQ(ReadFile(dest + "/ro/g").value_or(""), "new");
  ASSERT_EQ(::stat((dest + "/ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  ASSERT_EQ(::chmod((src_ + "/ro").c_str(), 0755), 0);  // so the test directory can go
  ASSERT_EQ(::chmod((dest + "/ro").c_str(), 0755), 0);
}

TEST_F(DatasyncCommandTest, LsOfAUrlWithNoStoreExitsTwoSayingSo) {
  std::string out;
  const std::string none = "file://" + dir_.Join("nothing-here");
  EXPECT_EQ(RunCutover("datasync ls " + none, &out), 2) << out;
  EXPECT_EQ(out, "cutover: ls: no datasync store at " + none +
                     " (it has no config object; a first push makes one)\n");
}

// The snapshot series from the command line: every push a snapshot with its own id; snapshots,
// ls --id, diff, forget (by id, by --keep-last, --dry-run), pull and verify by --id; local times
// for people and RFC 3339 beside the nanoseconds in --json.
TEST_F(DatasyncCommandTest, SnapshotsForgetDiffAndLsIdWorkOnTheSeries) {
  std::string out, db = " --db " + dir_.Join("state.db");
  ASSERT_EQ(RunCutover(PushArgs() + db + " --json", &out), 0) << out;
  const std::string id1 = nlohmann::json::parse(out)["id"];
  ASSERT_TRUE(WriteFileAtomic(src_ + "/a/b/f3", "changed").ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/a/new", "added").ok());
  ASSERT_EQ(RunCutover(PushArgs() + db + " --json", &out), 0) << out;
  const std::string id2 = nlohmann::json::parse(out)["id"];
  ASSERT_NE(id1, id2);

  ASSERT_EQ(RunCutover("datasync snapshots " + store_ + " --json", &out), 0) << out;
  auto list = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << out;
  EXPECT_EQ(list["schema"], "cutover.datasync-snapshots/1");
  ASSERT_EQ(list["snapshots"].size(), 2u);
  EXPECT_EQ(list["snapshots"][0]["id"], id1);
  EXPECT_EQ(list["snapshots"][1]["id"], id2);
  for (const auto& snap : list["snapshots"]) {
    EXPECT_EQ(snap["name"], "snap");
    std::optional<double> t = ParseRfc3339(snap["created"].get<std::string>());
    ASSERT_TRUE(t.has_value()) << snap["created"];
    EXPECT_NEAR(*t, snap["created_ns"].get<double>() / 1e9, 1e-3);
  }
  ASSERT_EQ(RunCutover("datasync snapshots " + store_ + " --name snap", &out), 0) << out;
  EXPECT_EQ(out.rfind("ID\tNAME\tCREATED\n" + id1 + "\tsnap\t", 0), 0u) << out;
  EXPECT_NE(out.find("\n" + id2 + "\tsnap\t"), std::string::npos) << out;
  ASSERT_EQ(RunCutover("datasync ls " + store_ + " --json", &out), 0) << out;
  EXPECT_EQ(nlohmann::json::parse(out)["snapshots"].size(), 2u);

  ASSERT_EQ(RunCutover("datasync ls " + store_ + " --id " + id2.substr(0, 6), &out), 0) << out;
  EXPECT_EQ(out.rfind("TYPE\tMODE\tSIZE\tMODIFIED\tPATH\n", 0), 0u) << out;
  EXPECT_NE(out.find("file\t0644\t5\t"), std::string::npos) << out;  // a/new
  EXPECT_NE(out.find("\ta/new\n"), std::string::npos) << out;
  EXPECT_NE(out.find("dir\t"), std::string::npos) << out;
  EXPECT_NE(out.find("symlink\t"), std::string::npos) << out;

  ASSERT_EQ(RunCutover("datasync diff " + store_ + " " + id1 + " " + id2, &out), 0) << out;
  EXPECT_NE(out.find("+  a/new\n"), std::string::npos) << out;
  EXPECT_NE(out.find("M  a/b/f3\n"), std::string::npos) << out;
  EXPECT_NE(out.find(": 1 added, 0 removed, 1 changed, "), std::string::npos) << out;

  // Bad usage: one line, exit 2.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"forget " + store_, "forget: give --id ID... or --name NAME --keep-last K"},
           {"forget " + store_ + " --id " + id1 + " --name snap --keep-last 1",
            "forget: give --id ID... or --name NAME --keep-last K"},
           {"forget " + store_ + " --name snap", "forget: --name needs --keep-last K"},
           {"forget " + store_ + " --id zz", "bad snapshot id \"zz\""},
           {"pull " + store_ + " --name snap --id " + id1 + " " + dir_.Join("x"),
            "pull: give --name NAME"},
           {"verify " + store_, "verify: give --name NAME"},
           {"diff " + store_ + " " + id1 + " 0000000000000000",
            "diff: no snapshot with id 0000000000000000 in " + store_}}) {
    EXPECT_EQ(RunCutover("datasync " + args, &out), 2) << args << "\n" << out;
    EXPECT_NE(out.find(message), std::string::npos) << args << "\n" << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }

  ASSERT_EQ(RunCutover("datasync forget " + store_ + " --id " + id1 + " --dry-run", &out), 0);
  EXPECT_EQ(out.rfind("would forget " + id1 + "\tsnap\t", 0), 0u) << out;
  ASSERT_EQ(RunCutover("datasync verify " + store_ + " --id " + id1, &out), 0) << out;
  ASSERT_EQ(RunCutover("datasync forget " + store_ + " --id " + id1, &out), 0) << out;
  EXPECT_NE(out.find("run `cutover datasync gc " + store_ + "`"), std::string::npos) << out;
  EXPECT_EQ(RunCutover("datasync verify " + store_ + " --id " + id1, &out), 2) << out;
  EXPECT_EQ(out, "cutover: verify: no snapshot with id " + id1 + " in " + store_ + "\n");
  ASSERT_EQ(RunCutover("datasync forget " + store_ + " --name snap --keep-last 1", &out), 0);
  EXPECT_EQ(out, "nothing to forget\n");
  std::string dest = dir_.Join("dest");
  ASSERT_EQ(RunCutover("datasync pull " + store_ + " --id " + id2 + " " + dest + db, &out), 0)
      << out;
  EXPECT_EQ(ReadFile(dest + "/a/new").value_or(""), "added");

  // history: local times for people.
  ASSERT_EQ(RunCutover("datasync history" + db, &out), 0) << out;
  EXPECT_EQ(out.rfind("WHEN\tWHO\t", 0), 0u) << out;
  std::string first_row = out.substr(out.find('\n') + 1);
  first_row = first_row.substr(0, first_row.find('\t'));
  EXPECT_TRUE(ParseRfc3339(first_row).has_value()) << first_row;
}

}  // namespace cutover
