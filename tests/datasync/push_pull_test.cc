#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "datasync/file_store.h"
#include "datasync/manifest.h"
#include "datasync/pull.h"
#include "datasync/push.h"
#include "datasync/state.h"
#include "datasync/verify.h"
#include "tests/datasync/snapshot_keys.h"
#include "tests/datasync/test_store.h"
#include "tests/datasync/tree.h"
#include "tests/harness/scripted_http_server.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using testing::Tree;

const ChunkerParams kSmall{4096, 16384, 131072};

std::string Random(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

void Write(const std::string& path, const std::string& data, mode_t mode = 0644) {
  ASSERT_TRUE(WriteFileAtomic(path, data, mode).ok());
  ASSERT_EQ(::chmod(path.c_str(), mode), 0);
}

void SetMtime(const std::string& path, int64_t sec, long nsec) {
  struct timespec t[2] = {{sec, nsec}, {sec, nsec}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW), 0);
}

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 1));
  return out;
}

// The put, get, range and head calls a TestStore logged, in order.
std::vector<std::string> ObjectCalls(const TestStore& store) {
  std::vector<std::string> out;
  for (const std::string& c : store.calls()) {
    if (!c.starts_with("list ") && !c.starts_with("delete ")) out.push_back(c);
  }
  return out;
}

class PushPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_ + "/data/deep").ok());
    big_ = Random(600000, 1);
    Write(src_ + "/data/big.bin", big_, 0640);
    Write(src_ + "/data/run.sh", "#!/bin/sh\necho hi\n", 0755);
    Write(src_ + "/data/empty", "");
    for (int i = 0; i < 50; ++i) {
      Write(src_ + "/data/deep/s" + std::to_string(i), "small file " + std::to_string(i % 40));
    }
    ASSERT_EQ(::symlink("data/big.bin", (src_ + "/latest").c_str()), 0);
    ASSERT_EQ(::symlink("/etc/hostname", (src_ + "/abs").c_str()), 0);
    ASSERT_EQ(::mkfifo((src_ + "/data/fifo").c_str(), 0644), 0);
    SetMtime(src_ + "/data/big.bin", 1600000000, 123456789);
    SetMtime(src_ + "/latest", 1600000001, 5);
    ASSERT_EQ(::chmod((src_ + "/data/deep").c_str(), 0750), 0);
    SetMtime(src_ + "/data/deep", 1600000002, 7);
    auto s = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  Result<PushResult> DoPush(Store& store, const ChunkerParams& p = kSmall) {
    return Push(src_, store, PushOptions{"snap", p});
  }

  // The source tree as its snapshot holds it: everything but the FIFO, which push skips.
  std::map<std::string, std::string> StoredTree() {
    auto want = Tree(src_);
    want.erase("data/fifo");
    return want;
  }

  // Removes the store and makes a new, empty one at the same URL.
  void RecreateStore() {
    std::filesystem::remove_all(dir_.Join("store"));
    auto again = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(again.ok());
    store_ = std::move(again).value();
  }

  // Push options with a state database (files cache and journal) in the test directory.
  PushOptions WithState() {
    auto state = DatasyncState::Open(dir_.Join("state.db"));
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    if (state.ok()) state_ = std::move(state).value();
    PushOptions opts{"snap", kSmall};
    opts.state = state_.get();
    return opts;
  }

  testing::TempDir dir_;
  std::string src_;
  std::string big_;
  std::unique_ptr<FileStore> store_;
  std::unique_ptr<DatasyncState> state_;
};

TEST_F(PushPullTest, RoundTripRestoresContentModesTimesAndLinks) {
  auto pushed = DoPush(*store_);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(pushed->files, 53u);
  EXPECT_EQ(pushed->dirs, 2u);
  EXPECT_EQ(pushed->symlinks, 2u);
  EXPECT_EQ(pushed->skipped, std::vector<std::string>{"data/fifo (fifo)"});
  // 50 small files with 40 distinct contents and run.sh go into one pack.
  size_t packs = 0, chunks = 0;
  ASSERT_TRUE(store_
                  ->List("",
                         [&](std::string_view k, uint64_t) {
                           packs += k.starts_with("packs/");
                           chunks += k.starts_with("chunks/");
                           return Status::Ok();
                         })
                  .ok());
  EXPECT_EQ(packs, 1u);
  EXPECT_GE(chunks, 600000u / kSmall.max_size);
  EXPECT_EQ(pushed->uploaded_objects, packs + chunks);

  auto pulled = Pull(*store_, "snap", dir_.Join("dest"));
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
  EXPECT_EQ(pulled->bytes, pushed->bytes);

  // Pulling again over the restored tree gives the same tree.
  ASSERT_TRUE(Pull(*store_, "snap", dir_.Join("dest")).ok());
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
}

TEST_F(PushPullTest, RepushSendsOnlyWhatChanged) {
  auto first = DoPush(*store_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = DoPush(*store_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->uploaded_objects, 0u);
  std::string edited = big_;
  edited[300000] ^= 1;
  Write(src_ + "/data/big.bin", edited, 0640);
  auto third = DoPush(*store_);
  ASSERT_TRUE(third.ok());
  EXPECT_GE(third->uploaded_objects, 1u);
  EXPECT_LE(third->uploaded_objects, 2u);
  EXPECT_LE(third->uploaded_bytes, 2 * kSmall.max_size);
}

// More entries than the push holds in memory at once, and small files filling several packs,
// some packs spanning two windows: the snapshot restores exactly, and a re-push reuses every pack.
TEST_F(PushPullTest, ManyFilesAcrossWindowsAndPacksRoundTrip) {
  const std::string many = src_ + "/many";
  ASSERT_TRUE(MakeDirs(many).ok());
  for (int i = 0; i < 9000; ++i) {
    // 9000 files of ~40 bytes with 6000 distinct contents: about three 131 KB packs.
    Write(many + "/f" + std::to_string(i),
          "content " + std::to_string(i % 6000) + std::string(30, static_cast<char>('a' + i % 26)));
  }
  auto pushed = DoPush(*store_);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  EXPECT_EQ(pushed->files, 9053u);
  size_t packs = 0;
  ASSERT_TRUE(store_
                  ->List("packs/",
                         [&](std::string_view, uint64_t) {
                           ++packs;
                           return Status::Ok();
                         })
                  .ok());
  EXPECT_GE(packs, 3u);
  auto pulled = Pull(*store_, "snap", dir_.Join("dest"));
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
  auto again = DoPush(*store_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->uploaded_objects, 0u);
}

// With the files cache, a re-push of an edited file computes the SHA-256 of the chunks the edit
// touched only: the rest are known by their fast digest. The restore has the edit.
TEST_F(PushPullTest, RepushOfAnEditedFileHashesOnlyTheChunksTheEditTouched) {
  PushOptions opts = WithState();
  auto first = Push(src_, *store_, opts);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->hashed_bytes, first->bytes);
  EXPECT_EQ(first->scanned_bytes, first->bytes);
  std::string edited = big_;
  edited[300000] ^= 1;
  Write(src_ + "/data/big.bin", edited, 0640);
  auto second = Push(src_, *store_, opts);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->files_read, 1u);
  EXPECT_GT(second->hashed_bytes, 0u);
  EXPECT_LE(second->hashed_bytes, 2 * kSmall.max_size);
  // Chunks after the edit start where they started before and are not scanned again.
  EXPECT_GT(second->scanned_bytes, 0u);
  EXPECT_LE(second->scanned_bytes, 2 * kSmall.max_size);
  EXPECT_LT(second->scanned_bytes, big_.size());
  EXPECT_GE(second->uploaded_objects, 1u);
  EXPECT_LE(second->uploaded_objects, 2u);
  auto pulled = Pull(*store_, "snap", dir_.Join("dest"));
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
}

TEST_F(PushPullTest, RepullDownloadsOnlyTheChangedChunks) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  auto first = Pull(*store_, "snap", dest);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->reused_bytes, 0u);
  // Unchanged: nothing is downloaded and nothing rewritten (the inode stays).
  struct stat before;
  ASSERT_EQ(::stat((dest + "/data/big.bin").c_str(), &before), 0);
  auto same = Pull(*store_, "snap", dest);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->downloaded_bytes, 0u);
  EXPECT_EQ(same->reused_bytes, same->bytes);
  struct stat after;
  ASSERT_EQ(::stat((dest + "/data/big.bin").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  // 4 KB changed in the middle of big.bin, and a small file rewritten: a few chunks travel.
  std::string changed = big_;
  for (size_t i = 300000; i < 304096; ++i) changed[i] = static_cast<char>(changed[i] ^ 0x5a);
  Write(src_ + "/data/big.bin", changed, 0640);
  SetMtime(src_ + "/data/big.bin", 1600000100, 0);
  Write(src_ + "/data/deep/s3", "rewritten");
  ASSERT_TRUE(DoPush(*store_).ok());
  // The user damaged their copy of another chunk meanwhile: it must be downloaded, not trusted.
  {
    std::string mine = *ReadFile(dest + "/data/big.bin");
    mine[10] = static_cast<char>(mine[10] ^ 1);
    Write(dest + "/data/big.bin", mine, 0640);
  }
  // A dry run first: it announces exactly what the pull then does, and touches nothing.
  const auto before_dry = Tree(dest);
  PullOptions dry_opts;
  dry_opts.dry_run = true;
  auto dry = Pull(*store_, "snap", dest, dry_opts);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(Tree(dest), before_dry);
  auto second = Pull(*store_, "snap", dest);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(dry->downloaded_bytes, second->downloaded_bytes);
  EXPECT_EQ(dry->reused_bytes, second->reused_bytes);
  EXPECT_EQ(dry->bytes, second->bytes);
  EXPECT_EQ(dry->files, second->files);
  EXPECT_EQ(Tree(dest), StoredTree());
  EXPECT_GT(second->downloaded_bytes, 0u);
  EXPECT_LT(second->downloaded_bytes, second->bytes / 4)
      << "downloaded " << second->downloaded_bytes << " of " << second->bytes;
  EXPECT_EQ(second->downloaded_bytes + second->reused_bytes, second->bytes);
}

TEST_F(PushPullTest, RepullTakesChunksOfMovedFilesFromTheirOldPaths) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store_, "snap", dest).ok());
  // The dataset is reorganised: big.bin moves to another directory under another name, with a
  // 4 KB edit; the old path is gone from the snapshot.
  std::string moved = big_;
  for (size_t i = 100000; i < 104096; ++i) moved[i] = static_cast<char>(moved[i] ^ 0x33);
  ASSERT_TRUE(MakeDirs(src_ + "/archive").ok());
  Write(src_ + "/archive/big-2026.bin", moved, 0600);
  ASSERT_EQ(::unlink((src_ + "/data/big.bin").c_str()), 0);
  ASSERT_TRUE(DoPush(*store_).ok());
  PullOptions dry_opts;
  dry_opts.dry_run = true;
  auto dry = Pull(*store_, "snap", dest, dry_opts);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  auto second = Pull(*store_, "snap", dest);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*ReadFile(dest + "/archive/big-2026.bin"), moved);
  EXPECT_EQ(*ReadFile(dest + "/data/big.bin"), big_) << "a file the snapshot no longer names stays";
  EXPECT_GT(second->downloaded_bytes, 0u);
  EXPECT_LT(second->downloaded_bytes, moved.size() / 4)
      << "downloaded " << second->downloaded_bytes << " of " << second->bytes;
  EXPECT_GE(second->reused_bytes, moved.size() * 3 / 4);
  EXPECT_EQ(dry->downloaded_bytes, second->downloaded_bytes);
  EXPECT_EQ(dry->reused_bytes, second->reused_bytes);
  // A file whose bytes differ everywhere (a byte flipped every 4 KB) lends no chunk.
  const std::string again = dir_.Join("again");
  ASSERT_TRUE(MakeDirs(again).ok());
  std::string damaged = big_;
  for (size_t i = 0; i < damaged.size(); i += 4096) damaged[i] = static_cast<char>(damaged[i] ^ 1);
  Write(again + "/old.bin", damaged, 0600);
  auto third = Pull(*store_, "snap", again);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(*ReadFile(again + "/archive/big-2026.bin"), moved);
  EXPECT_EQ(third->reused_bytes, 0u);
}

TEST_F(PushPullTest, ASecondPullIntoTheSameDestinationIsRefused) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(MakeDirs(dest).ok());
  int fd = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);  // what a running pull holds
  auto r = Pull(*store_, "snap", dest);
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "pull: another pull is writing " + dest + "; wait for it to end");
  EXPECT_TRUE(Tree(dest).empty()) << "nothing written";
  PullOptions dry_opts;
  dry_opts.dry_run = true;
  EXPECT_TRUE(Pull(*store_, "snap", dest, dry_opts).ok()) << "a dry run writes nothing: no lock";
  ::close(fd);
  EXPECT_TRUE(Pull(*store_, "snap", dest).ok());
}

TEST_F(PushPullTest, AMissingSourceIsNamedWithoutTheCommand) {
  // plan runs Push as a dry run, so the message must not say "push".
  for (bool dry : {false, true}) {
    PushOptions o{"snap", kSmall};
    o.dry_run = dry;
    auto r = Push(dir_.Join("missing"), *store_, o);
    ASSERT_EQ(r.status().code(), Code::kNotFound);
    EXPECT_EQ(r.status().message(), dir_.Join("missing") + " is not a directory");
  }
}

TEST_F(PushPullTest, DryRunIntoAMissingDestinationCreatesNothing) {
  auto pushed = DoPush(*store_);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  PullOptions o;
  o.dry_run = true;
  const std::string dest = dir_.Join("not/yet");
  auto dry = Pull(*store_, "snap", dest, o);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_EQ(dry->downloaded_bytes, pushed->bytes);
  EXPECT_EQ(dry->reused_bytes, 0u);
  EXPECT_EQ(dry->symlinks, 2u);
  struct stat st;
  EXPECT_NE(::stat(dir_.Join("not").c_str(), &st), 0) << "a dry run created DEST";
  EXPECT_EQ(Pull(*store_, "nope", dest, o).status().code(), Code::kNotFound);
}

TEST_F(PushPullTest, ManifestIsPublishedLastAfterEveryChunkIsConfirmed) {
  TestStore rec(*store_);
  ASSERT_TRUE(DoPush(rec).ok());
  const std::vector<std::string> calls = ObjectCalls(rec);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), "put " + testing::NewestKey(*store_, "snap"));
  EXPECT_TRUE(calls.back().starts_with("put snap/snap/")) << calls.back();
  // Every chunk and pack the manifest names was put (a Put that returned OK is the store's
  // confirmation) or found by a head before the manifest.
  auto bytes = store_->Get(testing::NewestKey(*store_, "snap"));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto m = DecodeManifest(*bytes);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<std::string> before(calls.begin(), calls.end() - 1);
  size_t named = 0;
  for (const Entry& e : m->entries) {
    for (const ChunkRef& c : e.chunks) {
      const std::string key = c.packed ? PackKey(c.pack) : ChunkKey(c.id);
      ++named;
      EXPECT_TRUE(std::find(before.begin(), before.end(), "put " + key) != before.end() ||
                  std::find(before.begin(), before.end(), "head " + key) != before.end())
          << key;
    }
  }
  EXPECT_GT(named, 2u);
  // A push that fails before publishing leaves the old snapshot (here: none).
  testing::TempDir other;
  auto s2 = FileStore::Open("file://" + other.Join("store"));
  ASSERT_TRUE(failpoint::Configure("push.manifest_put.before:error").ok());
  auto failed = DoPush(**s2);
  ASSERT_TRUE(failpoint::Configure("").ok());
  EXPECT_EQ(failed.status().message(), "failpoint push.manifest_put.before");
  EXPECT_EQ(testing::NewestKey(**s2, "snap"), "none");
}

// A push that creates the store asks it about no chunk or pack: an empty store holds none. The
// next push into it asks (another push may have put what it needs).
TEST_F(PushPullTest, APushThatCreatesTheStoreAsksItNothing) {
  TestStore rec(*store_);
  ASSERT_TRUE(DoPush(rec).ok());
  auto asked = [&] { return rec.Count("head", "chunks/") + rec.Count("head", "packs/"); };
  EXPECT_EQ(asked(), 0);
  EXPECT_GT(rec.Count("put", "chunks/"), 2);
  rec.ClearCalls();
  Write(src_ + "/data/new.bin", Random(100000, 9));
  ASSERT_TRUE(DoPush(rec).ok());
  EXPECT_GT(asked(), 0);
}

// A store removed and made again at the same URL is empty, whatever the journal of the old one
// says: the push uploads everything again, and the snapshot restores.
TEST_F(PushPullTest, ANewStoreAtAnOldStoresUrlGetsEveryChunk) {
  PushOptions opts = WithState();
  auto first = Push(src_, *store_, opts);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_NO_FATAL_FAILURE(RecreateStore());
  auto second = Push(src_, *store_, opts);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->uploaded_objects, first->uploaded_objects);
  EXPECT_EQ(second->uploaded_bytes, first->uploaded_bytes);
  auto pulled = Pull(*store_, "snap", dir_.Join("dest"));
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
}

// The files cache of an older store at the URL was cut with its chunker parameters: a new store
// there with other ones gets every file cut afresh, as a push without a cache would cut it.
TEST_F(PushPullTest, ANewStoreWithOtherChunkerParamsCutsEveryFileAfresh) {
  PushOptions opts = WithState();
  ASSERT_TRUE(Push(src_, *store_, opts).ok());
  ASSERT_NO_FATAL_FAILURE(RecreateStore());
  const ChunkerParams other{8192, 32768, 262144};
  opts.chunker = other;
  auto second = Push(src_, *store_, opts);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->scanned_bytes, second->bytes);
  auto fresh = FileStore::Open("file://" + dir_.Join("fresh"));
  ASSERT_TRUE(fresh.ok());
  auto plain = Push(src_, **fresh, PushOptions{"snap", other});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(second->chunks, plain->chunks);
}

// The rule for a file that changes while it is pushed: the push fails naming it, and publishes
// nothing (never a snapshot mixing two versions of a file). A same-size rewrite is caught too.
TEST_F(PushPullTest, AFileRewrittenWhileBeingPushedFailsThePush) {
  const std::string big = src_ + "/data/big.bin";
  for (bool same_size : {true, false}) {
    // A fresh store each round, so that big.bin's chunks are uploaded (and the hook runs).
    auto fresh = FileStore::Open("file://" + dir_.Join(same_size ? "store-a" : "store-b"));
    ASSERT_TRUE(fresh.ok());
    // On the first chunk Put (one worker), big.bin is rewritten.
    std::function<void()> rewrite = [&] {
      std::string other = Random(same_size ? big_.size() : big_.size() + 5000, 99);
      int fd = ::open(big.c_str(), O_WRONLY | O_TRUNC);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::write(fd, other.data(), other.size()), static_cast<ssize_t>(other.size()));
      ::close(fd);
    };
    TestStore hooked(**fresh);
    hooked.fail = [&](std::string_view op, std::string_view key) -> std::optional<Status> {
      if (op == "put" && key.starts_with("chunks/") && rewrite) std::exchange(rewrite, nullptr)();
      return std::nullopt;
    };
    PushOptions o{"changing", kSmall};
    o.jobs = 1;
    auto r = Push(src_, hooked, o);
    ASSERT_FALSE(r.ok()) << "same_size " << same_size;
    EXPECT_EQ(r.status().message(), "file changed while being read: " + big);
    EXPECT_EQ(testing::NewestKey(**fresh, "changing"), "none");
    Write(big, big_, 0640);  // as it was, for the next round
  }
}

TEST_F(PushPullTest, RefusesAStoreMadeWithOtherChunkerParams) {
  ASSERT_TRUE(DoPush(*store_).ok());
  auto r = DoPush(*store_, ChunkerParams{});
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "store " + store_->Url() +
                                      " was created with chunker min/avg/max 4096/16384/131072, "
                                      "not 524288/1048576/8388608");
}

TEST_F(PushPullTest, CorruptChunkFailsThePullAndLeavesNoFile) {
  ASSERT_TRUE(DoPush(*store_).ok());
  auto m = DecodeManifest(*store_->Get(testing::NewestKey(*store_, "snap")));
  ASSERT_TRUE(m.ok());
  const ChunkRef* victim = nullptr;
  for (const Entry& e : m->entries) {
    if (e.path == "data/big.bin") victim = &e.chunks[1];
  }
  ASSERT_NE(victim, nullptr);
  std::string key = ChunkKey(victim->id);
  std::string bytes = *store_->Get(key);
  bytes[10] ^= 0x40;
  ASSERT_TRUE(store_->Put(key, bytes).ok());
  auto r = Pull(*store_, "snap", dir_.Join("dest"));
  EXPECT_EQ(r.status().code(), Code::kCorruption);
  EXPECT_EQ(r.status().message(), "pull: 1 entry not restored: file data/big.bin: chunk " +
                                      ToHex(victim->id) +
                                      " is corrupt in the store (its SHA-256 does not match)");
  struct stat st;
  EXPECT_NE(::lstat(dir_.Join("dest/data/big.bin").c_str(), &st), 0);
  // Every other entry is restored, and no temporary is left.
  auto want = StoredTree();
  want.erase("data/big.bin");
  EXPECT_EQ(Tree(dir_.Join("dest")), want);
}

TEST_F(PushPullTest, RefusesUnsafeManifestsAndSymlinksInTheWay) {
  // A crafted manifest with "../" is refused before anything is written.
  std::string json_text =
      R"({"format":1,"name":"evil","created_ns":0,"chunker":{"version":1,"min":4096,"avg":16384,)"
      R"("max":131072},"hash":"sha256","entries":[{"path":"ok","type":"dir","mode":493,)"
      R"("mtime_ns":0},{"path":"../escape","type":"symlink","mode":511,"mtime_ns":0,)"
      R"("target":"/"}]})";
  std::string crafted = Zstd(json_text);
  ASSERT_TRUE(store_->Put("snapshots/evil", crafted).ok());
  auto r = Pull(*store_, "evil", dir_.Join("dest"));
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "pull: snapshot evil: manifest entry 1: path \"../escape\" has a \"..\" component");
  struct stat st;
  EXPECT_NE(::lstat(dir_.Join("dest/ok").c_str(), &st), 0);
  EXPECT_NE(::lstat(dir_.Join("escape").c_str(), &st), 0);

  // A symlink already in DEST where the snapshot has a directory is never followed.
  ASSERT_TRUE(DoPush(*store_).ok());
  std::string outside = dir_.Join("outside");
  ASSERT_TRUE(MakeDirs(outside).ok());
  ASSERT_TRUE(MakeDirs(dir_.Join("dest2")).ok());
  ASSERT_EQ(::symlink(outside.c_str(), dir_.Join("dest2/data").c_str()), 0);
  auto r2 = Pull(*store_, "snap", dir_.Join("dest2"));
  EXPECT_EQ(r2.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(
      r2.status().message().rfind("pull: 55 entries not restored: " + dir_.Join("dest2/data") +
                                      " exists and is not a directory; remove it first; ",
                                  0),
      0u)
      << r2.status().message();
  EXPECT_TRUE(Tree(outside).empty());
  EXPECT_EQ(Pull(*store_, "nope", dir_.Join("dest3")).status().message(),
            "pull: no snapshot nope in " + store_->Url());
}

// Pull's temporaries live in a private directory, never beside the entries: a snapshot holding
// ".x.cutover-tmp" beside "x" (and ".l.cutover-tmp" beside a symlink "l", and even a top-level
// ".cutover-pull") restores whole, with any number of jobs, and the user's own files in DEST
// that the snapshot does not name are left exactly as they were.
TEST_F(PushPullTest, TemporariesNeverShareANameWithEntriesOrTouchOtherFiles) {
  Write(src_ + "/x", Random(300000, 7));
  Write(src_ + "/.x.cutover-tmp", Random(200000, 8));
  Write(src_ + "/data/.big.bin.cutover-tmp", "not the big file");
  ASSERT_EQ(::symlink("x", (src_ + "/l").c_str()), 0);
  Write(src_ + "/.l.cutover-tmp", "a file beside the symlink");
  ASSERT_TRUE(MakeDirs(src_ + "/.cutover-pull").ok());
  Write(src_ + "/.cutover-pull/inside", "the snapshot's own");
  ASSERT_TRUE(DoPush(*store_).ok());
  auto want = StoredTree();
  for (int round = 0; round < 3; ++round) {
    const std::string dest = dir_.Join("dest" + std::to_string(round));
    ASSERT_TRUE(MakeDirs(dest).ok());
    Write(dest + "/.y.cutover-tmp", "the user's own");
    Write(dest + "/.cutover-pull.1", "the user's own file of the next candidate name");
    PullOptions opts;
    opts.jobs = 8;
    auto r = Pull(*store_, "snap", dest, opts);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto got = Tree(dest);
    EXPECT_NE(got.count(".y.cutover-tmp"), 0u);
    EXPECT_NE(got.count(".cutover-pull.1"), 0u);
    EXPECT_EQ(*ReadFile(dest + "/.y.cutover-tmp"), "the user's own");
    got.erase(".y.cutover-tmp");
    got.erase(".cutover-pull.1");
    EXPECT_EQ(got, want);  // no ".cutover-pull.2" left either
  }
}

// Every name the file system allows restores, the longest (255 bytes, in ASCII and in UTF-8)
// included, and names with control characters, bytes that are not UTF-8, quotes and dashes.
TEST_F(PushPullTest, EveryNameTheFileSystemAllowsRestores) {
  std::vector<std::string> names = {
      std::string(255, 'a'),
      std::string(243, 'b'),
      "." + std::string(254, 'c'),
      [] {
        std::string s;
        while (s.size() + 2 <= 255) s += "\xc3\xa9";  // é, two bytes each
        return s;
      }(),
      "new\nline\ttab\x01",
      "not utf8 \xff\xfe",
      "-dash \"quote\" 'single' back\\slash *?[]",
      " leading and trailing space ",
  };
  ASSERT_TRUE(MakeDirs(src_ + "/n").ok());
  for (size_t i = 0; i < names.size(); ++i) {
    // Written in place: a temporary beside a 255-byte name could not be created.
    const std::string bytes = Random(i % 2 == 0 ? 100 : 200000, 20 + i);
    int fd = ::open((src_ + "/n/" + names[i]).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << names[i];
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
  ASSERT_EQ(::symlink("target", (src_ + "/n/l" + std::string(254, 'l')).c_str()), 0);
  auto pushed = DoPush(*store_);
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  auto r = Pull(*store_, "snap", dir_.Join("dest"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Tree(dir_.Join("dest")), StoredTree());
}

// An entry that cannot be restored does not stop the others: each is named, the rest restored.
TEST_F(PushPullTest, AFailureOnOneEntryDoesNotStopTheOthers) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(MakeDirs(dest + "/data/run.sh").ok());  // a directory where files go
  ASSERT_TRUE(MakeDirs(dest + "/data/empty/keep").ok());
  PullOptions opts;
  opts.jobs = 1;
  auto r = Pull(*store_, "snap", dest, opts);
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "pull: 2 entries not restored: " + dest +
                                      "/data/empty is a directory; remove it first; " + dest +
                                      "/data/run.sh is a directory; remove it first");
  auto want = StoredTree();
  auto got = Tree(dest);
  for (const char* p : {"data/run.sh", "data/empty", "data/empty/keep"}) {
    want.erase(p);
    got.erase(p);
  }
  EXPECT_EQ(got, want);
}

// Bytes this process has read so far (rchar of /proc/self/io: every read and pread).
uint64_t BytesReadByThisProcess() {
  auto io = ReadFile("/proc/self/io");
  if (!io.ok()) return 0;
  size_t at = io->find("rchar: ");
  return at == std::string::npos ? 0 : std::stoull(io->substr(at + 7));
}

// Files in DEST that the snapshot does not name are read only when their size is one of the
// snapshot's files' (a moved file): 20 MB of unrelated data costs no read to restore 20 bytes.
TEST_F(PushPullTest, PullReadsNoUnrelatedFileOfDest) {
  const std::string small_src = dir_.Join("small-src");
  ASSERT_TRUE(MakeDirs(small_src).ok());
  Write(small_src + "/note", "twenty bytes of text");
  ASSERT_TRUE(Push(small_src, *store_, PushOptions{"small", kSmall}).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(MakeDirs(dest).ok());
  Write(dest + "/unrelated.bin", Random(20 << 20, 9));
  const uint64_t before = BytesReadByThisProcess();
  auto r = Pull(*store_, "small", dest);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const uint64_t read = BytesReadByThisProcess() - before;
  EXPECT_LT(read, uint64_t{1} << 20) << "pull read " << read << " bytes";
  EXPECT_EQ(*ReadFile(dest + "/note"), "twenty bytes of text");
}

// Entries of DEST that the snapshot does not name: verify reports them unless allowed, and
// pull --delete removes them (listed by a dry run first), inside DEST only: a symlink is removed
// itself, never followed.
TEST_F(PushPullTest, VerifyReportsExtrasAndPullDeleteRemovesThemInsideDestOnly) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store_, "snap", dest).ok());
  const std::string outside = dir_.Join("outside");
  ASSERT_TRUE(MakeDirs(outside).ok());
  Write(outside + "/keep", "outside DEST");
  Write(dest + "/extra.txt", "extra");
  ASSERT_TRUE(MakeDirs(dest + "/data/extra-dir/sub").ok());
  Write(dest + "/data/extra-dir/sub/x", "x");
  ASSERT_EQ(::symlink(outside.c_str(), (dest + "/data/escape").c_str()), 0);
  auto v = Verify(*store_, "snap", dest, 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->failures, (std::vector<std::string>{
                             "dir data/extra-dir: in DEST but not in the snapshot",
                             "file data/escape: in DEST but not in the snapshot",
                             "file extra.txt: in DEST but not in the snapshot",
                         }));
  auto allowed = Verify(*store_, "snap", dest, 4, nullptr, /*allow_extra=*/true);
  ASSERT_TRUE(allowed.ok());
  EXPECT_TRUE(allowed->failures.empty()) << allowed->failures.front();

  PullOptions opts;
  opts.delete_extra = true;
  opts.dry_run = true;
  auto planned = Pull(*store_, "snap", dest, opts);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  const std::vector<std::string> extras = {"data/escape", "data/extra-dir/", "extra.txt"};
  EXPECT_EQ(planned->deleted, extras);
  EXPECT_EQ(::access((dest + "/extra.txt").c_str(), F_OK), 0) << "a dry run removes nothing";
  opts.dry_run = false;
  auto pulled = Pull(*store_, "snap", dest, opts);
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  EXPECT_EQ(pulled->deleted, extras);
  EXPECT_EQ(Tree(dest), StoredTree());
  EXPECT_EQ(*ReadFile(outside + "/keep"), "outside DEST");
}

// A chunk replaced by a directory is a finding of verify, not an error that stops it; type
// mismatches in DEST are named as such; the snapshot's created_ns keeps its nanoseconds.
TEST_F(PushPullTest, VerifyNamesWhatIsInTheWayAsSuch) {
  ASSERT_TRUE(DoPush(*store_).ok());
  const std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store_, "snap", dest).ok());
  auto m = DecodeManifest(*store_->Get(testing::NewestKey(*store_, "snap")));
  ASSERT_TRUE(m.ok());
  EXPECT_NE(m->created_ns % 1000000000, 0) << "created_ns is rounded to the second";
  ChunkId victim{};
  for (const Entry& e : m->entries) {
    if (e.path == "data/big.bin") victim = e.chunks.at(1).id;
  }
  const std::string chunk = ChunkKey(victim);
  ASSERT_EQ(::unlink(dir_.Join("store/" + chunk).c_str()), 0);
  ASSERT_TRUE(MakeDirs(dir_.Join("store/" + chunk)).ok());
  ASSERT_EQ(::unlink((dest + "/data/run.sh").c_str()), 0);
  ASSERT_TRUE(MakeDirs(dest + "/data/run.sh").ok());
  ASSERT_EQ(::unlink((dest + "/latest").c_str()), 0);
  Write(dest + "/latest", "a file now");
  auto v = Verify(*store_, "snap", dest, 4);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->failures,
            (std::vector<std::string>{
                "file data/big.bin: chunk " + ToHex(victim) + ": corrupt in the store: object " +
                    chunk + " in " + store_->Url() + " is not a regular file",
                "file data/run.sh: differs from the manifest: is a directory, not a file",
                "file latest: differs from the manifest: is a file, not a symlink",
            }));
}

// A file:// store inside the tree it pushes is left out of its own snapshot, and said so.
TEST_F(PushPullTest, AStoreInsideTheSourceIsNotPushedIntoItself) {
  auto inner = FileStore::Open("file://" + src_ + "/backup/store");
  ASSERT_TRUE(inner.ok());
  auto first = Push(src_, **inner, PushOptions{"snap", kSmall});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto again = Push(src_, **inner, PushOptions{"snap", kSmall});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->skipped,
            (std::vector<std::string>{"backup/store (the store itself)", "data/fifo (fifo)"}));
  auto r = Pull(**inner, "snap", dir_.Join("dest"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto got = Tree(dir_.Join("dest"));
  EXPECT_EQ(got.count("backup/store"), 0u);
  EXPECT_EQ(got.count("backup"), 1u);
}

// A push to an HTTP server that is not WebDAV (it answers every GET with a page) says so.
TEST_F(PushPullTest, APushToAnHttpServerThatIsNotWebDavSaysSo) {
  for (const std::string& page :
       {std::string("{\"status\": \"ok\"}"), std::string("<html>welcome</html>")}) {
    testing::ScriptedHttpServer server;
    ASSERT_TRUE(server.Start().ok());
    server.SetHandler([&page](const testing::RecordedRequest&) {
      return testing::ScriptedResponse{.status = 200, .body = page};
    });
    auto store = OpenStore(server.Url("/store"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto r = Push(src_, **store, PushOptions{"snap", kSmall});
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "store config " + (*store)->Url() +
                  "/config: " + (page[0] == '{' ? "no integer \"format\"" : "not a JSON object") +
                  ": this HTTP server answers, but not as a WebDAV server holding a datasync "
                  "store (is it WebDAV?)");
  }
}

}  // namespace

}  // namespace cutover

namespace cutover {
namespace {

// Hard links come back as links and holes as holes (the manifest records both); a reader of a
// manifest without them restores copies, as before; a crafted link never shows one file's bytes
// under another's name.
class LinksAndHolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = dir_.Join("src");
    ASSERT_TRUE(MakeDirs(src_ + "/a").ok());
    ASSERT_TRUE(MakeDirs(src_ + "/b").ok());
    auto s = FileStore::Open("file://" + dir_.Join("store"));
    ASSERT_TRUE(s.ok());
    store_ = std::move(s).value();
  }

  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  Manifest Newest() {
    auto bytes = store_->Get(testing::NewestKey(*store_, "snap"));
    EXPECT_TRUE(bytes.ok());
    auto m = DecodeManifest(bytes.ok() ? *bytes : "");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : Manifest{};
  }

  const Entry* Find(const Manifest& m, const std::string& path) {
    for (const Entry& e : m.entries) {
      if (e.path == path) return &e;
    }
    return nullptr;
  }

  testing::TempDir dir_;
  std::string src_;
  std::unique_ptr<FileStore> store_;
};

TEST_F(LinksAndHolesTest, HardLinksComeBackAsLinksAndAgainOnARepull) {
  Write(src_ + "/a/data", Random(300000, 3), 0640);
  ASSERT_EQ(::link((src_ + "/a/data").c_str(), (src_ + "/b/same").c_str()), 0);
  ASSERT_EQ(::link((src_ + "/a/data").c_str(), (src_ + "/z").c_str()), 0);
  Write(src_ + "/b/other", "not linked");
  ASSERT_TRUE(Push(src_, *store_, PushOptions{"snap", kSmall}).ok());
  Manifest m = Newest();
  ASSERT_NE(Find(m, "a/data"), nullptr);
  EXPECT_EQ(Find(m, "a/data")->link, "");  // the first path of the inode is its file
  EXPECT_EQ(Find(m, "b/same")->link, "a/data");
  EXPECT_EQ(Find(m, "z")->link, "a/data");
  EXPECT_EQ(Find(m, "b/other")->link, "");
  EXPECT_EQ(Find(m, "b/same")->chunks, Find(m, "a/data")->chunks);  // a copy for older readers

  std::string dest = dir_.Join("dest");
  for (int round = 0; round < 2; ++round) {
    auto r = Pull(*store_, "snap", dest, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->files, 4u);
    struct stat a = Stat(dest + "/a/data"), b = Stat(dest + "/b/same"), z = Stat(dest + "/z");
    EXPECT_EQ(a.st_ino, b.st_ino) << "round " << round;
    EXPECT_EQ(a.st_ino, z.st_ino) << "round " << round;
    EXPECT_EQ(a.st_nlink, 3u) << "round " << round;
    EXPECT_NE(Stat(dest + "/b/other").st_ino, a.st_ino);
    EXPECT_EQ(Tree(dest), Tree(src_));
  }
  auto v = Verify(*store_, "snap", dest, 2);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->failures.empty()) << v->failures.front();
}

TEST_F(LinksAndHolesTest, HolesStayHolesAndTheBytesAreTheSame) {
  const std::string path = src_ + "/a/disk.img";
  const uint64_t size = 64ull << 20;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  const std::string head = Random(100000, 4), middle = Random(50000, 5);
  ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), static_cast<ssize_t>(head.size()));
  ASSERT_EQ(::pwrite(fd, middle.data(), middle.size(), 32 << 20),
            static_cast<ssize_t>(middle.size()));
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  ::close(fd);
  struct stat st = Stat(path);
  if (static_cast<uint64_t>(st.st_blocks) * 512 >= size) {
    GTEST_SKIP() << "the file system under " << dir_.path() << " does not keep holes";
  }
  Write(src_ + "/a/dense", std::string(100000, '\0'));  // zeros but no holes: written as is
  ASSERT_TRUE(Push(src_, *store_, PushOptions{"snap", kSmall}).ok());
  Manifest m = Newest();
  EXPECT_TRUE(Find(m, "a/disk.img")->sparse);
  EXPECT_FALSE(Find(m, "a/dense")->sparse);

  std::string dest = dir_.Join("dest");
  auto r = Pull(*store_, "snap", dest, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  struct stat out = Stat(dest + "/a/disk.img");
  EXPECT_EQ(static_cast<uint64_t>(out.st_size), size);
  // 150 KB of data: allocated, with a block or two at chunk edges; far below the 64 MiB.
  EXPECT_LT(static_cast<uint64_t>(out.st_blocks) * 512, 4ull << 20)
      << "the holes were filled: " << out.st_blocks * 512 << " bytes allocated";
  EXPECT_EQ(Tree(dest), Tree(src_));
  EXPECT_GE(static_cast<uint64_t>(Stat(dest + "/a/dense").st_blocks) * 512, 100000u);
}

TEST_F(LinksAndHolesTest, ACraftedLinkIsCheckedAndNeverSharesAnotherFilesBytes) {
  Write(src_ + "/a/one", "first file's bytes");
  Write(src_ + "/b/two", "second file's bytes");
  ASSERT_TRUE(Push(src_, *store_, PushOptions{"snap", kSmall}).ok());
  Manifest m = Newest();
  // Make b/two a "link" to a/one while keeping its own chunks: pull must restore its own bytes.
  for (Entry& e : m.entries) {
    if (e.path == "b/two") e.link = "a/one";
  }
  auto encoded = EncodeManifest(m);
  ASSERT_TRUE(encoded.ok()) << encoded.status().ToString();
  ASSERT_TRUE(store_->Put("snapshots/crafted", *encoded).ok());
  std::string dest = dir_.Join("dest");
  auto r = Pull(*store_, "crafted", dest, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(ReadFile(dest + "/b/two").value_or(""), "second file's bytes");
  EXPECT_NE(Stat(dest + "/b/two").st_ino, Stat(dest + "/a/one").st_ino);

  // A link to a later entry, to a directory, to nothing, or to itself is refused.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"a/one", "b/two"}, {"b/two", "a"}, {"b/two", "nowhere"}, {"a/one", "a/one"}}) {
    Manifest c = m;
    for (Entry& e : c.entries) e.link = e.path == from ? to : "";
    EXPECT_EQ(ValidateManifest(c).code(), Code::kInvalidArgument) << from << " -> " << to;
  }
  // Links and holes belong to files only.
  Manifest d = m;
  for (Entry& e : d.entries) {
    e.link.clear();
    if (e.type == EntryType::kDir) e.sparse = true;
  }
  EXPECT_EQ(ValidateManifest(d).code(), Code::kInvalidArgument);
}

TEST_F(LinksAndHolesTest, AManifestWithoutLinksRestoresCopies) {
  // What a push wrote before links were recorded: the same files, each with its chunks.
  Write(src_ + "/a/data", Random(50000, 6));
  ASSERT_EQ(::link((src_ + "/a/data").c_str(), (src_ + "/b/same").c_str()), 0);
  ASSERT_TRUE(Push(src_, *store_, PushOptions{"snap", kSmall}).ok());
  Manifest m = Newest();
  for (Entry& e : m.entries) e.link.clear();
  auto encoded = EncodeManifest(m);
  ASSERT_TRUE(encoded.ok());
  ASSERT_EQ(encoded->find("\"link\""), std::string::npos);
  ASSERT_TRUE(store_->Put("snapshots/old", *encoded).ok());
  std::string dest = dir_.Join("dest");
  ASSERT_TRUE(Pull(*store_, "old", dest, {}).ok());
  EXPECT_NE(Stat(dest + "/a/data").st_ino, Stat(dest + "/b/same").st_ino);
  EXPECT_EQ(ReadFile(dest + "/b/same").value_or(""), Random(50000, 6));
}

}  // namespace
}  // namespace cutover
