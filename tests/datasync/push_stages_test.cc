// Push's stages on their own (datasync/push.h runs them in order): the walk over a FileSystem,
// the file chunker, the object writer against the shared test store, and the packer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

#include "core/file_system.h"
#include "core/file_util.h"
#include "datasync/file_chunker.h"
#include "datasync/object_writer.h"
#include "datasync/packer.h"
#include "datasync/tree_walk.h"
#include "tests/datasync/test_store.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

const ChunkerParams kSmallChunks{4096, 16384, 131072};

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::vector<EntrySpool::Record> WalkAll(const FileSystem& fs, TreeWalkOptions o,
                                        TreeWalkCounts* counts = nullptr) {
  TreeWalk walk(fs, "/src", std::move(o));
  std::vector<EntrySpool::Record> out;
  EXPECT_TRUE(walk.Run([&](EntrySpool::Record r) {
                    out.push_back(std::move(r));
                    return Status::Ok();
                  })
                  .ok());
  if (counts != nullptr) *counts = walk.counts();
  return out;
}

TEST(TreeWalk, ListsInWalkOrderDirectoriesFirstLinksNotFollowed) {
  FakeFileSystem fs;
  fs.AddFile("/src/b.txt", "bb");
  fs.AddFile("/src/a/z", "zzz");
  fs.AddFile("/src/a/y", "y");
  fs.AddSymlink("/src/a.lnk", "a/z");
  fs.AddDir("/src/c");
  TreeWalkCounts counts;
  std::vector<EntrySpool::Record> got = WalkAll(fs, {}, &counts);
  std::vector<std::pair<std::string, EntryType>> paths;
  for (const auto& r : got) paths.emplace_back(r.entry.path, r.entry.type);
  EXPECT_EQ(paths, (std::vector<std::pair<std::string, EntryType>>{{"a", EntryType::kDir},
                                                                   {"a/y", EntryType::kFile},
                                                                   {"a/z", EntryType::kFile},
                                                                   {"a.lnk", EntryType::kSymlink},
                                                                   {"b.txt", EntryType::kFile},
                                                                   {"c", EntryType::kDir}}));
  EXPECT_EQ(got[3].entry.target, "a/z");
  EXPECT_EQ(got[2].key.size, 3u);
  EXPECT_EQ(counts.files, 3u);
  EXPECT_EQ(counts.dirs, 2u);
  EXPECT_EQ(counts.symlinks, 1u);
  EXPECT_EQ(counts.file_bytes, 6u);
}

TEST(TreeWalk, AShardEmitsItsOwnEntriesButDigestsTheWholeTree) {
  FakeFileSystem fs;
  for (int i = 0; i < 20; ++i) fs.AddFile("/src/d/f" + std::to_string(i), "x");
  TreeWalk whole(fs, "/src", {});
  ASSERT_TRUE(whole.Run([](EntrySpool::Record) { return Status::Ok(); }).ok());
  const uint64_t entries = whole.tree().entries();
  const ChunkId digest = whole.tree().Final();
  uint64_t emitted = 0;
  for (uint32_t i = 1; i <= 3; ++i) {
    TreeWalk part(fs, "/src", {.shard = ShardSpec{i, 3}});
    ASSERT_TRUE(part.Run([&](EntrySpool::Record r) {
                      EXPECT_TRUE(InShard(r.entry.path, ShardSpec{i, 3})) << r.entry.path;
                      ++emitted;
                      return Status::Ok();
                    })
                    .ok());
    EXPECT_EQ(part.tree().entries(), entries);
    EXPECT_EQ(part.tree().Final(), digest);
  }
  EXPECT_EQ(emitted, entries);  // every entry in exactly one shard
}

TEST(TreeWalk, RealFilesGetStatKeysLinksAndHoles) {
  testing::TempDir dir;
  const std::string src = dir.Join("src");
  ASSERT_TRUE(MakeDirs(src).ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/one", "1").ok());
  ASSERT_EQ(::link((src + "/one").c_str(), (src + "/two").c_str()), 0);
  const int fd = ::open((src + "/holes").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 8 << 20), 0);
  ::close(fd);
  ASSERT_EQ(::mkfifo((src + "/pipe").c_str(), 0644), 0);
  RealFileSystem fs("/");
  TreeWalk walk(fs, src, {});
  std::vector<EntrySpool::Record> got;
  ASSERT_TRUE(walk.Run([&](EntrySpool::Record r) {
                    got.push_back(std::move(r));
                    return Status::Ok();
                  })
                  .ok());
  ASSERT_EQ(got.size(), 3u);  // holes, one, two; the FIFO skipped
  EXPECT_EQ(got[0].entry.path, "holes");
  EXPECT_TRUE(got[0].entry.sparse);
  EXPECT_EQ(got[1].entry.link, "");
  EXPECT_EQ(got[2].entry.link, "one");
  struct stat st;
  ASSERT_EQ(::stat((src + "/one").c_str(), &st), 0);
  EXPECT_EQ(got[1].key.ino, st.st_ino);
  EXPECT_EQ(got[1].key.ctime_ns,
            static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec);
  EXPECT_EQ(walk.counts().skipped, std::vector<std::string>{"pipe (fifo)"});
}

struct Chunked {
  std::vector<CutChunk> chunks;  // bytes not kept
  std::string joined;
  FileChunkStats stats;
  Status status;
};

Chunked ChunkPath(const std::string& path, const PreviousChunks& previous = {}) {
  Chunked out;
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  const FileStatKey key{0, 0, static_cast<uint64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                        static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  Result<FileChunkStats> r =
      FileChunker(kSmallChunks).Run(fd, path, key, previous, [&](const CutChunk& c) {
        EXPECT_EQ(c.bytes.size(), c.length);
        EXPECT_EQ(Sha256Of(c.bytes), c.id);
        out.joined.append(c.bytes);
        CutChunk kept = c;
        kept.bytes = {};
        out.chunks.push_back(kept);
        return Status::Ok();
      });
  ::close(fd);
  out.status = r.status();
  if (r.ok()) out.stats = *r;
  return out;
}

TEST(FileChunker, CutsTheWholeFileAndNamesEachChunk) {
  testing::TempDir dir;
  const std::string data = Random(500000, 3);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("f"), data).ok());
  Chunked c = ChunkPath(dir.Join("f"));
  ASSERT_TRUE(c.status.ok()) << c.status.ToString();
  EXPECT_EQ(c.joined, data);
  EXPECT_GT(c.chunks.size(), 3u);
  for (const CutChunk& k : c.chunks) EXPECT_FALSE(k.small_file);
  EXPECT_EQ(c.stats.hashed_bytes, data.size());
  EXPECT_EQ(c.stats.scanned_bytes, data.size());
}

TEST(FileChunker, ASmallFileIsOneChunkMarkedForAPack) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.Join("s"), "tiny").ok());
  Chunked c = ChunkPath(dir.Join("s"));
  ASSERT_TRUE(c.status.ok());
  ASSERT_EQ(c.chunks.size(), 1u);
  EXPECT_TRUE(c.chunks[0].small_file);
}

TEST(FileChunker, WhatTheLastPushCutIsNeitherHashedNorScannedAgain) {
  testing::TempDir dir;
  const std::string data = Random(400000, 4);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("f"), data).ok());
  Chunked first = ChunkPath(dir.Join("f"));
  ASSERT_TRUE(first.status.ok());
  PreviousChunks previous;
  uint64_t offset = 0;
  for (size_t i = 0; i < first.chunks.size(); ++i) {
    const CutChunk& k = first.chunks[i];
    previous.by_digest.emplace(k.fast, std::make_pair(k.length, k.id));
    previous.by_offset.emplace(
        offset, PreviousChunks::At{k.length, k.fast, k.id, i + 1 == first.chunks.size()});
    offset += k.length;
  }
  Chunked again = ChunkPath(dir.Join("f"), previous);
  ASSERT_TRUE(again.status.ok());
  EXPECT_EQ(again.joined, data);
  EXPECT_EQ(again.chunks.size(), first.chunks.size());
  EXPECT_EQ(again.stats.hashed_bytes, 0u);
  EXPECT_EQ(again.stats.scanned_bytes, 0u);
}

TEST(FileChunker, AFileThatChangedWhileReadIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.Join("f");
  ASSERT_TRUE(WriteFileAtomic(path, Random(100000, 5)).ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  FileStatKey stale{0, 0, static_cast<uint64_t>(st.st_size), 1, 1};  // another mtime and ctime
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int handed = 0;
  Result<FileChunkStats> r =
      FileChunker(kSmallChunks).Run(fd, path, stale, {}, [&](const CutChunk&) {
        ++handed;
        return Status::Ok();
      });
  ::close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "file changed while being read: " + path);
}

TEST(ObjectWriter, PutsEachKeyOnceAndOnlyWhenTheStoreLacksItWhole) {
  TestStore store;
  ASSERT_TRUE(store.Put("chunks/aa", "whole").ok());
  ASSERT_TRUE(store.Put("chunks/bb", "cut").ok());  // a truncated object of another size
  store.ClearCalls();
  ObjectWriter writer(store, {});
  ASSERT_TRUE(writer.Upload("chunks/aa", "whole").ok());
  ASSERT_TRUE(writer.Upload("chunks/bb", "cut off").ok());
  ASSERT_TRUE(writer.Upload("chunks/cc", "new").ok());
  ASSERT_TRUE(writer.Upload("chunks/cc", "new").ok());
  EXPECT_EQ(store.Count("put"), 2);  // bb again, whole, and cc once
  EXPECT_EQ(store.objects().at("chunks/bb"), "cut off");
  EXPECT_EQ(writer.uploaded_objects(), 2u);
  EXPECT_EQ(writer.uploaded_bytes(), 10u);
  // Seen this run: no second Head.
  store.ClearCalls();
  Result<bool> have = writer.Present("chunks/aa", 5, /*exact=*/true);
  ASSERT_TRUE(have.ok());
  EXPECT_TRUE(*have);
  EXPECT_EQ(store.Count("head"), 0);
}

TEST(ObjectWriter, ADryRunOrAStoreThisPushCreatedPutsOrAsksNothing) {
  TestStore store;
  ObjectWriter dry(store, {.dry_run = true});
  ASSERT_TRUE(dry.Upload("chunks/aa", "bytes").ok());
  EXPECT_EQ(store.Count("put"), 0);
  EXPECT_EQ(dry.uploaded_objects(), 1u);  // what would be sent
  store.ClearCalls();
  ObjectWriter fresh(store, {.store_was_empty = true});
  ASSERT_TRUE(fresh.Upload("chunks/bb", "bytes").ok());
  EXPECT_EQ(store.Count("head"), 0);
  EXPECT_EQ(store.Count("put"), 1);
}

TEST(ObjectWriter, AStoreErrorIsReturned) {
  TestStore store;
  store.fail = [](std::string_view op, std::string_view) -> std::optional<Status> {
    if (op == "put") return Status::Unavailable("PUT: 503");
    return std::nullopt;
  };
  ObjectWriter writer(store, {});
  Status s = writer.Upload("chunks/aa", "bytes");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(writer.uploaded_objects(), 0u);
}

TEST(Packer, PacksSmallFilesOnceEachAndResolvesTheirPack) {
  TestStore store;
  ObjectWriter writer(store, {});
  uint64_t confirmed = 0;
  std::mutex mu;
  Packer packer(store, writer, kSmallChunks, [&](uint64_t n) {
    std::lock_guard<std::mutex> l(mu);
    confirmed += n;
  });
  TaskPool pool(2);
  std::vector<ChunkRef> refs;
  std::vector<bool> pending;
  int reads = 0;
  for (const std::string& text : std::vector<std::string>{"alpha", "beta", "alpha"}) {
    ChunkRef ref{Sha256Of(text), text.size(), false, {}, 0};
    bool p = false;
    ASSERT_TRUE(packer
                    .Place(
                        &ref, "f",
                        [&, text]() -> Result<std::string> {
                          ++reads;
                          return std::string(text);
                        },
                        pool, &p)
                    .ok());
    refs.push_back(ref);
    pending.push_back(p);
  }
  ASSERT_TRUE(packer.Flush(pool).ok());
  ASSERT_TRUE(pool.Wait().ok());
  EXPECT_EQ(reads, 2);  // the second "alpha" is the first one's member
  EXPECT_EQ(store.Count("put", "packs/"), 1);
  const std::string pack = store.objects().begin()->second;
  EXPECT_EQ(pack, "alphabeta");
  for (size_t i = 0; i < refs.size(); ++i) {
    ASSERT_TRUE(pending[i]);
    ASSERT_TRUE(packer.Resolve(&refs[i]).ok());
    EXPECT_TRUE(refs[i].packed);
    EXPECT_EQ(refs[i].pack, Sha256Of(pack));
  }
  EXPECT_EQ(refs[0].pack_offset, 0u);
  EXPECT_EQ(refs[1].pack_offset, 5u);
  EXPECT_EQ(refs[2].pack_offset, 0u);
  EXPECT_EQ(confirmed, 14u);
}

TEST(Packer, BytesThatDoNotMatchTheChunkAreRefused) {
  TestStore store;
  ObjectWriter writer(store, {});
  Packer packer(store, writer, kSmallChunks, nullptr);
  TaskPool pool(1);
  ChunkRef ref{Sha256Of("before"), 6, false, {}, 0};
  bool pending = false;
  Status s = packer.Place(
      &ref, "dir/f", [] { return Result<std::string>(std::string("after!")); }, pool, &pending);
  EXPECT_EQ(s.message(), "file changed while being read: dir/f");
}

}  // namespace
}  // namespace cutover
