// Parallel push with the files cache and journal, and verify, over a file:// store.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/state.h"
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

TEST(ParallelPushTest, RepushReadsNothingAndVerifyFindsCorruption) {
  testing::TempDir dir;
  std::string src = dir.Join("src");
  ASSERT_TRUE(MakeDirs(src + "/d").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/big", Random(2 << 20, 1)).ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(WriteFileAtomic(src + "/d/f" + std::to_string(i), Random(100, i + 2)).ok());
  }
  auto store = FileStore::Open("file://" + dir.Join("store"));
  ASSERT_TRUE(store.ok());
  auto state = DatasyncState::Open(dir.Join("state.db"));
  ASSERT_TRUE(state.ok()) << state.status().message();
  PushOptions opts;
  opts.name = "s";
  opts.chunker = ChunkerParams{4096, 16384, 131072};
  opts.jobs = 4;
  opts.state = state->get();
  auto first = Push(src, **store, opts);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->files_read, 51u);
  EXPECT_GT(first->uploaded_bytes, 2u << 20);
  auto again = Push(src, **store, opts);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->files_read, 0u);
  EXPECT_EQ(again->files_cached, 51u);
  EXPECT_EQ(again->uploaded_bytes, 0u);

  std::string dest = dir.Join("dest");
  auto pulled = Pull(**store, "s", dest, PullOptions{.jobs = 4});
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  auto ok = Verify(**store, "s", dest, 4);
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok->failures.empty()) << ok->failures[0];
  EXPECT_EQ(ok->files_checked, 51u);

  // Corrupt one chunk object in the store: verify names the file and the chunk.
  std::string victim;
  ASSERT_TRUE((*store)
                  ->List("chunks/",
                         [&](std::string_view k, uint64_t) {
                           if (victim.empty()) victim = std::string(k);
                           return Status::Ok();
                         })
                  .ok());
  ASSERT_FALSE(victim.empty());
  auto bytes = (*store)->Get(victim);
  ASSERT_TRUE(bytes.ok());
  (*bytes)[0] ^= 1;
  ASSERT_TRUE((*store)->Put(victim, *bytes).ok());
  auto bad = Verify(**store, "s", "", 4);
  ASSERT_TRUE(bad.ok());
  ASSERT_EQ(bad->failures.size(), 1u);
  std::string hex = victim.substr(victim.rfind('/') + 1);
  EXPECT_EQ(bad->failures[0],
            "file big: chunk " + hex + ": corrupt in the store (its SHA-256 does not match)");
}

}  // namespace
}  // namespace cutover
