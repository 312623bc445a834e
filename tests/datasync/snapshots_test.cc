// Snapshot series (datasync/snapshots.h) over a real FileStore: every push a new immutable
// snapshot, pushes at once to one name both landing, the newest of a name pulled and reused,
// ids and their prefixes, forget's choice, diff, and stores written before ids still read.
#include "datasync/snapshots.h"

#include <sys/stat.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/verify.h"
#include "tests/datasync/tree.h"
#include "tests/datasync/test_store.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::Tree;

const ChunkerParams kSmall{4096, 16384, 131072};

class SnapshotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  // A tree of a few files whose bytes depend on `variant`.
  std::string MakeSrc(const std::string& name, int variant) {
    std::string root = dir_.Join(name);
    testing::MakeTree(root, 1, 200000, 5, variant);
    return root;
  }

  Result<PushResult> PushAs(const std::string& src, const std::string& name) {
    PushOptions o{name, kSmall};
    o.jobs = 2;
    return Push(src, *store_, o);
  }

  testing::TempDir dir_;
  std::unique_ptr<FileStore> store_;
};

TEST(SnapshotKeys, SeriesKeysRoundTripAndRefuseWhatIsNotOne) {
  Result<std::string> key = SeriesKey("nightly", 1765000000123456789, "0123456789abcdef");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, "snap/nightly/01765000000123456789-0123456789abcdef");
  EXPECT_TRUE(ValidateKey(*key).ok());
  std::optional<SnapshotRef> ref = ParseSeriesKey(*key);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->name, "nightly");
  EXPECT_EQ(ref->created_ns, 1765000000123456789);
  EXPECT_EQ(ref->id, "0123456789abcdef");
  EXPECT_EQ(ref->key, *key);
  EXPECT_FALSE(ref->legacy);

  EXPECT_FALSE(SeriesKey("a/b", 1, "0123456789abcdef").ok());
  EXPECT_FALSE(SeriesKey(".hidden", 1, "0123456789abcdef").ok());
  EXPECT_FALSE(SeriesKey("n", -1, "0123456789abcdef").ok());
  EXPECT_FALSE(SeriesKey("n", 1, "0123456789ABCDEF").ok());
  EXPECT_FALSE(SeriesKey("n", 1, "0123").ok());
  for (const char* bad : {"snapshots/n", "snap/n", "snap/n/1-0123456789abcdef",
                          "snap/n/0000000000000000000x-0123456789abcdef",
                          "snap/n/01765000000123456789_0123456789abcdef",
                          "snap/n/01765000000123456789-0123456789abcdeg",
                          "snap/n/99999999999999999999-0123456789abcdef",
                          "snap/.n/01765000000123456789-0123456789abcdef",
                          "snap/n/x/01765000000123456789-0123456789abcdef"}) {
    EXPECT_FALSE(ParseSeriesKey(bad).has_value()) << bad;
  }
}

TEST(SnapshotKeys, IdsAreSixteenHexDigitsNewOnesDifferAndLegacyOnesAreStable) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string id = NewSnapshotId();
    EXPECT_EQ(id.size(), 16u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(LegacySnapshotId("nightly"), LegacySnapshotId("nightly"));
  EXPECT_NE(LegacySnapshotId("nightly"), LegacySnapshotId("weekly"));
  EXPECT_EQ(LegacySnapshotId("nightly").size(), 16u);
}

TEST_F(SnapshotsTest, EveryPushIsANewSnapshotAndTheNameGivesTheNewest) {
  std::string v1 = MakeSrc("v1", 1), v2 = MakeSrc("v2", 2);
  auto first = PushAs(v1, "n");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = PushAs(v2, "n");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_NE(first->snapshot_id, second->snapshot_id);

  auto series = ListSnapshots(*store_, std::string("n"));
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 2u);
  EXPECT_EQ((*series)[0].id, first->snapshot_id);
  EXPECT_EQ((*series)[1].id, second->snapshot_id);
  EXPECT_LE((*series)[0].created_ns, (*series)[1].created_ns);

  // --name: the newest; --id: the one asked for (by a prefix too).
  std::string d1 = dir_.Join("d1"), d2 = dir_.Join("d2");
  auto newest = Pull(*store_, "n", d2, {});
  ASSERT_TRUE(newest.ok()) << newest.status().ToString();
  EXPECT_EQ(newest->snapshot.id, second->snapshot_id);
  EXPECT_EQ(Tree(d2), Tree(v2));
  auto older = Pull(*store_, SnapshotSelector::Id(first->snapshot_id.substr(0, 8)), d1, {});
  ASSERT_TRUE(older.ok()) << older.status().ToString();
  EXPECT_EQ(older->snapshot.id, first->snapshot_id);
  EXPECT_EQ(Tree(d1), Tree(v1));
  auto v = Verify(*store_, SnapshotSelector::Id(first->snapshot_id), d1, 2);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->failures.empty());

  // The next push of the name dedups against the newest: nothing to upload.
  auto third = PushAs(v2, "n");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->uploaded_objects, 0u);
  EXPECT_EQ(ListSnapshots(*store_, std::string("n"))->size(), 3u);
}

TEST_F(SnapshotsTest, PushesToOneNameAtOnceBothLand) {
  std::vector<std::string> srcs;
  for (int i = 0; i < 4; ++i) srcs.push_back(MakeSrc("s" + std::to_string(i), 10 + i));
  std::vector<Result<PushResult>> results(srcs.size(), Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < srcs.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = PushAs(srcs[i], "same"); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < srcs.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status().ToString();
    std::string dest = dir_.Join("out" + std::to_string(i));
    auto pulled = Pull(*store_, SnapshotSelector::Id(results[i]->snapshot_id), dest, {});
    ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
    EXPECT_EQ(Tree(dest), Tree(srcs[i])) << "push " << i << "'s snapshot was lost";
  }
  EXPECT_EQ(ListSnapshots(*store_, std::string("same"))->size(), srcs.size());
}

TEST_F(SnapshotsTest, IdsResolveByUniquePrefixAndSayWhyNot) {
  std::string src = MakeSrc("a", 1);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = PushAs(src, "p");
    ASSERT_TRUE(r.ok());
    ids.push_back(r->snapshot_id);
  }
  for (const std::string& id : ids) {
    auto found = FindSnapshot(*store_, id);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_EQ(found->id, id);
  }
  auto short_id = FindSnapshot(*store_, "abc");
  EXPECT_EQ(short_id.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FindSnapshot(*store_, "XYZW").status().code(), Code::kInvalidArgument);
  // A prefix no id has, and one all share (the empty one is refused as too short).
  std::string absent = ids[0][0] == '0' ? "ffff" : "0000";
  bool absent_ok = std::none_of(ids.begin(), ids.end(),
                                [&](const std::string& i) { return i.starts_with(absent); });
  if (absent_ok) {
    auto none = FindSnapshot(*store_, absent);
    EXPECT_EQ(none.status().code(), Code::kNotFound);
    EXPECT_EQ(none.status().message(), "no snapshot with id " + absent + " in " + store_->Url());
  }
  // Two snapshots whose ids share a prefix: write a second key by hand with the same first 15.
  std::string twin = ids[0].substr(0, 15) + (ids[0][15] == '0' ? "1" : "0");
  auto bytes = store_->Get(FindSnapshot(*store_, ids[0])->key);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(store_->Put(*SeriesKey("p", 5, twin), *bytes).ok());
  auto ambiguous = FindSnapshot(*store_, ids[0].substr(0, 15));
  EXPECT_EQ(ambiguous.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ambiguous.status().message().find("ambiguous"), std::string::npos);
}

TEST_F(SnapshotsTest, KeepLastChoosesAllButTheNewest) {
  std::string src = MakeSrc("a", 1);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(PushAs(src, "k")->snapshot_id);
  ASSERT_TRUE(PushAs(src, "other").ok());
  auto doomed = SnapshotsBeyondLast(*store_, "k", 2);
  ASSERT_TRUE(doomed.ok());
  ASSERT_EQ(doomed->size(), 2u);
  EXPECT_EQ((*doomed)[0].id, ids[0]);
  EXPECT_EQ((*doomed)[1].id, ids[1]);
  EXPECT_TRUE(SnapshotsBeyondLast(*store_, "k", 4)->empty());
  EXPECT_TRUE(SnapshotsBeyondLast(*store_, "k", 9)->empty());
  EXPECT_EQ(SnapshotsBeyondLast(*store_, "k", 0).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(SnapshotsBeyondLast(*store_, "nothing", 1)->empty());
}

TEST_F(SnapshotsTest, DiffNamesAddedRemovedChangedAndMetadataOnly) {
  std::string src = dir_.Join("d");
  ASSERT_TRUE(MakeDirs(src + "/sub").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/same", "same bytes").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/edited", "old bytes").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/chmod", "mode only").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/sub/gone", "removed later").ok());
  ASSERT_EQ(::symlink("same", (src + "/link").c_str()), 0);
  testing::SetMtime(src + "/chmod", 1600000000);
  auto before = PushAs(src, "d");
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/edited", "new bytes!").ok());
  ASSERT_EQ(::chmod((src + "/chmod").c_str(), 0600), 0);
  testing::SetMtime(src + "/chmod", 1600000000);
  ASSERT_EQ(::unlink((src + "/sub/gone").c_str()), 0);
  ASSERT_EQ(::unlink((src + "/link").c_str()), 0);
  ASSERT_EQ(::symlink("edited", (src + "/link").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomic(src + "/sub/new", "added").ok());
  testing::SetMtime(src + "/sub", 1600000000);
  auto after = PushAs(src, "d");
  ASSERT_TRUE(after.ok());

  auto a = FindSnapshot(*store_, before->snapshot_id),
       b = FindSnapshot(*store_, after->snapshot_id);
  ASSERT_TRUE(a.ok() && b.ok());
  auto d = DiffSnapshots(*store_, *a, *b);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->added, std::vector<std::string>{"sub/new"});
  EXPECT_EQ(d->removed, std::vector<std::string>{"sub/gone"});
  EXPECT_EQ(d->changed, (std::vector<std::string>{"edited", "link"}));
  EXPECT_EQ(d->metadata, (std::vector<std::string>{"chmod", "sub"}));
  // The other way round, added and removed swap.
  auto back = DiffSnapshots(*store_, *b, *a);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->added, std::vector<std::string>{"sub/gone"});
  EXPECT_EQ(back->removed, std::vector<std::string>{"sub/new"});
  // A snapshot against itself: nothing.
  auto same = DiffSnapshots(*store_, *a, *a);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->added.empty() && same->removed.empty() && same->changed.empty() &&
              same->metadata.empty());
}

// A store written before ids held one object per name at snapshots/<name>. Such a store keeps
// working: the object is its series' one member, pulls and verifies by name and by its stable id,
// a new push adds to the series (and becomes the newest), and forget removes it by id.
TEST_F(SnapshotsTest, AStoreWrittenBeforeIdsStaysReadable) {
  std::string v1 = MakeSrc("v1", 1), v2 = MakeSrc("v2", 2);
  auto old = PushAs(v1, "legacy");
  ASSERT_TRUE(old.ok());
  // Move the snapshot to where the previous layout kept it.
  auto ref = FindSnapshot(*store_, old->snapshot_id);
  ASSERT_TRUE(ref.ok());
  auto bytes = store_->Get(ref->key);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(store_->Put("snapshots/legacy", *bytes).ok());
  ASSERT_TRUE(store_->Delete(ref->key).ok());

  auto series = ListSnapshots(*store_, std::string("legacy"));
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  ASSERT_EQ(series->size(), 1u);
  const SnapshotRef legacy = series->front();
  EXPECT_TRUE(legacy.legacy);
  EXPECT_EQ(legacy.id, LegacySnapshotId("legacy"));
  EXPECT_EQ(legacy.key, "snapshots/legacy");
  EXPECT_GT(legacy.created_ns, 0);
  EXPECT_EQ(ListSnapshots(*store_, std::nullopt)->size(), 1u);
  // A caller that reads the manifests anyway (ls) asks for no time: the manifest is not read.
  TestStore counted(*store_);
  auto untimed = ListSnapshots(counted, std::nullopt, /*legacy_times=*/false);
  ASSERT_TRUE(untimed.ok());
  ASSERT_EQ(untimed->size(), 1u);
  EXPECT_EQ(untimed->front().created_ns, 0);
  EXPECT_EQ(counted.Count("get", "snapshots/"), 0);
  ASSERT_TRUE(ListSnapshots(counted, std::nullopt).ok());
  EXPECT_EQ(counted.Count("get", "snapshots/"), 1);

  std::string d = dir_.Join("d");
  auto pulled = Pull(*store_, "legacy", d, {});
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(Tree(d), Tree(v1));
  auto v = Verify(*store_, SnapshotSelector::Id(legacy.id), "", 2);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->failures.empty());

  // A new push of the name reuses it (the packs it holds) and becomes the newest.
  auto again = PushAs(v1, "legacy");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->uploaded_objects, 0u);
  auto newer = PushAs(v2, "legacy");
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(NewestSnapshot(*store_, "legacy")->id, newer->snapshot_id);
  series = ListSnapshots(*store_, std::string("legacy"));
  ASSERT_EQ(series->size(), 3u);
  EXPECT_EQ(series->front().id, legacy.id);  // the oldest

  auto found = FindSnapshot(*store_, legacy.id.substr(0, 6));
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(store_->Delete(found->key).ok());
  EXPECT_EQ(ListSnapshots(*store_, std::string("legacy"))->size(), 2u);
}

}  // namespace
}  // namespace cutover
