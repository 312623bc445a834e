// WebDavStore against real nginx (dav + dav-ext modules) on loopback.
#include "datasync/webdav_store.h"

#include <sys/stat.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/datasync/gc_scenario.h"
#include "tests/harness/servers.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::NginxDav;
using testing::NginxDavOptions;

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (size_t j = 0; j < 8 && i + j < n; ++j) s[i + j] = static_cast<char>(v >> (8 * j));
  }
  return s;
}

class WebDavStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NginxDavOptions o;
    // /ro/ refuses writes.
    o.extra_server_config =
        "    location /ro/ { limit_except GET HEAD PROPFIND OPTIONS { deny all; } }\n";
    dav_ = std::make_unique<NginxDav>(o);
    Status s = dav_->Start();
    if (s.code() == Code::kEnvironment) CUTOVER_SKIP_OR_FAIL(s.message());
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<Store> Open(const std::string& path, StoreOptions options = {}) {
    options.http.backoff_base = std::chrono::milliseconds(1);
    auto r = OpenWebDavStore(dav_->url() + path, options);
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

  std::unique_ptr<NginxDav> dav_;
};

TEST_F(WebDavStoreTest, PutGetRangeHeadDelete) {
  auto store = Open("/data");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Url(), dav_->url() + "/data");
  ASSERT_TRUE(store->Put("chunks/ab/cd/obj1", "hello, world").ok());
  // nginx created the parents and stored the bytes under the base path.
  struct stat st;
  ASSERT_EQ(::stat((dav_->root() + "/data/chunks/ab/cd/obj1").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 12);

  auto got = store->Get("chunks/ab/cd/obj1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, "hello, world");
  auto range = store->GetRange("chunks/ab/cd/obj1", 7, 5);
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  EXPECT_EQ(*range, "world");
  auto head = store->Head("chunks/ab/cd/obj1");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(*head, 12u);
  EXPECT_EQ(store->Exists("chunks/ab/cd/obj1").value_or(false), true);

  // Past the end: Corruption naming the sizes.
  auto beyond = store->GetRange("chunks/ab/cd/obj1", 10, 5);
  ASSERT_EQ(beyond.status().code(), Code::kCorruption) << beyond.status().ToString();
  EXPECT_EQ(beyond.status().message(), "GET " + dav_->url() +
                                           "/data/chunks/ab/cd/obj1: object is 12 bytes, shorter "
                                           "than offset 10 + length 5");
  auto after_end = store->GetRange("chunks/ab/cd/obj1", 20, 5);
  EXPECT_EQ(after_end.status().code(), Code::kCorruption) << after_end.status().ToString();

  // Overwrite, then delete twice (idempotent).
  ASSERT_TRUE(store->Put("chunks/ab/cd/obj1", "").ok());
  EXPECT_EQ(store->Head("chunks/ab/cd/obj1").value_or(99), 0u);
  EXPECT_EQ(store->Get("chunks/ab/cd/obj1").value_or("x"), "");
  ASSERT_TRUE(store->Delete("chunks/ab/cd/obj1").ok());
  ASSERT_TRUE(store->Delete("chunks/ab/cd/obj1").ok());

  auto missing = store->Get("chunks/ab/cd/obj1");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "GET " + dav_->url() + "/data/chunks/ab/cd/obj1: not found (HTTP 404)");
  EXPECT_EQ(store->Head("chunks/ab/cd/obj1").status().code(), Code::kNotFound);
  EXPECT_EQ(store->GetRange("chunks/ab/cd/obj1", 0, 1).status().code(), Code::kNotFound);
  EXPECT_EQ(store->Exists("chunks/ab/cd/obj1").value_or(true), false);
}

TEST_F(WebDavStoreTest, BadKeysAreRefusedBeforeSending) {
  auto store = Open("/data");
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Put("../x", "a").code(), Code::kInvalidArgument);
  EXPECT_EQ(store->Get("a//b").status().code(), Code::kInvalidArgument);
  Status s = store->List("a b", [](std::string_view, uint64_t) { return Status::Ok(); });
  EXPECT_EQ(s.message(), "bad store key prefix \"a b\": character outside [A-Za-z0-9._-/]");
}

TEST_F(WebDavStoreTest, ListsNestedPrefixes1500Objects) {
  auto store = Open("/data");
  ASSERT_NE(store, nullptr);
  std::map<std::string, uint64_t> want;
  // 1,500 chunks over 2-level prefixes, written straight into nginx's root to keep this fast.
  for (int i = 0; i < 1500; ++i) {
    char a[3], b[3];
    snprintf(a, sizeof a, "%02x", i % 16);
    snprintf(b, sizeof b, "%02x", (i / 16) % 8);
    std::string key = std::string("chunks/") + a + "/" + b + "/c" + std::to_string(i);
    std::string dir = dav_->root() + "/data/chunks/" + a + "/" + b;
    ASSERT_TRUE(MakeDirs(dir).ok());
    std::string body(static_cast<size_t>(i % 7), 'x');
    FILE* f = fopen((dav_->root() + "/data/" + key).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fwrite(body.data(), 1, body.size(), f);
    fclose(f);
    want[key] = body.size();
  }
  ASSERT_TRUE(store->Put("snapshots/s1", "manifest").ok());
  ASSERT_TRUE(store->Put("config", "cfg").ok());

  EXPECT_EQ(ListAll(store.get(), "chunks/"), want);
  auto all = ListAll(store.get(), "");
  EXPECT_EQ(all.size(), 1502u);
  EXPECT_EQ(all["snapshots/s1"], 8u);
  EXPECT_EQ(all["config"], 3u);
  // A prefix that ends inside a component.
  auto part = ListAll(store.get(), "chunks/0a/0");
  size_t expect_part = 0;
  for (auto& [k, v] : want) expect_part += k.starts_with("chunks/0a/0");
  EXPECT_EQ(part.size(), expect_part);
  EXPECT_GT(expect_part, 0u);
  EXPECT_EQ(ListAll(store.get(), "snap"), (std::map<std::string, uint64_t>{{"snapshots/s1", 8}}));
  // Nothing there: an empty listing, not an error.
  EXPECT_TRUE(ListAll(store.get(), "packs/").empty());
  auto fresh = Open("/nothing-here");
  EXPECT_TRUE(ListAll(fresh.get(), "").empty());

  // fn's error stops the listing and is returned.
  int calls = 0;
  Status s = store->List("chunks/", [&](std::string_view, uint64_t) {
    return ++calls == 3 ? Status::Aborted("enough") : Status::Ok();
  });
  EXPECT_EQ(s.code(), Code::kAborted);
  EXPECT_EQ(calls, 3);
}

TEST_F(WebDavStoreTest, Put20MiBAndRead) {
  auto store = Open("/big");
  ASSERT_NE(store, nullptr);
  std::string data = RandomBytes(20 << 20, 7);
  ASSERT_TRUE(store->Put("packs/00/11/big", data).ok());
  EXPECT_EQ(store->Head("packs/00/11/big").value_or(0), data.size());
  auto got = store->Get("packs/00/11/big");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(*got == data);
  auto mid = store->GetRange("packs/00/11/big", 12345678, 1000000);
  ASSERT_TRUE(mid.ok());
  EXPECT_TRUE(*mid == data.substr(12345678, 1000000));
}

TEST_F(WebDavStoreTest, ConcurrentPutsFrom8Threads) {
  auto store = Open("/data");
  ASSERT_NE(store, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        std::string key =
            "chunks/" + std::to_string(t) + "/" + std::to_string(i % 5) + "/o" + std::to_string(i);
        std::string body = RandomBytes(1000 + 37 * i, t * 100 + i);
        if (!store->Put(key, body).ok()) ++failures;
        auto got = store->Get(key);
        if (!got.ok() || *got != body) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ListAll(store.get(), "chunks/").size(), 200u);
}

// nginx answers a PUT into a missing collection with 500 even with create_full_put_path off, so
// an RFC 4918 server (409 Conflict until the parents exist, like Apache mod_dav) is scripted.
TEST(WebDavStoreMkcolTest, MakesParentsWhenTheServerAnswers409) {
  testing::ScriptedHttpServer server;
  ASSERT_TRUE(server.Start().ok());
  std::set<std::string> collections = {"/"};
  std::map<std::string, std::string> files;
  server.SetHandler([&](const testing::RecordedRequest& r) -> testing::ScriptedResponse {
    std::string parent = r.target.substr(0, r.target.rfind('/', r.target.size() - 2) + 1);
    if (r.method == "MKCOL") {
      if (collections.count(r.target)) return {.status = 405};
      if (!collections.count(parent)) return {.status = 409};
      collections.insert(r.target);
      return {.status = 201};
    }
    if (r.method == "PUT") {
      if (!collections.count(parent)) return {.status = 409};
      files[r.target] = r.body;
      return {.status = 201};
    }
    if (r.method == "GET" && files.count(r.target)) return {.status = 200, .body = files[r.target]};
    return {.status = 404};
  });
  auto store = OpenWebDavStore(server.Url("/base"), {});
  ASSERT_TRUE(store.ok());
  Status s = (*store)->Put("chunks/ab/cd/x", "payload");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(files["/base/chunks/ab/cd/x"], "payload");
  EXPECT_EQ((*store)->Get("chunks/ab/cd/x").value_or(""), "payload");
  std::vector<std::string> seen;
  for (const auto& r : server.requests()) seen.push_back(r.method + " " + r.target);
  EXPECT_EQ(seen, (std::vector<std::string>{"PUT /base/chunks/ab/cd/x", "MKCOL /base/",
                                            "MKCOL /base/chunks/", "MKCOL /base/chunks/ab/",
                                            "MKCOL /base/chunks/ab/cd/", "PUT /base/chunks/ab/cd/x",
                                            "GET /base/chunks/ab/cd/x"}));
  // A sibling needs no MKCOL.
  server.ClearRecords();
  EXPECT_TRUE((*store)->Put("chunks/ab/cd/y", "2").ok());
  EXPECT_EQ(server.request_count(), 1u);
}

TEST_F(WebDavStoreTest, PermissionDeniedNamesTheUrlWithoutCredentials) {
  auto store = Open("/ro");
  ASSERT_NE(store, nullptr);
  Status s = store->Put("config", "x");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "PUT " + dav_->url() + "/ro/config: permission denied (HTTP 403)");

  // Credentials in the URL: used for Basic auth, never shown.
  std::string url = dav_->url();
  url.insert(std::string("http://").size(), "alice:s3cr%40t@");
  auto with_creds = OpenWebDavStore(url + "/ro", {});
  ASSERT_TRUE(with_creds.ok());
  EXPECT_EQ((*with_creds)->Url(), dav_->url() + "/ro");
  Status s2 = (*with_creds)->Delete("config");
  EXPECT_EQ(s2.message(), "DELETE " + dav_->url() + "/ro/config: permission denied (HTTP 403)");
  EXPECT_EQ(s2.message().find("s3cr"), std::string::npos);
}

TEST_F(WebDavStoreTest, UnreachableServerIsUnavailable) {
  int port = testing::FreeLoopbackPort();
  StoreOptions o;
  o.http.max_attempts = 2;
  o.http.backoff_base = std::chrono::milliseconds(1);
  auto store = OpenWebDavStore("http://127.0.0.1:" + std::to_string(port) + "/x", o);
  ASSERT_TRUE(store.ok());
  auto r = (*store)->Get("config");
  EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().ToString();
}

TEST(WebDavStoreOpenTest, RejectsBadUrls) {
  EXPECT_EQ(OpenWebDavStore("ftp://h/x", {}).status().message(),
            "bad WebDAV store URL: expected http(s)://host/path");
  EXPECT_EQ(OpenWebDavStore("http://h/x?y=1", {}).status().message(),
            "bad WebDAV store URL: a query or fragment is not allowed");
  EXPECT_EQ(OpenWebDavStore("http:///x", {}).status().message(), "bad WebDAV store URL: no host");
  auto ok = OpenWebDavStore("https://u:p@h:1/a/b/", {});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->Url(), "https://h:1/a/b");
  EXPECT_EQ((*OpenWebDavStore("http://h", {}))->Url(), "http://h");
}

TEST_F(WebDavStoreTest, GcDeletesTheReplacedSnapshotsObjectsAndKeepsTheLiveOne) {
  auto store = Open("/gc");
  ASSERT_NE(store, nullptr);
  testing::TempDir tmp;
  testing::RunGcScenario(*store, tmp.path());
}

TEST_F(WebDavStoreTest, ShardedPushesMergeIntoASnapshotThatPulls) {
  auto store = Open("/shards");
  ASSERT_NE(store, nullptr);
  testing::TempDir tmp;
  testing::RunShardScenario(*store, tmp.path());
}

}  // namespace
}  // namespace cutover
