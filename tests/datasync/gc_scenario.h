// Scenarios run against every kind of store (file, WebDAV on nginx, S3 on s3rver).
//   gc: push a tree, then another under the same name (a series of two), leave the lock of a
//       crashed push, gc (nothing goes but the dead lock), forget all but the newest, gc; the
//       first tree's objects go, the live snapshot verifies and pulls intact.
//   shards: push a tree as three shards, gc (the unmerged parts keep their objects), merge; the
//       parts go and the snapshot pulls intact.
#ifndef CUTOVER_TESTS_DATASYNC_GC_SCENARIO_H_
#define CUTOVER_TESTS_DATASYNC_GC_SCENARIO_H_

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/gc.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/shard.h"
#include "datasync/snapshots.h"
#include "datasync/verify.h"

namespace cutover::testing {

inline std::string GcScenarioBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

inline uint64_t CountObjects(Store& store, const std::string& prefix) {
  uint64_t n = 0;
  EXPECT_TRUE(store
                  .List(prefix,
                        [&n](std::string_view, uint64_t) {
                          ++n;
                          return Status::Ok();
                        })
                  .ok());
  return n;
}

// `tmp` is a scratch directory of the test.
inline void RunGcScenario(Store& store, const std::string& tmp) {
  PushOptions o;
  o.name = "s";
  o.chunker = ChunkerParams{4096, 16384, 131072};
  o.jobs = 4;
  std::vector<PushResult> pushed;
  for (uint64_t seed : {1, 2}) {
    std::string src = tmp + "/src" + std::to_string(seed);
    ASSERT_TRUE(MakeDirs(src + "/small").ok());
    ASSERT_TRUE(WriteFileAtomic(src + "/big", GcScenarioBytes(600000, seed)).ok());
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(
          WriteFileAtomic(src + "/small/" + std::to_string(i), GcScenarioBytes(200, seed * 100 + i))
              .ok());
    }
    auto r = Push(src, store, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    pushed.push_back(*r);
  }
  ASSERT_EQ(CountObjects(store, "locks/"), 0u) << "a finished push left its lock";
  // A push that crashed two hours ago: its lock was never released nor refreshed.
  ASSERT_TRUE(store
                  .Put("locks/push-00000000deadbeef",
                       R"({"kind":"push","host":"gone","pid":1,"created_ns":1,"refreshed_ns":1})")
                  .ok());

  // Both pushes are snapshots of the series "s": nothing is unreferenced yet.
  auto kept = CollectGarbage(store, GcOptions{});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->snapshots, 2u);
  EXPECT_EQ(kept->unreferenced_objects, 0u);
  EXPECT_EQ(kept->stale_locks_removed, 1u);
  ASSERT_TRUE(store
                  .Put("locks/push-00000000deadbeef",
                       R"({"kind":"push","host":"gone","pid":1,"created_ns":1,"refreshed_ns":1})")
                  .ok());
  // forget --name s --keep-last 1: the first push goes, and gc deletes what only it used.
  auto doomed = SnapshotsBeyondLast(store, "s", 1);
  ASSERT_TRUE(doomed.ok()) << doomed.status().ToString();
  ASSERT_EQ(doomed->size(), 1u);
  ASSERT_TRUE(store.Delete(doomed->front().key).ok());

  auto r = CollectGarbage(store, GcOptions{});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->snapshots, 1u);
  EXPECT_EQ(r->unreferenced_objects, pushed[0].uploaded_objects);
  EXPECT_EQ(r->unreferenced_bytes, pushed[0].uploaded_bytes);
  EXPECT_EQ(r->referenced_objects, pushed[1].uploaded_objects);
  EXPECT_EQ(r->missing_objects, 0u);
  EXPECT_EQ(r->stale_locks_removed, 1u);
  EXPECT_EQ(CountObjects(store, "chunks/") + CountObjects(store, "packs/"),
            pushed[1].uploaded_objects);
  EXPECT_EQ(CountObjects(store, "locks/"), 0u);
  auto v = Verify(store, "s", "", 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->failures.empty());
  std::string dest = tmp + "/dest";
  auto pulled = Pull(store, "s", dest, PullOptions{.jobs = 4});
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(*ReadFile(dest + "/big"), GcScenarioBytes(600000, 2));
  EXPECT_EQ(*ReadFile(dest + "/small/3"), GcScenarioBytes(200, 203));
}

inline void RunShardScenario(Store& store, const std::string& tmp) {
  std::string src = tmp + "/src";
  ASSERT_TRUE(MakeDirs(src + "/small").ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        WriteFileAtomic(src + "/big" + std::to_string(i), GcScenarioBytes(200000, 50 + i)).ok());
  }
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(
        WriteFileAtomic(src + "/small/" + std::to_string(i), GcScenarioBytes(150, 70 + i)).ok());
  }
  PushOptions o;
  o.name = "sharded";
  o.chunker = ChunkerParams{4096, 16384, 131072};
  o.jobs = 4;
  uint64_t uploaded = 0;
  for (uint32_t i = 1; i <= 3; ++i) {
    o.shard = ShardSpec{i, 3};
    auto r = Push(src, store, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    uploaded += r->uploaded_objects;
  }
  EXPECT_EQ(CountObjects(store, "parts/sharded/"), 3u);
  auto gc = CollectGarbage(store, GcOptions{});
  ASSERT_TRUE(gc.ok()) << gc.status().ToString();
  EXPECT_EQ(gc->unreferenced_objects, 0u);
  auto merged = MergeParts(store, "sharded", {});
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ(merged->files, 16u);
  EXPECT_EQ(merged->parts_removed, 3u);
  EXPECT_EQ(CountObjects(store, "parts/"), 0u);
  EXPECT_EQ(CountObjects(store, "locks/"), 0u);
  EXPECT_GT(uploaded, 0u);
  std::string dest = tmp + "/sharded-dest";
  auto pulled = Pull(store, "sharded", dest, PullOptions{.jobs = 4});
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(*ReadFile(dest + "/big" + std::to_string(i)), GcScenarioBytes(200000, 50 + i));
  }
  EXPECT_EQ(*ReadFile(dest + "/small/11"), GcScenarioBytes(150, 81));
}

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_DATASYNC_GC_SCENARIO_H_
