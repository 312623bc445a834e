// Sharded pushes and merge over a file:// store: the split, what merge publishes, and the parts
// it refuses (missing, mixed shard counts, another tree, a part holding another shard's entries).
#include "datasync/shard.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/gc.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/verify.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/datasync/tree.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

const ChunkerParams kParams{4096, 16384, 131072};

TEST(ShardSpec, ParsesIOfN) {
  for (auto [text, i, n] : {std::tuple{"1/1", 1u, 1u}, {"2/4", 2u, 4u}, {"4096/4096", 4096u, 4096u}}) {
    auto s = ParseShard(text);
    ASSERT_TRUE(s.ok()) << text << ": " << s.status().message();
    EXPECT_EQ(s->index, i);
    EXPECT_EQ(s->count, n);
  }
  for (const char* bad : {"", "0/4", "5/4", "2", "2/", "/4", "a/b", "02/4", "1/4097", "-1/4",
                          "1/4/", " 1/4", "1/0"}) {
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseShard("0/4").status().message(),
            "--shard: expected I/N with 1 <= I <= N <= 4096 (e.g. 2/4), got \"0/4\"");
}

TEST(ShardSpec, EveryPathFallsInExactlyOneShardAndTheSplitIsEven) {
  for (uint32_t n : {1u, 2u, 3u, 7u}) {
    std::vector<int> per(n + 1, 0);
    for (int p = 0; p < 2000; ++p) {
      std::string path = "dir" + std::to_string(p % 13) + "/file-" + std::to_string(p);
      int owners = 0;
      for (uint32_t i = 1; i <= n; ++i) {
        if (InShard(path, ShardSpec{i, n})) {
          ++owners;
          ++per[i];
        }
      }
      ASSERT_EQ(owners, 1) << path << " in " << n << " shards";
    }
    for (uint32_t i = 1; i <= n; ++i) {
      EXPECT_GT(per[i], 2000 / static_cast<int>(n) * 8 / 10) << "shard " << i << "/" << n;
    }
  }
}

TEST(ShardSpec, PartKeysRoundTrip) {
  auto key = PartKey("nightly", ShardSpec{3, 8});
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, "parts/nightly/3-of-8");
  std::string name;
  ShardSpec s;
  ASSERT_TRUE(ParsePartKey(*key, &name, &s));
  EXPECT_EQ(name, "nightly");
  EXPECT_EQ(s.index, 3u);
  EXPECT_EQ(s.count, 8u);
  for (const char* bad : {"parts/x/0-of-2", "parts/x/3-of-2", "snapshots/x", "parts/x/1-of-2/y",
                          "parts//1-of-2", "parts/x/1of2", "parts/.x/1-of-2"}) {
    EXPECT_FALSE(ParsePartKey(bad, &name, &s)) << bad;
  }
  EXPECT_FALSE(PartKey("a/b", ShardSpec{1, 2}).ok());
}

TEST(ShardSpec, WalkOrderPutsADirectoryRightBeforeWhatItHolds) {
  std::vector<std::string> v = {"b", "a0", "a-c", "a/b/c", "a/b", "a", "a/\xff", "a/a"};
  std::sort(v.begin(), v.end(), [](const std::string& x, const std::string& y) {
    return WalkOrderLess(x, y);
  });
  EXPECT_EQ(v, (std::vector<std::string>{"a", "a/a", "a/b", "a/b/c", "a/\xff", "a-c", "a0", "b"}));
}

class ShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    testing::MakeTree(src_, 5, 150000, 40, 0);
    auto s = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(*s);
  }

  Result<PushResult> PushShard(uint32_t i, uint32_t n, const std::string& name = "snap") {
    PushOptions o;
    o.name = name;
    o.chunker = kParams;
    o.jobs = 3;
    if (n > 0) o.shard = ShardSpec{i, n};
    return Push(src_, *store_, o);
  }

  bool Has(const std::string& key) {
    auto r = store_->Exists(key);
    return r.ok() && *r;
  }

  // A snapshot of `name` is published.
  bool HasSnapshot(const std::string& name) { return NewestSnapshot(*store_, name).ok(); }

  Manifest Read(const std::string& key) {
    auto bytes = store_->Get(key);
    EXPECT_TRUE(bytes.ok()) << key;
    auto m = DecodeManifest(bytes.ok() ? *bytes : "");
    EXPECT_TRUE(m.ok()) << m.status().message();
    return m.ok() ? *m : Manifest{};
  }

  testing::TempDir dir_;
  std::string src_;
  std::unique_ptr<FileStore> store_;
};

TEST_F(ShardTest, ThreeShardsMergeIntoTheSnapshotAnUnshardedPushMakes) {
  auto whole = PushShard(0, 0, "whole");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  uint64_t files = 0, bytes = 0;
  for (uint32_t i = 1; i <= 3; ++i) {
    auto r = PushShard(i, 3);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_GT(r->files, 0u) << "shard " << i;
    EXPECT_LT(r->files, whole->files) << "shard " << i;
    files += r->files;
    bytes += r->bytes;
    EXPECT_TRUE(Has("parts/snap/" + std::to_string(i) + "-of-3"));
  }
  EXPECT_EQ(files, whole->files);
  EXPECT_EQ(bytes, whole->bytes);
  EXPECT_FALSE(HasSnapshot("snap"));  // nothing is a snapshot before the merge

  auto merged = MergeParts(*store_, "snap", {});
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->parts, 3u);
  EXPECT_EQ(merged->files, whole->files);
  EXPECT_EQ(merged->dirs, whole->dirs);
  EXPECT_EQ(merged->symlinks, whole->symlinks);
  EXPECT_EQ(merged->bytes, whole->bytes);
  EXPECT_EQ(merged->parts_removed, 3u);
  EXPECT_TRUE(merged->parts_left.empty());
  for (uint32_t i = 1; i <= 3; ++i) EXPECT_FALSE(Has("parts/snap/" + std::to_string(i) + "-of-3"));

  // The same entries in the same order as the unsharded push, each file with the same bytes
  // (the small files' packs differ: each shard packs its own).
  Manifest a = Read(testing::NewestKey(*store_, "whole")),
           b = Read(testing::NewestKey(*store_, "snap"));
  EXPECT_FALSE(b.shard.has_value());
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t k = 0; k < a.entries.size(); ++k) {
    const Entry &x = a.entries[k], &y = b.entries[k];
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.mode, y.mode);
    EXPECT_EQ(x.mtime_ns, y.mtime_ns);
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.target, y.target);
    ASSERT_EQ(x.chunks.size(), y.chunks.size()) << x.path;
    for (size_t c = 0; c < x.chunks.size(); ++c) EXPECT_EQ(x.chunks[c].id, y.chunks[c].id);
  }

  auto v = Verify(*store_, "snap", "", 2);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->failures.empty());
  std::string dest = dir_.Join("dest");
  auto pulled = Pull(*store_, "snap", dest);
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  EXPECT_EQ(testing::Tree(dest), testing::Tree(src_));
}

TEST_F(ShardTest, AMissingPartIsNamedAndNothingIsPublished) {
  ASSERT_TRUE(PushShard(1, 3).ok());
  ASSERT_TRUE(PushShard(3, 3).ok());
  auto r = MergeParts(*store_, "snap", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "snapshot snap lacks part(s) 2 of 3: push them with --shard I/3 and merge again");
  EXPECT_FALSE(HasSnapshot("snap"));
  EXPECT_TRUE(Has("parts/snap/1-of-3"));

  auto none = MergeParts(*store_, "other", {});
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  EXPECT_EQ(none.status().message(),
            "the store holds no parts of snapshot other (push them with --shard I/N first)");
}

TEST_F(ShardTest, PartsOfDifferentShardCountsAreRefused) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  ASSERT_TRUE(PushShard(2, 2).ok());
  ASSERT_TRUE(PushShard(1, 3).ok());
  auto r = MergeParts(*store_, "snap", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "the parts of snapshot snap are of different shard counts (2, 3): remove the stale "
            "ones under parts/snap/ and merge again");
  EXPECT_FALSE(HasSnapshot("snap"));
}

TEST_F(ShardTest, PartsThatSawDifferentTreesAreRefused) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  ASSERT_TRUE(WriteFileAtomic(src_ + "/meta/late-arrival", "new").ok());
  ASSERT_TRUE(PushShard(2, 2).ok());
  auto r = MergeParts(*store_, "snap", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("part 2/2 saw another tree than part 1/2"),
            std::string::npos)
      << r.status().message();
  EXPECT_FALSE(HasSnapshot("snap"));

  // Pushed again from the same tree, the parts merge.
  ASSERT_TRUE(PushShard(1, 2).ok());
  auto again = MergeParts(*store_, "snap", {});
  ASSERT_TRUE(again.ok()) << again.status().message();
}

TEST_F(ShardTest, ARenameBetweenTheShardPushesIsCaughtByTheTreeDigest) {
  // A rename within one shard keeps every count right; only the digest of the paths tells.
  const std::string from = "meta/s3.txt";
  const ShardSpec own = InShard(from, ShardSpec{1, 2}) ? ShardSpec{1, 2} : ShardSpec{2, 2};
  std::string to;
  for (int k = 0; to.empty(); ++k) {
    std::string c = "meta/renamed-" + std::to_string(k);
    if (InShard(c, own)) to = c;
  }
  const ShardSpec other{3 - own.index, 2};
  ASSERT_TRUE(PushShard(own.index, 2).ok());
  ASSERT_EQ(::rename((src_ + "/" + from).c_str(), (src_ + "/" + to).c_str()), 0);
  ASSERT_TRUE(PushShard(other.index, 2).ok());
  auto r = MergeParts(*store_, "snap", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("saw another tree"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(HasSnapshot("snap"));
}

TEST_F(ShardTest, APartHoldingAnotherShardsEntriesIsCorruption) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  Manifest m = Read("parts/snap/1-of-2");
  m.shard->index = 2;  // shard 1's entries, claimed as shard 2's
  auto bytes = EncodeManifest(m);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(store_->Put("parts/snap/2-of-2", *bytes).ok());
  auto r = MergeParts(*store_, "snap", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_NE(r.status().message().find("which belongs to another shard"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(HasSnapshot("snap"));
}

TEST_F(ShardTest, GcKeepsWhatUnmergedPartsReference) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  ASSERT_TRUE(PushShard(2, 2).ok());
  auto gc = CollectGarbage(*store_, {});
  ASSERT_TRUE(gc.ok()) << gc.status().message();
  EXPECT_EQ(gc->unreferenced_objects, 0u);
  EXPECT_EQ(gc->snapshots, 2u);  // the two parts
  EXPECT_GT(gc->referenced_objects, 0u);
  ASSERT_TRUE(MergeParts(*store_, "snap", {}).ok());
  auto after = CollectGarbage(*store_, {});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->unreferenced_objects, 0u);
  EXPECT_EQ(after->referenced_objects, gc->referenced_objects);
  auto v = Verify(*store_, "snap", src_, 2);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_TRUE(v->failures.empty());
}

TEST_F(ShardTest, DryRunWritesNothingAndKeepPartsKeepsThem) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  ASSERT_TRUE(PushShard(2, 2).ok());
  MergeOptions dry;
  dry.dry_run = true;
  auto r = MergeParts(*store_, "snap", dry);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->parts, 2u);
  EXPECT_GT(r->files, 0u);
  EXPECT_EQ(r->parts_removed, 0u);
  EXPECT_FALSE(HasSnapshot("snap"));
  EXPECT_TRUE(Has("parts/snap/1-of-2"));

  MergeOptions keep;
  keep.keep_parts = true;
  ASSERT_TRUE(MergeParts(*store_, "snap", keep).ok());
  EXPECT_TRUE(HasSnapshot("snap"));
  EXPECT_TRUE(Has("parts/snap/1-of-2"));
  EXPECT_TRUE(Has("parts/snap/2-of-2"));
}

TEST_F(ShardTest, ARepushedShardReusesThePacksOfTheMergedSnapshot) {
  ASSERT_TRUE(PushShard(1, 2).ok());
  ASSERT_TRUE(PushShard(2, 2).ok());
  ASSERT_TRUE(MergeParts(*store_, "snap", {}).ok());
  for (uint32_t i = 1; i <= 2; ++i) {
    auto r = PushShard(i, 2);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->uploaded_objects, 0u) << "shard " << i;
  }
}

}  // namespace
}  // namespace cutover
