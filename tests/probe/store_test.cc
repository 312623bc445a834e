// probe's fingerprint table: rows read back by host in collection order, the host key, and the
// error for a document without a collection time.
#include "probe/store.h"

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

Fingerprint At(const std::string& host, const std::string& when) {
  Fingerprint fp;
  fp.hostname = host;
  fp.collection.collected_at = when;
  fp.driver.version = "550.54.14";
  return fp;
}

TEST(FingerprintStoreTest, ReadsBackByHostInCollectionOrder) {
  testing::TempDir dir;
  Result<FingerprintStore> store = FingerprintStore::Open(dir.Join("state.db"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE(store->Add(At("gpu-2", "2026-01-02T00:00:00Z")).ok());
  ASSERT_TRUE(store->Add(At("gpu-1", "2026-01-03T00:00:00Z")).ok());
  ASSERT_TRUE(store->Add(At("gpu-1", "2026-01-01T00:00:00Z")).ok());
  Result<std::vector<StoredFingerprint>> rows = store->ForHost("gpu-1");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].collected_at, "2026-01-01T00:00:00Z");
  EXPECT_EQ((*rows)[1].collected_at, "2026-01-03T00:00:00Z");
  EXPECT_EQ((*rows)[1].host, "gpu-1");
  Result<Fingerprint> back = ParseFingerprint((*rows)[1].document);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FingerprintToJson(*back), FingerprintToJson(At("gpu-1", "2026-01-03T00:00:00Z")));
}

TEST(FingerprintStoreTest, ReopeningKeepsRows) {
  testing::TempDir dir;
  {
    Result<FingerprintStore> store = FingerprintStore::Open(dir.Join("state.db"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE(store->Add(At("h", "2026-01-01T00:00:00Z")).ok());
  }
  Result<FingerprintStore> again = FingerprintStore::Open(dir.Join("state.db"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ForHost("h")->size(), 1u);
}

TEST(FingerprintStoreTest, HostKey) {
  Fingerprint fp;
  fp.collection.root = "/mnt/image";
  EXPECT_EQ(FingerprintStore::HostKey(fp), "root:/mnt/image");
  fp.hostname = "";
  EXPECT_EQ(FingerprintStore::HostKey(fp), "root:/mnt/image");
  fp.hostname = "gpu-7";
  EXPECT_EQ(FingerprintStore::HostKey(fp), "gpu-7");
}

TEST(FingerprintStoreTest, DocumentWithoutCollectionTimeIsRefused) {
  Result<FingerprintStore> store = FingerprintStore::Open(":memory:");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Fingerprint fp;
  fp.hostname = "h";
  Result<int64_t> id = store->Add(fp);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(id.status().message(), "the fingerprint has no collection.collected_at to store it by");
  EXPECT_EQ(store->ForHost("h")->size(), 0u);
}

}  // namespace
}  // namespace cutover::probe
