// Crash consistency of `cutover datasync push` and `pull`: the real binary is killed with SIGKILL
// at a failpoint (core/failpoint.h) after its N-th store write, SQLite commit or file fsync, for
// every N in turn on a small tree and at random points on a larger one, then run again. After
// every kill and every restart the invariants are checked:
//   - a snapshot in the store never names a missing or corrupt chunk (`datasync verify` passes
//     whenever the snapshot exists), and every stored chunk or pack hashes to its key;
//   - a killed pull leaves every file under its final name either as it was or complete (never
//     partial);
//   - the restarted push and pull finish, and the restored tree is byte-identical to the source
//     (contents, modes, mtimes, symlinks), with no temporary file left behind.
// The number of kill points tried is printed and recorded as a test property.
//
// Disk full: push into a store and pull into a directory on a small tmpfs (mounted in a private
// mount namespace made by the test) fail with one clear line and exit 3, and leave the previous
// snapshot and the previous files intact.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/hash.h"
#include "datasync/snapshots.h"
#include "tests/datasync/tree.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::MakeTree;
using testing::RandomBytes;
using testing::Tree;

std::string Bin() { return CUTOVER_TEST_CUTOVER_BIN; }

struct Outcome {
  bool killed = false;  // ended by SIGKILL (the failpoint fired)
  int exit_code = -1;   // when it exited
  std::string output;   // stdout and stderr
};

// Runs the cutover binary with `args`, CUTOVER_FAILPOINTS set to `failpoints` (unset when empty),
// its output in `log_path` (replaced).
Outcome RunCutover(const std::vector<std::string>& args, const std::string& failpoints,
                   const std::string& log_path) {
  Outcome run;
  std::vector<std::string> argv = {Bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  ::unlink(log_path.c_str());
  if (!failpoints.empty()) ::setenv("CUTOVER_FAILPOINTS", failpoints.c_str(), 1);
  testing::ChildProcess child;
  Status spawned = child.Spawn(argv, log_path);
  ::unsetenv("CUTOVER_FAILPOINTS");
  if (!spawned.ok()) {
    run.output = spawned.ToString();
    return run;
  }
  while (child.Running()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::string& how = child.exit_description();  // "exit N" | "signal N"
  run.killed = how == "signal 9";
  if (how.rfind("exit ", 0) == 0) run.exit_code = std::stoi(how.substr(5));
  run.output = ReadFile(log_path).value_or("");
  return run;
}

// Pull's private directory of temporaries (datasync/pull.h) and what it holds.
bool IsTemp(const std::string& path) { return path.starts_with(".cutover-pull"); }

// The seed of a test's random kill points: a new one each run, CUTOVER_CRASH_SEED repeats one;
// failures name it.
unsigned CrashSeed() {
  const char* env_seed = std::getenv("CUTOVER_CRASH_SEED");
  return env_seed != nullptr ? static_cast<unsigned>(std::strtoul(env_seed, nullptr, 10))
                             : static_cast<unsigned>(::time(nullptr));
}

// Runs the cutover binary with `args` and sends it SIGKILL after `delay`; true when the signal
// ended it (false when it had exited first: then it must have succeeded).
bool RunCutoverKilledAfter(const std::vector<std::string>& args, std::chrono::microseconds delay,
                           const std::string& log_path) {
  std::vector<std::string> argv = {Bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  ::unlink(log_path.c_str());
  testing::ChildProcess child;
  Status spawned = child.Spawn(argv, log_path);
  EXPECT_TRUE(spawned.ok()) << spawned.ToString();
  if (!spawned.ok()) return false;
  const auto until = std::chrono::steady_clock::now() + delay;
  while (child.Running() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  if (child.Running()) child.Signal(SIGKILL);
  while (child.Running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (child.exit_description() == "signal 9") return true;
  EXPECT_EQ(child.exit_description(), "exit 0") << ReadFile(log_path).value_or("");
  return false;
}

// The temporaries under `dir` (names starting with '.', any depth): path -> size.
std::map<std::string, uint64_t> Temporaries(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    if (::lstat((dir + "/" + n).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      for (auto& [k, v] : Temporaries(dir + "/" + n)) out[n + "/" + k] = v;
    } else if (n[0] == '.') {
      out[n] = static_cast<uint64_t>(st.st_size);
    }
  }
  ::closedir(d);
  return out;
}

// Every object of a file:// store: key -> bytes (temporaries, whose names start with '.', left
// out: the store lists them for no one).
std::map<std::string, std::string> StoreObjects(const std::string& dir, const std::string& rel) {
  std::map<std::string, std::string> out;
  DIR* d = ::opendir((rel.empty() ? dir : dir + "/" + rel).c_str());
  if (d == nullptr) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.empty() || n[0] == '.') continue;
    std::string key = rel.empty() ? n : rel + "/" + n;
    struct stat st;
    if (::lstat((dir + "/" + key).c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      out.merge(StoreObjects(dir, key));
    } else {
      out[key] = ReadFile(dir + "/" + key).value_or("");
    }
  }
  ::closedir(d);
  return out;
}

class DatasyncCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(Bin().c_str(), X_OK) != 0) CUTOVER_SKIP_OR_FAIL("cutover binary not built");
  }

  std::vector<std::string> PushArgs(const std::string& src, const std::string& store,
                                    const std::string& db, const std::string& name) {
    return {"--db",
            db,
            "-q",
            "datasync",
            "push",
            src,
            "file://" + store,
            "--name",
            name,
            "--chunk-min",
            "4096",
            "--chunk-avg",
            "16384",
            "--chunk-max",
            "131072",
            "--jobs",
            "4"};
  }
  std::vector<std::string> PullArgs(const std::string& store, const std::string& db,
                                    const std::string& name, const std::string& dest) {
    return {"--db",   db,   "-q", "datasync", "pull", "file://" + store,
            "--name", name, dest, "--jobs",   "4"};
  }

  // The store invariants after a kill: stored objects hash to their keys; a published snapshot
  // verifies.
  void ExpectStoreConsistent(const std::string& store, const std::string& db,
                             const std::string& name, const std::string& context) {
    for (const auto& [key, bytes] : StoreObjects(store, "")) {
      if (key.rfind("chunks/", 0) == 0 || key.rfind("packs/", 0) == 0) {
        EXPECT_EQ(key.substr(key.rfind('/') + 1), ToHex(Sha256Of(bytes)))
            << context << ": " << key << " does not hash to its key";
      }
    }
    auto fs = FileStore::Open("file://" + store);
    if (fs.ok() && NewestSnapshot(**fs, name).ok()) {
      Outcome v = RunCutover({"--db", db, "datasync", "verify", "file://" + store, "--name", name},
                             "", dir_.Join("verify.log"));
      EXPECT_EQ(v.exit_code, 0) << context << ": a published snapshot fails verify:\n" << v.output;
    }
  }

  // Restores `name` into a fresh directory and expects it equal to `src`.
  void ExpectRestoresTo(const std::string& store, const std::string& db, const std::string& name,
                        const std::string& src, const std::string& context) {
    std::string dest = dir_.Join("restore");
    ASSERT_EQ(RunShell("rm -rf " + dest), 0);
    Outcome pull = RunCutover(PullArgs(store, db, name, dest), "", dir_.Join("restore.log"));
    ASSERT_EQ(pull.exit_code, 0) << context << ":\n" << pull.output;
    EXPECT_EQ(Tree(dest), Tree(src)) << context;
  }

  int RunShell(const std::string& cmd) { return testing::RunShell(cmd); }

  testing::TempDir dir_;
};

TEST_F(DatasyncCrashTest, PushKilledAfterEveryStoreWriteAndCommitResumesToAnIdenticalRestore) {
  const std::string src = dir_.Join("src");
  MakeTree(src, 3, 150000, 12, 0);
  int tried = 0;
  // Each point with the fewest hits a push must make: one Put per chunk, pack, config and
  // manifest; one explicit SQLite transaction (the file cache) beside autocommitted journal rows.
  const std::vector<std::pair<std::string, int>> points = {{"store.put.after", 20},
                                                           {"sqlite.commit.after", 1}};
  for (const auto& [point, min_hits] : points) {
    for (int n = 1;; ++n) {
      const std::string context = point + " #" + std::to_string(n);
      const std::string store = dir_.Join("store");
      const std::string db = dir_.Join("state.db");
      ASSERT_EQ(RunShell("rm -rf " + store + " " + db + "*"), 0);
      Outcome killed =
          RunCutover(PushArgs(src, store, db, "snap"),
                     point + ":after=" + std::to_string(n) + ":kill", dir_.Join("push1.log"));
      if (!killed.killed) {
        // Fewer than n hits: the push ran to the end.
        ASSERT_EQ(killed.exit_code, 0) << context << ":\n" << killed.output;
        ASSERT_GT(n, min_hits) << point << " was hit too rarely to test anything";
        break;
      }
      ++tried;
      ExpectStoreConsistent(store, db, "snap", context + " (after the kill)");
      Outcome again = RunCutover(PushArgs(src, store, db, "snap"), "", dir_.Join("push2.log"));
      ASSERT_EQ(again.exit_code, 0) << context << " (restarted):\n" << again.output;
      ExpectStoreConsistent(store, db, "snap", context + " (restarted)");
      ExpectRestoresTo(store, db, "snap", src, context);
      if (HasFailure()) return;
    }
  }
  std::printf("push kill points tried: %d\n", tried);
  RecordProperty("push_kill_points", tried);
}

TEST_F(DatasyncCrashTest, PullKilledAfterEveryFileFsyncLeavesOldOrNewFilesThenCompletes) {
  const std::string v1 = dir_.Join("v1"), v2 = dir_.Join("v2");
  MakeTree(v1, 3, 150000, 12, 0);
  MakeTree(v2, 3, 150000, 12, 1);
  const std::string store = dir_.Join("store"), db = dir_.Join("state.db");
  ASSERT_EQ(RunCutover(PushArgs(v1, store, db, "v1"), "", dir_.Join("p.log")).exit_code, 0);
  ASSERT_EQ(RunCutover(PushArgs(v2, store, db, "v2"), "", dir_.Join("p.log")).exit_code, 0);
  const auto old_tree = Tree(v1), new_tree = Tree(v2);
  ASSERT_NE(old_tree, new_tree);
  int tried = 0;
  for (const std::string point : {"pull.file.after_fsync", "pull.file.before_rename"}) {
    for (int n = 1;; ++n) {
      const std::string context = point + " #" + std::to_string(n);
      const std::string dest = dir_.Join("dest");
      ASSERT_EQ(RunShell("rm -rf " + dest), 0);
      // DEST holds version 1; the killed pull is bringing it to version 2.
      ASSERT_EQ(RunCutover(PullArgs(store, db, "v1", dest), "", dir_.Join("l.log")).exit_code, 0);
      Outcome killed =
          RunCutover(PullArgs(store, db, "v2", dest),
                     point + ":after=" + std::to_string(n) + ":kill", dir_.Join("pull1.log"));
      if (!killed.killed) {
        ASSERT_EQ(killed.exit_code, 0) << context << ":\n" << killed.output;
        ASSERT_GT(n, 5) << point << " was hit too rarely to test anything";
        break;
      }
      ++tried;
      for (const auto& [path, desc] : Tree(dest)) {
        if (IsTemp(path)) continue;
        auto o = old_tree.find(path), w = new_tree.find(path);
        ASSERT_NE(w, new_tree.end()) << context << ": " << path << " is in neither version";
        // Directories keep version 1's attributes until the pull's last step.
        if (S_ISDIR(std::stoul(desc))) continue;
        bool is_old = o != old_tree.end() && o->second == desc;
        EXPECT_TRUE(is_old || w->second == desc) << context << ": " << path << " is partial";
      }
      Outcome again = RunCutover(PullArgs(store, db, "v2", dest), "", dir_.Join("pull2.log"));
      ASSERT_EQ(again.exit_code, 0) << context << " (restarted):\n" << again.output;
      EXPECT_EQ(Tree(dest), new_tree) << context << ": the restarted pull differs or left litter";
      if (HasFailure()) return;
    }
  }
  std::printf("pull kill points tried: %d\n", tried);
  RecordProperty("pull_kill_points", tried);
}

// A larger tree, killed at random store writes again and again: each restart resumes the last.
TEST_F(DatasyncCrashTest, PushKilledAtRandomPointsRepeatedlyStillPublishesACompleteSnapshot) {
  const std::string src = dir_.Join("src");
  MakeTree(src, 12, 2 << 20, 200, 0);
  const std::string scratch = dir_.Join("scratch"), scratch_db = dir_.Join("scratch.db");
  ASSERT_EQ(
      RunCutover(PushArgs(src, scratch, scratch_db, "snap"), "", dir_.Join("s.log")).exit_code, 0);
  const size_t writes = StoreObjects(scratch, "").size();  // one Put per object
  ASSERT_GT(writes, 50u);
  ASSERT_EQ(RunShell("rm -rf " + scratch + " " + scratch_db + "*"), 0);

  const unsigned seed = CrashSeed();
  std::mt19937 rng(seed);
  const std::string store = dir_.Join("store"), db = dir_.Join("state.db");
  int kills = 0;
  for (int round = 0; round < 10; ++round) {
    const int n = std::uniform_int_distribution<int>(1, static_cast<int>(writes) / 10)(rng);
    const std::string context = "seed " + std::to_string(seed) + " round " + std::to_string(round) +
                                " store.put.after #" + std::to_string(n);
    Outcome r =
        RunCutover(PushArgs(src, store, db, "snap"),
                   "store.put.after:after=" + std::to_string(n) + ":kill", dir_.Join("push.log"));
    if (!r.killed) {
      ASSERT_EQ(r.exit_code, 0) << context << ":\n" << r.output;
      break;
    }
    ++kills;
    ExpectStoreConsistent(store, db, "snap", context);
    if (HasFailure()) return;
  }
  Outcome last = RunCutover(PushArgs(src, store, db, "snap"), "", dir_.Join("push.log"));
  ASSERT_EQ(last.exit_code, 0) << last.output;
  ExpectStoreConsistent(store, db, "snap", "seed " + std::to_string(seed) + " final");
  ExpectRestoresTo(store, db, "snap", src, "seed " + std::to_string(seed));
  std::printf("random kill points survived: %d of %zu store writes (seed %u)\n", kills, writes,
              seed);
  RecordProperty("random_kill_points", kills);
}

// kill -9 from a timer, at moments drawn uniformly over a whole run (start-up included), 20
// times during a first push and 20 times during a first pull; each killed run is then run again
// to its end. The bound of what a resumed run sends (or fetches) again is what the killed run had
// in flight: --jobs x --chunk-max bytes.
TEST_F(DatasyncCrashTest, PushAndPullKilledAtRandomMomentsResumeWithinTheInFlightBound) {
  constexpr int kKills = 20;
  constexpr uint64_t kBound = 4 * 131072;  // PushArgs/PullArgs: --jobs 4, --chunk-max 131072
  const std::string src = dir_.Join("src");
  MakeTree(src, 8, 1 << 20, 100, 0);
  const auto src_tree = Tree(src);

  // How long one whole push and pull take here: the range the kill moments are drawn from.
  const std::string scratch = dir_.Join("scratch"), scratch_db = dir_.Join("scratch.db");
  std::vector<std::string> scratch_push = PushArgs(src, scratch, scratch_db, "snap");
  scratch_push.push_back("--json");
  auto t0 = std::chrono::steady_clock::now();
  Outcome first = RunCutover(scratch_push, "", dir_.Join("s.log"));
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const uint64_t total = nlohmann::json::parse(first.output)["bytes"].get<uint64_t>();
  ASSERT_EQ(
      RunCutover(PullArgs(scratch, scratch_db, "snap", dir_.Join("sdest")), "", dir_.Join("s.log"))
          .exit_code,
      0);
  auto t2 = std::chrono::steady_clock::now();
  const auto push_us = std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count();
  const auto pull_us = std::chrono::duration_cast<std::chrono::microseconds>(t2 - t1).count();

  const unsigned seed = CrashSeed();
  std::mt19937 rng(seed);
  const std::string store = dir_.Join("store"), db = dir_.Join("state.db");

  int push_kills = 0;
  for (int attempt = 0; push_kills < kKills && attempt < 4 * kKills; ++attempt) {
    ASSERT_EQ(RunShell("rm -rf " + store + " " + db + "*"), 0);
    const auto delay =
        std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, push_us)(rng));
    const std::string context = "seed " + std::to_string(seed) + " push killed after " +
                                std::to_string(delay.count()) + " us";
    if (!RunCutoverKilledAfter(PushArgs(src, store, db, "snap"), delay, dir_.Join("k.log"))) {
      continue;  // it finished first
    }
    ++push_kills;
    // What the killed push had in flight is what its store writes left half done.
    uint64_t in_flight = 0;
    for (const auto& [name, size] : Temporaries(store)) in_flight += size;
    EXPECT_LE(in_flight, kBound) << context;
    ExpectStoreConsistent(store, db, "snap", context);
    const auto before = StoreObjects(store, "");
    std::vector<std::string> args = PushArgs(src, store, db, "snap");
    args.push_back("--json");
    Outcome resumed = RunCutover(args, "", dir_.Join("r.log"));
    ASSERT_EQ(resumed.exit_code, 0) << context << ":\n" << resumed.output;
    auto doc = nlohmann::json::parse(resumed.output, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << resumed.output;
    // Everything the resumed push uploaded is new to the store: nothing the killed one had
    // stored is sent again.
    uint64_t added = 0;
    for (const auto& [key, bytes] : StoreObjects(store, "")) {
      if ((key.rfind("chunks/", 0) == 0 || key.rfind("packs/", 0) == 0) && before.count(key) == 0) {
        added += bytes.size();
      }
    }
    EXPECT_EQ(doc["uploaded_bytes"].get<uint64_t>(), added) << context;
    ExpectStoreConsistent(store, db, "snap", context + " (resumed)");
    ExpectRestoresTo(store, db, "snap", src, context);
    if (HasFailure()) return;
  }
  EXPECT_EQ(push_kills, kKills) << "the push ended before the timer too often (seed " << seed
                                << ")";

  int pull_kills = 0;
  const std::string dest = dir_.Join("dest");
  for (int attempt = 0; pull_kills < kKills && attempt < 4 * kKills; ++attempt) {
    ASSERT_EQ(RunShell("rm -rf " + dest), 0);
    const auto delay =
        std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, pull_us)(rng));
    const std::string context = "seed " + std::to_string(seed) + " pull killed after " +
                                std::to_string(delay.count()) + " us";
    if (!RunCutoverKilledAfter(PullArgs(scratch, scratch_db, "snap", dest), delay,
                               dir_.Join("k.log"))) {
      continue;
    }
    ++pull_kills;
    // Files under their final names are whole; the rest of what DEST holds is in temporaries.
    uint64_t whole = 0, partial = 0;
    const bool started = ::access(dest.c_str(), F_OK) == 0;  // not when killed before mkdir
    for (const auto& [path, desc] : started ? Tree(dest) : std::map<std::string, std::string>{}) {
      if (IsTemp(path)) continue;
      auto want = src_tree.find(path);
      ASSERT_NE(want, src_tree.end()) << context << ": " << path;
      if (S_ISREG(std::stoul(desc))) {
        EXPECT_EQ(desc, want->second) << context << ": " << path << " is partial";
        whole += ReadFile(dest + "/" + path).value_or("").size();
      }
    }
    for (const auto& [name, size] : Temporaries(dest)) partial += size;
    std::vector<std::string> args = PullArgs(scratch, scratch_db, "snap", dest);
    args.push_back("--json");
    Outcome resumed = RunCutover(args, "", dir_.Join("r.log"));
    ASSERT_EQ(resumed.exit_code, 0) << context << ":\n" << resumed.output;
    auto doc = nlohmann::json::parse(resumed.output, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << resumed.output;
    // It fetches what DEST lacks, and again at most a chunk per worker of what the killed pull
    // had written.
    EXPECT_LE(doc["downloaded_bytes"].get<uint64_t>(), total - whole - partial + kBound)
        << context << " (DEST held " << whole << " bytes in place, " << partial
        << " in temporaries)";
    EXPECT_EQ(Tree(dest), src_tree) << context;
    Outcome v = RunCutover(
        {"--db", scratch_db, "datasync", "verify", "file://" + scratch, "--name", "snap", dest}, "",
        dir_.Join("verify.log"));
    EXPECT_EQ(v.exit_code, 0) << context << ":\n" << v.output;
    if (HasFailure()) return;
  }
  EXPECT_EQ(pull_kills, kKills) << "the pull ended before the timer too often (seed " << seed
                                << ")";
  std::printf("random moments killed: %d pushes, %d pulls (seed %u)\n", push_kills, pull_kills,
              seed);
}

TEST_F(DatasyncCrashTest, DiskFullIsOneClearLineAndKeepsThePreviousState) {
  // As root a mount namespace is enough; otherwise a user namespace as well (tmpfs may be
  // mounted there).
  std::string unshare = "unshare -m";
  if (RunShell(unshare + " true") != 0) unshare = "unshare -r -m";
  if (RunShell(unshare + " true") != 0) {
    CUTOVER_SKIP_OR_FAIL("cannot make a mount namespace (unshare -m, unshare -r -m) for a tmpfs");
  }
  const std::string v1 = dir_.Join("v1"), v2 = dir_.Join("v2");
  MakeTree(v1, 3, 150000, 12, 0);
  MakeTree(v2, 3, 150000, 12, 1);
  std::mt19937_64 rng(5);
  ASSERT_TRUE(WriteFileAtomic(v2 + "/data/huge.bin", RandomBytes(rng, 3 << 20)).ok());
  const std::string store = dir_.Join("store"), db = dir_.Join("state.db");
  ASSERT_EQ(RunCutover(PushArgs(v1, store, db, "v1"), "", dir_.Join("p.log")).exit_code, 0);
  ASSERT_EQ(RunCutover(PushArgs(v2, store, db, "v2"), "", dir_.Join("p.log")).exit_code, 0);
  auto join = [](const std::vector<std::string>& args) {
    std::string out = Bin();
    for (const std::string& a : args) out += " '" + a + "'";
    return out;
  };
  // In a private mount namespace: a 1.5 MB tmpfs as a pull destination and as a store. Version
  // 1 (0.5 MB) fits, version 2 (3.5 MB) does not. What the test checks is copied out.
  const std::string mnt = dir_.Join("mnt"), out = dir_.Join("out");
  ASSERT_TRUE(MakeDirs(mnt).ok());
  ASSERT_TRUE(MakeDirs(out).ok());
  const std::string script =
      "set -u\n"
      "mount -t tmpfs -o size=1500k tmpfs " +
      mnt + " || exit 90\n" + join(PullArgs(store, db, "v1", mnt + "/dest")) + " > " + out +
      "/pull1.log 2>&1 || exit 91\n" + join(PullArgs(store, db, "v2", mnt + "/dest")) + " > " +
      out + "/pull2.log 2>&1\n" + "echo $? > " + out + "/pull2.rc\n" + "cp -a " + mnt + "/dest " +
      out + "/dest\n" + "rm -rf " + mnt + "/dest\n" +
      join(PushArgs(v1, mnt + "/store", out + "/push.db", "v1")) + " > " + out +
      "/push1.log 2>&1 || exit 92\n" + join(PushArgs(v2, mnt + "/store", out + "/push.db", "v2")) +
      " > " + out + "/push2.log 2>&1\n" + "echo $? > " + out + "/push2.rc\n" +
      join({"--db", out + "/push.db", "datasync", "verify", "file://" + mnt + "/store", "--name",
            "v1"}) +
      " > " + out + "/verify.log 2>&1\n" + "echo $? > " + out + "/verify.rc\n" + "ls " + mnt +
      "/store/snap > " + out + "/snapshots\n";
  ASSERT_TRUE(WriteFileAtomic(dir_.Join("full.sh"), script).ok());
  std::string log;
  ASSERT_EQ(testing::RunShell(unshare + " sh " + dir_.Join("full.sh") + " 2>&1", &log), 0) << log;
  auto text = [&](const std::string& name) { return ReadFile(out + "/" + name).value_or(""); };

  // The pull: exit 3, one line naming the cause; every file as it was or complete; no litter.
  EXPECT_EQ(text("pull2.rc"), "3\n") << text("pull2.log");
  const std::string pull_err = text("pull2.log");
  EXPECT_NE(pull_err.find("No space left on device"), std::string::npos) << pull_err;
  EXPECT_EQ(std::count(pull_err.begin(), pull_err.end(), '\n'), 1) << pull_err;
  const auto old_tree = Tree(v1), new_tree = Tree(v2);
  for (const auto& [path, desc] : Tree(out + "/dest")) {
    EXPECT_FALSE(IsTemp(path)) << path << " left behind";
    auto o = old_tree.find(path), w = new_tree.find(path);
    if (S_ISDIR(std::stoul(desc))) continue;
    bool is_old = o != old_tree.end() && o->second == desc;
    bool is_new = w != new_tree.end() && w->second == desc;
    EXPECT_TRUE(is_old || is_new) << path << " is partial after the disk filled";
  }
  // The push: exit 3, one line; version 1 still verifies and version 2 was not published.
  EXPECT_EQ(text("push2.rc"), "3\n") << text("push2.log");
  const std::string push_err = text("push2.log");
  EXPECT_NE(push_err.find("No space left on device"), std::string::npos) << push_err;
  EXPECT_EQ(std::count(push_err.begin(), push_err.end(), '\n'), 1) << push_err;
  EXPECT_EQ(text("verify.rc"), "0\n") << text("verify.log");
  EXPECT_EQ(text("snapshots"), "v1\n");
  std::printf("pull: %s", pull_err.c_str());
  std::printf("push: %s", push_err.c_str());
  std::printf("disk-full faults injected: 2 (pull destination, file store), nothing lost\n");
}

}  // namespace
}  // namespace cutover
