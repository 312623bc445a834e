// gc and store locks over a file:// store: what goes, what stays, and the lock rules that keep a
// concurrent push safe.
#include "datasync/gc.h"

#include <atomic>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "core/process_identity.h"
#include "datasync/file_store.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/snapshots.h"
#include "datasync/state.h"
#include "datasync/store_lock.h"
#include "datasync/verify.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

int64_t RealNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class GcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }

  // A tree of one 1 MiB file and 20 small ones, all bytes drawn from `seed`.
  std::string MakeTree(const std::string& name, uint64_t seed) {
    std::string src = dir_.Join(name);
    EXPECT_TRUE(MakeDirs(src + "/small").ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/big-" + name, Random(1 << 20, seed)).ok());
    for (int i = 0; i < 20; ++i) {
      EXPECT_TRUE(
          WriteFileAtomic(src + "/small/" + name + std::to_string(i), Random(300, seed * 100 + i))
              .ok());
    }
    return src;
  }

  // forget --name NAME --keep-last 1.
  void ForgetAllButNewest(const std::string& name) {
    auto doomed = SnapshotsBeyondLast(*store_, name, 1);
    ASSERT_TRUE(doomed.ok()) << doomed.status().ToString();
    for (const SnapshotRef& r : *doomed) ASSERT_TRUE(store_->Delete(r.key).ok());
  }

  PushResult PushOk(const std::string& src, const std::string& name,
                    DatasyncState* state = nullptr) {
    PushOptions o;
    o.name = name;
    o.chunker = ChunkerParams{4096, 16384, 131072};
    o.jobs = 4;
    o.state = state;
    auto r = Push(src, *store_, o);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : PushResult{};
  }

  uint64_t Count(const std::string& prefix) {
    uint64_t n = 0;
    EXPECT_TRUE(store_
                    ->List(prefix,
                           [&n](std::string_view, uint64_t) {
                             ++n;
                             return Status::Ok();
                           })
                    .ok());
    return n;
  }

  void ExpectVerifies(const std::string& name) {
    auto v = Verify(*store_, name, "", 4);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_TRUE(v->failures.empty()) << v->failures.front();
  }

  testing::TempDir dir_;
  std::unique_ptr<FileStore> store_;
};

TEST_F(GcTest, ForgottenSnapshotsObjectsGoAndTheLiveSnapshotStillPulls) {
  PushResult first = PushOk(MakeTree("a", 1), "s");
  PushResult second = PushOk(MakeTree("b", 2), "s");
  ForgetAllButNewest("s");  // a's objects are orphans
  uint64_t before = Count("chunks/") + Count("packs/");
  ASSERT_EQ(before, first.uploaded_objects + second.uploaded_objects);

  GcOptions dry;
  dry.dry_run = true;
  auto plan = CollectGarbage(*store_, dry);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->unreferenced_objects, first.uploaded_objects);
  EXPECT_EQ(plan->unreferenced_bytes, first.uploaded_bytes);
  EXPECT_EQ(Count("chunks/") + Count("packs/"), before) << "a dry run deleted something";
  EXPECT_EQ(Count("locks/"), 0u) << "a dry run left a lock";

  std::atomic<uint64_t> progress{0};
  GcOptions opts;
  opts.on_deleted = [&progress](uint64_t n) { progress += n; };
  auto r = CollectGarbage(*store_, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->snapshots, 1u);
  EXPECT_EQ(r->unreferenced_objects, first.uploaded_objects);
  EXPECT_EQ(r->unreferenced_bytes, first.uploaded_bytes);
  EXPECT_EQ(progress.load(), first.uploaded_bytes);
  EXPECT_EQ(r->referenced_objects, second.uploaded_objects);
  EXPECT_EQ(r->missing_objects, 0u);
  EXPECT_FALSE(r->epoch.empty());
  EXPECT_EQ(*ReadGcEpoch(*store_), r->epoch);
  EXPECT_EQ(Count("chunks/") + Count("packs/"), second.uploaded_objects);
  EXPECT_EQ(Count("locks/"), 0u);
  ExpectVerifies("s");
  std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store_, "s", dest, PullOptions{.jobs = 4}).ok());
  EXPECT_EQ(*ReadFile(dest + "/big-b"), Random(1 << 20, 2));

  auto again = CollectGarbage(*store_, opts);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->unreferenced_objects, 0u);
  EXPECT_TRUE(again->epoch.empty()) << "nothing deleted, so the epoch stays";
  EXPECT_EQ(*ReadGcEpoch(*store_), r->epoch);
}

TEST_F(GcTest, SharedObjectsStayAndForeignObjectsAreLeftAlone) {
  std::string src = MakeTree("a", 1);
  PushOk(src, "one");
  PushOk(src, "two");  // the same objects, twice referenced
  ChunkId orphan = Sha256Of("orphan bytes");
  ASSERT_TRUE(store_->Put(ChunkKey(orphan), "orphan bytes").ok());
  ASSERT_TRUE(store_->Put("chunks/zz/notes.txt", "not ours").ok());
  auto r = CollectGarbage(*store_, GcOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->snapshots, 2u);
  EXPECT_EQ(r->unreferenced_objects, 1u);
  EXPECT_EQ(r->foreign_objects, 1u);
  EXPECT_FALSE(*store_->Exists(ChunkKey(orphan)));
  EXPECT_TRUE(*store_->Exists("chunks/zz/notes.txt"));
  ExpectVerifies("one");
  ExpectVerifies("two");
}

TEST_F(GcTest, AnUndecodableSnapshotStopsGcBeforeItDeletes) {
  PushOk(MakeTree("a", 1), "s");
  ChunkId orphan = Sha256Of("orphan");
  ASSERT_TRUE(store_->Put(ChunkKey(orphan), "orphan").ok());
  ASSERT_TRUE(store_->Put("snapshots/broken", "not a manifest").ok());
  auto r = CollectGarbage(*store_, GcOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_NE(r.status().message().find("snapshots/broken"), std::string::npos);
  EXPECT_TRUE(*store_->Exists(ChunkKey(orphan)));
  EXPECT_EQ(Count("locks/"), 0u) << "the failed gc kept its lock";
}

TEST_F(GcTest, ALivePushLockKeepsGcAwayUntilItIsStale) {
  ChunkId orphan = Sha256Of("orphan");
  ASSERT_TRUE(store_->Put(ChunkKey(orphan), "orphan").ok());
  auto push_lock = StoreLock::Acquire(*store_, "push", LockOptions{});
  ASSERT_TRUE(push_lock.ok()) << push_lock.status().message();

  auto r = CollectGarbage(*store_, GcOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("running push"), std::string::npos) << r.status().message();
  EXPECT_TRUE(*store_->Exists(ChunkKey(orphan)));
  EXPECT_EQ(Count("locks/"), 1u) << "gc left its own lock behind";

  // Two hours on, the push lock (never refreshed) is stale: gc proceeds and removes it.
  GcOptions later;
  later.lock.stale_after = std::chrono::hours(1);
  later.lock.now_ns = [] { return RealNowNs() + int64_t{7200} * 1000000000; };
  auto r2 = CollectGarbage(*store_, later);
  ASSERT_TRUE(r2.ok()) << r2.status().message();
  EXPECT_EQ(r2->unreferenced_objects, 1u);
  EXPECT_EQ(r2->stale_locks_removed, 1u);
  EXPECT_EQ(Count("locks/"), 0u);
}

// The pid of a child that has exited and been reaped: a process that is not running.
int64_t DeadPid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return pid;
}

// A push lock as a push with this identity would write it, refreshed just now.
std::string LockBody(int64_t pid, uint64_t start_ticks, const std::string& boot_id) {
  const int64_t now = RealNowNs();
  return nlohmann::json{{"kind", "push"},     {"host", SelfIdentity().host},
                        {"pid", pid},         {"start_ticks", start_ticks},
                        {"boot_id", boot_id}, {"created_ns", now},
                        {"refreshed_ns", now}}
      .dump();
}

// A push killed with kill -9 leaves its lock, refreshed moments ago; its holder is on this host
// and not running (or its pid now runs another process), so gc takes it as stale at once and
// says so. A lock of a live holder, and one from an older writer without a start time, still
// keep gc away.
TEST_F(GcTest, ALockWhoseHolderOnThisHostIsGoneIsStaleAtOnce) {
  const ProcessIdentity& self = SelfIdentity();
  ASSERT_FALSE(self.boot_id.empty());
  ChunkId orphan = Sha256Of("orphan");
  ASSERT_TRUE(store_->Put(ChunkKey(orphan), "orphan").ok());
  const int64_t dead = DeadPid();
  struct Case {
    std::string key, body, why;
  };
  const std::vector<Case> gone = {
      {"locks/push-00000000000000a1", LockBody(dead, 12345, self.boot_id),
       "pid " + std::to_string(dead) + " is not running"},
      {"locks/push-00000000000000a2", LockBody(self.pid, self.start_ticks + 1, self.boot_id),
       "pid " + std::to_string(self.pid) + " now belongs to another process"},
      {"locks/push-00000000000000a3", LockBody(self.pid, self.start_ticks, "another-boot"),
       "host rebooted since"},
  };
  for (const Case& c : gone) {
    ASSERT_TRUE(store_->Put(c.key, c.body).ok());
    std::vector<std::string> said;
    GcOptions o;
    o.lock.on_gone = [&said](const std::string& line) { said.push_back(line); };
    auto r = CollectGarbage(*store_, o);
    ASSERT_TRUE(r.ok()) << c.why << ": " << r.status().message();
    EXPECT_EQ(r->stale_locks_removed, 1u);
    ASSERT_EQ(said.size(), 1u) << c.why;
    EXPECT_EQ(said[0].rfind("lock " + c.key + " of pid ", 0), 0u) << said[0];
    EXPECT_NE(said[0].find(" is stale: " + c.why), std::string::npos) << said[0];
    EXPECT_EQ(Count("locks/"), 0u);
  }
  EXPECT_FALSE(*store_->Exists(ChunkKey(orphan)));

  // A live holder (this process) and an older writer's lock (no start time) keep gc away.
  for (const std::string& body :
       {LockBody(self.pid, self.start_ticks, self.boot_id), LockBody(dead, 0, "")}) {
    ASSERT_TRUE(store_->Put("locks/push-00000000000000b1", body).ok());
    auto r = CollectGarbage(*store_, GcOptions{});
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << body;
    ASSERT_TRUE(store_->Delete("locks/push-00000000000000b1").ok());
  }
}

// A file:// Put killed between writing its temporary and renaming it leaves ".<name>.tmp.PID.N":
// gc removes those older than its grace period, and nothing else.
TEST_F(GcTest, GcRemovesTemporariesOfKilledPutsAfterTheGracePeriod) {
  ASSERT_TRUE(store_->Put("chunks/ab/cd/x", "x").ok());
  const std::string dir = dir_.Join("store/chunks/ab/cd");
  const std::string old_tmp = dir + "/.abcdef.tmp.4242.7", new_tmp = dir + "/.abcdef.tmp.4242.8";
  const std::string not_tmp = dir + "/.abcdef.tmp.x", root_tmp = dir_.Join("store/.config.tmp.1.0");
  for (const std::string& p : {old_tmp, new_tmp, not_tmp, root_tmp}) {
    ASSERT_TRUE(WriteFileAtomic(p, "partial").ok());
  }
  struct timespec old[2] = {{RealNowNs() / 1000000000 - 7200, 0},
                            {RealNowNs() / 1000000000 - 7200, 0}};
  for (const std::string& p : {old_tmp, not_tmp, root_tmp}) {
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), old, 0), 0);
  }
  GcOptions o;
  o.lock.stale_after = std::chrono::hours(1);
  auto r = CollectGarbage(*store_, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->leftovers_removed, 2u);
  EXPECT_NE(::access(old_tmp.c_str(), F_OK), 0);
  EXPECT_NE(::access(root_tmp.c_str(), F_OK), 0);
  EXPECT_EQ(::access(new_tmp.c_str(), F_OK), 0) << "a Put may still be writing it";
  EXPECT_EQ(::access(not_tmp.c_str(), F_OK), 0) << "not a temporary of Put";
}

TEST_F(GcTest, ARunningGcMakesAPushFailAndPublishNothing) {
  std::string src = MakeTree("a", 1);
  auto gc_lock = StoreLock::Acquire(*store_, "gc", LockOptions{});
  ASSERT_TRUE(gc_lock.ok());
  PushOptions o;
  o.name = "s";
  o.chunker = ChunkerParams{4096, 16384, 131072};
  auto r = Push(src, *store_, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("running gc"), std::string::npos) << r.status().message();
  EXPECT_FALSE(NewestSnapshot(*store_, "s").ok());
  EXPECT_EQ(Count("chunks/"), 0u);
  // Pushes do not exclude each other.
  ASSERT_TRUE((*gc_lock)->Release().ok());
  auto other = StoreLock::Acquire(*store_, "push", LockOptions{});
  ASSERT_TRUE(other.ok());
  PushOk(src, "s");
}

TEST_F(GcTest, ALockNotRefreshedInTimeIsLostForGood) {
  std::atomic<int64_t> now{RealNowNs()};
  LockOptions o;
  o.stale_after = std::chrono::minutes(15);
  o.refresh_every = std::chrono::minutes(5);
  o.now_ns = [&now] { return now.load(); };
  auto lock = StoreLock::Acquire(*store_, "push", o);
  ASSERT_TRUE(lock.ok());
  EXPECT_TRUE((*lock)->Check().ok());
  now += int64_t{9} * 60 * 1000000000;  // 9 of the 10 minutes the holder may go unrefreshed
  EXPECT_TRUE((*lock)->Check().ok());
  now += int64_t{2} * 60 * 1000000000;
  Status lost = (*lock)->Check();
  EXPECT_EQ(lost.code(), Code::kFailedPrecondition);
  now -= int64_t{11} * 60 * 1000000000;  // the clock coming back does not revive it
  EXPECT_FALSE((*lock)->Check().ok());
  EXPECT_TRUE((*lock)->Release().ok());
  EXPECT_EQ(Count("locks/"), 0u);
}

TEST_F(GcTest, BadLockOptionsAndUnparsableLocks) {
  LockOptions bad;
  bad.stale_after = std::chrono::minutes(5);
  bad.refresh_every = std::chrono::minutes(5);
  EXPECT_EQ(StoreLock::Acquire(*store_, "push", bad).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(StoreLock::Acquire(*store_, "pull", LockOptions{}).status().code(),
            Code::kInvalidArgument);
  // A lock object nobody can read binds no one: it is stale and gc removes it.
  ASSERT_TRUE(store_->Put("locks/push-garbage", "{not json").ok());
  auto locks = ListLocks(*store_);
  ASSERT_TRUE(locks.ok());
  ASSERT_EQ(locks->size(), 1u);
  EXPECT_EQ((*locks)[0].kind, "unknown");
  auto r = CollectGarbage(*store_, GcOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stale_locks_removed, 1u);
}

// The journal says which objects a store holds; after a gc deleted some, a push must not trust
// it, or it would publish a snapshot naming chunks that are gone.
TEST_F(GcTest, APushAfterGcDoesNotTrustItsOldJournal) {
  auto state = DatasyncState::Open(dir_.Join("state.db"));
  ASSERT_TRUE(state.ok());
  std::string a = MakeTree("a", 1);
  std::string b = MakeTree("b", 2);
  PushOk(a, "s", state->get());
  PushOk(b, "s", state->get());
  ForgetAllButNewest("s");  // a's objects are now unreferenced, and journaled
  auto r = CollectGarbage(*store_, GcOptions{});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_GT(r->unreferenced_objects, 0u);

  PushResult again = PushOk(a, "t", state->get());
  EXPECT_EQ(again.journal_hits, 0u);
  EXPECT_EQ(again.uploaded_objects, r->unreferenced_objects) << "a's objects were re-sent";
  ExpectVerifies("t");
  ExpectVerifies("s");
  EXPECT_EQ(*(*state)->JournalEpoch(store_->Url()), r->epoch);
  // With the epoch unchanged, the journal is trusted again.
  PushResult third = PushOk(a, "u", state->get());
  EXPECT_EQ(third.uploaded_objects, 0u);
  EXPECT_GT(third.journal_hits, 0u);
}

}  // namespace
}  // namespace cutover
