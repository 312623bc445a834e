// S3Store against the npm S3 server s3rver on loopback (request shapes and data round trips;
// signatures are checked against botocore in s3_sigv4_test.cc).
#include "datasync/s3_store.h"

#include <stdlib.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/datasync/gc_scenario.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::S3rver;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (size_t j = 0; j < 8 && i + j < n; ++j) s[i + j] = static_cast<char>(v >> (8 * j));
  }
  return s;
}

std::optional<std::string> S3rverEnv(std::string_view name) {
  if (name == "AWS_ACCESS_KEY_ID") return std::string(S3rver::kAccessKey);
  if (name == "AWS_SECRET_ACCESS_KEY") return std::string(S3rver::kSecretKey);
  return std::nullopt;
}

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<S3rver>();
    Status s = server_->Start();
    if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  StoreOptions Options() const {
    StoreOptions o;
    o.endpoint = server_->url();
    o.getenv = S3rverEnv;
    o.http.backoff_base = std::chrono::milliseconds(1);
    return o;
  }

  std::unique_ptr<Store> Open(const std::string& url, StoreOptions o) {
    auto r = OpenS3Store(url, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::map<std::string, uint64_t> ListAll(Store* store, std::string_view prefix) {
    std::map<std::string, uint64_t> out;
    Status s = store->List(prefix, [&](std::string_view k, uint64_t size) {
      EXPECT_TRUE(out.emplace(std::string(k), size).second) << "listed twice: " << k;
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  std::string ObjectUrl(const std::string& key) const { return server_->ObjectUrl(key); }

  std::unique_ptr<S3rver> server_;
};

TEST_F(S3StoreTest, PutGetRangeHeadDelete) {
  auto store = Open("s3://cutover/data", Options());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put("chunks/ab/cd/obj1", "hello, world").ok());
  auto got = store->Get("chunks/ab/cd/obj1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "hello, world");
  auto range = store->GetRange("chunks/ab/cd/obj1", 7, 5);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(*range, "world");
  EXPECT_EQ(store->Head("chunks/ab/cd/obj1").value_or(0), 12u);
  auto beyond = store->GetRange("chunks/ab/cd/obj1", 10, 5);
  EXPECT_EQ(beyond.status().code(), Code::kCorruption) << beyond.status().ToString();

  ASSERT_TRUE(store->Put("chunks/ab/cd/obj1", "").ok());
  EXPECT_EQ(store->Head("chunks/ab/cd/obj1").value_or(99), 0u);
  ASSERT_TRUE(store->Delete("chunks/ab/cd/obj1").ok());
  ASSERT_TRUE(store->Delete("chunks/ab/cd/obj1").ok());

  auto missing = store->Get("chunks/ab/cd/obj1");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "GET " + ObjectUrl("data/chunks/ab/cd/obj1") +
                ": not found (HTTP 404 NoSuchKey: The specified key does not exist.)");
  EXPECT_EQ(store->Head("chunks/ab/cd/obj1").status().code(), Code::kNotFound);
  EXPECT_EQ(store->Exists("chunks/ab/cd/obj1").value_or(true), false);
  EXPECT_EQ(store->GetRange("chunks/ab/cd/obj1", 0, 4).status().code(), Code::kNotFound);
}

TEST_F(S3StoreTest, ListPagesWithContinuationTokens) {
  StoreOptions o = Options();
  o.list_page_size = 100;
  auto list_requests = std::make_shared<std::atomic<int>>(0);
  o.http.observer = [list_requests](const HttpAttempt& a) {
    if (a.request->url.find("list-type=2") != std::string::npos) ++*list_requests;
  };
  auto store = Open("s3://cutover/ds", o);
  ASSERT_NE(store, nullptr);
  // s3rver takes ~5 ms a PUT: 450 objects make 5 pages of 100.
  constexpr int kObjects = 450;
  std::map<std::string, uint64_t> want;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kObjects; i += 8) {
        char a[8];
        snprintf(a, sizeof a, "%02x/%02x", i % 16, (i / 16) % 4);
        std::string key = std::string("chunks/") + a + "/c" + std::to_string(i);
        if (!store->Put(key, std::string(static_cast<size_t>(i % 5), 'y')).ok()) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  for (int i = 0; i < kObjects; ++i) {
    char a[8];
    snprintf(a, sizeof a, "%02x/%02x", i % 16, (i / 16) % 4);
    want[std::string("chunks/") + a + "/c" + std::to_string(i)] = static_cast<uint64_t>(i % 5);
  }
  ASSERT_TRUE(store->Put("snapshots/s1", "manifest").ok());
  // Outside the store's prefix: never listed.
  auto other = Open("s3://cutover/ds2", o);
  ASSERT_TRUE(other->Put("chunks/00/00/x", "z").ok());

  EXPECT_EQ(ListAll(store.get(), "chunks/"), want);
  EXPECT_EQ(list_requests->load(), 5);  // 450 keys, 100 a page
  EXPECT_EQ(ListAll(store.get(), "").size(), want.size() + 1);
  EXPECT_EQ(ListAll(store.get(), "snap"), (std::map<std::string, uint64_t>{{"snapshots/s1", 8}}));
  size_t in_0a01 = 0;
  for (const auto& [k, v] : want) in_0a01 += k.starts_with("chunks/0a/01/");
  EXPECT_EQ(ListAll(store.get(), "chunks/0a/01/").size(), in_0a01);
  EXPECT_GT(in_0a01, 0u);
  EXPECT_TRUE(ListAll(store.get(), "packs/").empty());
}

TEST_F(S3StoreTest, Put20MiBAndConcurrentPuts) {
  auto store = Open("s3://cutover/big", Options());
  ASSERT_NE(store, nullptr);
  std::string data = RandomBytes(20 << 20, 3);
  Status s = store->Put("packs/00/11/big", data);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(store->Head("packs/00/11/big").value_or(0), data.size());
  auto got = store->Get("packs/00/11/big");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == data);
  auto mid = store->GetRange("packs/00/11/big", 5000000, 123457);
  ASSERT_TRUE(mid.ok());
  EXPECT_TRUE(*mid == data.substr(5000000, 123457));

  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string key = "chunks/" + std::to_string(t) + "/o" + std::to_string(i);
        std::string body = RandomBytes(5000 + i, t * 10 + i);
        if (!store->Put(key, body).ok()) ++failures;
        auto back = store->Get(key);
        if (!back.ok() || *back != body) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ListAll(store.get(), "chunks/").size(), 80u);
}

TEST_F(S3StoreTest, WrongAccessKeyIsPermissionDenied) {
  StoreOptions o = Options();
  o.getenv = [](std::string_view name) -> std::optional<std::string> {
    if (name == "AWS_ACCESS_KEY_ID") return "NOTAKEY";
    if (name == "AWS_SECRET_ACCESS_KEY") return "whatever";
    return std::nullopt;
  };
  auto store = Open("s3://cutover/data", o);
  ASSERT_NE(store, nullptr);
  Status s = store->Put("config", "x");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_TRUE(s.message().starts_with("PUT " + ObjectUrl("data/config") +
                                      ": permission denied (HTTP 403 InvalidAccessKeyId"))
      << s.message();
  EXPECT_EQ(s.message().find("whatever"), std::string::npos);
}

TEST_F(S3StoreTest, MissingBucketIsFailedPrecondition) {
  auto store = Open("s3://no-such-bucket/data", Options());
  ASSERT_NE(store, nullptr);
  Status s = store->Put("config", "x");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_TRUE(
      s.message().starts_with("PUT " + server_->url() +
                              "/no-such-bucket/data/config: the bucket does not exist (HTTP 404 "
                              "NoSuchBucket"))
      << s.message();
}

TEST_F(S3StoreTest, GcDeletesTheReplacedSnapshotsObjectsAndKeepsTheLiveOne) {
  auto store = Open("s3://cutover/gc", Options());
  ASSERT_NE(store, nullptr);
  testing::TempDir tmp;
  testing::RunGcScenario(*store, tmp.path());
}

TEST_F(S3StoreTest, ShardedPushesMergeIntoASnapshotThatPulls) {
  auto store = Open("s3://cutover/shards", Options());
  ASSERT_NE(store, nullptr);
  testing::TempDir tmp;
  testing::RunShardScenario(*store, tmp.path());
}

}  // namespace
}  // namespace cutover
