// Push publishes a snapshot only when every object it names was seen whole: put in this push,
// found by a size-checked Head, or journaled and not disproved since. Run against each kind of
// store (a directory, nginx WebDAV, s3rver): a truncated chunk, a truncated pack (an S3 server's
// partial body after kill -9 looks like this) and a chunk deleted by hand are put again by the
// next push, and a verify or pull that finds a journaled object missing drops it from the
// journal, so the push after it puts it again.
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/snapshots.h"
#include "datasync/state.h"
#include "datasync/verify.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/datasync/tree.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::NginxDav;
using testing::S3rver;
using testing::Tree;

const ChunkerParams kSmall{4096, 16384, 131072};

std::optional<std::string> S3rverEnv(std::string_view name) {
  if (name == "AWS_ACCESS_KEY_ID") return std::string(S3rver::kAccessKey);
  if (name == "AWS_SECRET_ACCESS_KEY") return std::string(S3rver::kSecretKey);
  return std::nullopt;
}

class StoreTrustTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string kind = GetParam();
    std::string url;
    StoreOptions o;
    o.http.backoff_base = std::chrono::milliseconds(1);
    if (kind == "file") {
      url = "file://" + dir_.Join("store");
    } else if (kind == "webdav") {
      server_ = std::make_unique<NginxDav>();
      url = "";
    } else {
      server_ = std::make_unique<S3rver>();
      o.getenv = S3rverEnv;
    }
    if (server_ != nullptr) {
      Status s = server_->Start();
      if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (kind == "webdav") {
        url = server_->url() + "/store";
      } else {
        o.endpoint = server_->url();
        url = "s3://" + static_cast<S3rver*>(server_.get())->bucket() + "/store";
      }
    }
    auto store = OpenStore(url, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_ + "/small").ok());
    std::mt19937_64 rng(3);
    ASSERT_TRUE(WriteFileAtomic(src_ + "/big", testing::RandomBytes(rng, 600000)).ok());
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(
          WriteFileAtomic(src_ + "/small/" + std::to_string(i), "small " + std::to_string(i)).ok());
    }
    auto state = DatasyncState::Open(dir_.Join("state.db"));
    ASSERT_TRUE(state.ok());
    state_ = std::move(state).value();
  }

  Result<PushResult> DoPush(bool with_state) {
    PushOptions opts{"snap", kSmall};
    opts.state = with_state ? state_.get() : nullptr;
    return Push(src_, *store_, opts);
  }

  Manifest Snapshot() {
    auto bytes = store_->Get(testing::NewestKey(*store_, "snap"));
    EXPECT_TRUE(bytes.ok());
    auto m = DecodeManifest(bytes.ok() ? *bytes : "");
    EXPECT_TRUE(m.ok());
    return m.ok() ? *m : Manifest{};
  }

  // The store keys of big's chunks and of the pack the small files went into.
  std::vector<std::string> ChunksOfBig() {
    std::vector<std::string> keys;
    for (const Entry& e : Snapshot().entries) {
      if (e.path != "big") continue;
      for (const ChunkRef& c : e.chunks) keys.push_back(store_->Names().Chunk(c.id));
    }
    return keys;
  }
  std::string PackOfSmall() {
    for (const Entry& e : Snapshot().entries) {
      if (e.path == "small/0") return store_->Names().Pack(e.chunks.at(0).pack);
    }
    return "";
  }

  void Truncate(const std::string& key, size_t keep) {
    auto bytes = store_->Get(key);
    ASSERT_TRUE(bytes.ok()) << key;
    ASSERT_TRUE(store_->Put(key, bytes->substr(0, keep)).ok());
  }

  // Verify of the store and a pull into a fresh directory both pass, and the pull is the source.
  void ExpectRestorable(const std::string& dest) {
    auto v = Verify(*store_, "snap", "", 4);
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_TRUE(v->failures.empty()) << v->failures.front();
    auto p = Pull(*store_, "snap", dir_.Join(dest));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ(Tree(dir_.Join(dest)), Tree(src_));
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<DatasyncState> state_;
  std::string src_;
};

TEST_P(StoreTrustTest, TruncatedAndDeletedObjectsArePutAgainByTheNextPush) {
  ASSERT_TRUE(DoPush(false).ok());
  auto chunks = ChunksOfBig();
  ASSERT_GE(chunks.size(), 3u);
  Truncate(chunks[0], 100);
  Truncate(PackOfSmall(), 10);
  ASSERT_TRUE(store_->Delete(chunks[1]).ok());
  auto again = DoPush(false);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->uploaded_objects, 3u);
  ExpectRestorable("dest");
}

TEST_P(StoreTrustTest, AVerifyOrPullThatFindsAJournaledObjectGoneDropsItFromTheJournal) {
  ASSERT_TRUE(DoPush(true).ok());
  auto chunks = ChunksOfBig();
  ASSERT_GE(chunks.size(), 3u);
  ASSERT_TRUE(state_->IsConfirmed(store_->Url(), chunks[1]).value());
  ASSERT_TRUE(store_->Delete(chunks[1]).ok());
  auto v = Verify(*store_, "snap", "", 4, state_.get());
  ASSERT_TRUE(v.ok());
  ASSERT_EQ(v->failures.size(), 1u);
  EXPECT_FALSE(state_->IsConfirmed(store_->Url(), chunks[1]).value());
  auto again = DoPush(true);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->uploaded_objects, 1u);
  ExpectRestorable("dest");

  // A pull that finds a journaled chunk corrupt drops it likewise.
  Truncate(chunks[2], 50);
  PullOptions opts;
  opts.state = state_.get();
  auto p = Pull(*store_, "snap", dir_.Join("dest2"), opts);
  EXPECT_EQ(p.status().code(), Code::kCorruption);
  EXPECT_FALSE(state_->IsConfirmed(store_->Url(), chunks[2]).value());
  auto third = DoPush(true);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->uploaded_objects, 1u);
  ExpectRestorable("dest3");
}

// Pushes to one name at once all land, whatever the store: each publishes a snapshot of its own
// (datasync/snapshots.h), and each pulls back as the tree it pushed.
TEST_P(StoreTrustTest, PushesToOneNameAtOnceAllLandOnEveryStore) {
  std::vector<std::string> srcs;
  for (int i = 0; i < 3; ++i) {
    srcs.push_back(dir_.Join("tree" + std::to_string(i)));
    ASSERT_TRUE(MakeDirs(srcs.back()).ok());
    std::mt19937_64 rng(100 + i);
    ASSERT_TRUE(WriteFileAtomic(srcs.back() + "/data", testing::RandomBytes(rng, 200000 + i)).ok());
  }
  std::vector<Result<PushResult>> results(srcs.size(), Status::Internal("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < srcs.size(); ++i) {
    threads.emplace_back([&, i] {
      PushOptions opts{"same", kSmall};
      opts.jobs = 2;
      results[i] = Push(srcs[i], *store_, opts);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < srcs.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status().ToString();
    const std::string dest = dir_.Join("out" + std::to_string(i));
    auto pulled = Pull(*store_, SnapshotSelector::Id(results[i]->snapshot_id), dest, {});
    ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
    EXPECT_EQ(Tree(dest), Tree(srcs[i])) << "push " << i << "'s snapshot was lost";
  }
  auto series = ListSnapshots(*store_, std::string("same"));
  ASSERT_TRUE(series.ok()) << series.status().ToString();
  EXPECT_EQ(series->size(), srcs.size());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTrustTest, ::testing::Values("file", "webdav", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace cutover
