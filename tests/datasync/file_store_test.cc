#include "datasync/file_store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

std::unique_ptr<FileStore> OpenAt(const testing::TempDir& dir) {
  auto r = FileStore::Open("file://" + dir.Join("store"));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::map<std::string, uint64_t> ListAll(Store& s, const std::string& prefix) {
  std::map<std::string, uint64_t> out;
  Status st = s.List(prefix, [&](std::string_view k, uint64_t size) {
    out[std::string(k)] = size;
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// Every name in `dir`, recursively, temporaries included.
std::vector<std::string> AllFiles(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    std::string p = dir + "/" + n;
    ::lstat(p.c_str(), &st);
    if (S_ISDIR(st.st_mode)) {
      for (auto& sub : AllFiles(p)) out.push_back(n + "/" + sub);
    } else {
      out.push_back(n);
    }
  }
  ::closedir(d);
  return out;
}

TEST(StoreKeysTest, ChunkKeysSpreadOverPrefixes) {
  ChunkId id = Sha256Of("abc");
  EXPECT_EQ(ChunkKey(id),
            "chunks/ba/78/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(PackKey(id),
            "packs/ba/78/ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(*SnapshotKey("nightly-1.2_x"), "snapshots/nightly-1.2_x");
  EXPECT_EQ(SnapshotKey("a/b").status().message(),
            "bad snapshot name \"a/b\": use letters, digits, '.', '_' and '-', not starting with "
            "'.'");
  EXPECT_FALSE(SnapshotKey(".hidden").ok());
  EXPECT_FALSE(SnapshotKey("").ok());
}

TEST(StoreKeysTest, ValidatesKeys) {
  EXPECT_TRUE(ValidateKey("chunks/ab/cd/x.y-z_1").ok());
  EXPECT_EQ(ValidateKey("").message(), "bad store key \"\": empty");
  EXPECT_EQ(ValidateKey("a//b").message(), "bad store key \"a//b\": empty component");
  EXPECT_EQ(ValidateKey("/a").message(), "bad store key \"/a\": empty component");
  EXPECT_EQ(ValidateKey("a/../b").message(), "bad store key \"a/../b\": component starts with '.'");
  EXPECT_EQ(ValidateKey("a b").message(),
            "bad store key \"a b\": character outside [A-Za-z0-9._-]");
  EXPECT_EQ(ValidateKey(std::string(1025, 'a')).code(), Code::kInvalidArgument);
}

TEST(OpenStoreTest, ParsesUrls) {
  testing::TempDir dir;
  auto s = OpenStore("file://" + dir.Join("s") + "/");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->Url(), "file://" + dir.Join("s"));
  EXPECT_EQ(OpenStore("file://relative").status().message(),
            "bad file store URL \"file://relative\": expected file:///absolute/path");
  // http(s):// opens a WebDAV store without sending anything; its URL keeps no credential.
  auto dav = OpenStore("http://alice:pw@127.0.0.1:1/x");
  ASSERT_TRUE(dav.ok()) << dav.status().ToString();
  EXPECT_EQ((*dav)->Url(), "http://127.0.0.1:1/x");
  Status bad = OpenStore("ftp://user:secret@host/x").status();
  EXPECT_EQ(bad.message(),
            "bad store URL (scheme \"ftp\"): expected file:///path, http(s)://host/path or "
            "s3://bucket/prefix");
}

TEST(FileStoreTest, PutGetHeadDelete) {
  testing::TempDir dir;
  auto s = OpenAt(dir);
  EXPECT_EQ(s->Get("config").status().code(), Code::kNotFound);
  EXPECT_EQ(s->Get("config").status().message(), "no object config in " + s->Url());
  EXPECT_EQ(*s->Exists("config"), false);
  ASSERT_TRUE(s->Put("config", "v1").ok());
  ASSERT_TRUE(s->Put("config", "version two").ok());
  EXPECT_EQ(*s->Get("config"), "version two");
  EXPECT_EQ(*s->Head("config"), 11u);
  EXPECT_EQ(*s->Exists("config"), true);
  EXPECT_EQ(*s->GetRange("config", 8, 3), "two");
  EXPECT_EQ(s->GetRange("config", 8, 4).status().message(),
            "object config is shorter than 12 bytes");
  std::string big(3 << 20, 'x');
  ASSERT_TRUE(s->Put(ChunkKey(Sha256Of(big)), big).ok());
  EXPECT_EQ(*s->Get(ChunkKey(Sha256Of(big))), big);
  ASSERT_TRUE(s->Delete("config").ok());
  ASSERT_TRUE(s->Delete("config").ok());  // idempotent
  EXPECT_EQ(*s->Exists("config"), false);
  EXPECT_EQ(s->Put("../escape", "x").code(), Code::kInvalidArgument);
  EXPECT_EQ(s->Get("a//b").status().code(), Code::kInvalidArgument);
}

TEST(FileStoreTest, ListsByPrefixAndStops) {
  testing::TempDir dir;
  auto s = OpenAt(dir);
  std::map<std::string, uint64_t> want;
  for (int i = 0; i < 40; ++i) {
    std::string body(static_cast<size_t>(i), 'b');
    std::string key = ChunkKey(Sha256Of(std::to_string(i)));
    ASSERT_TRUE(s->Put(key, body).ok());
    want[key] = static_cast<uint64_t>(i);
  }
  ASSERT_TRUE(s->Put("snapshots/a", "1").ok());
  ASSERT_TRUE(s->Put("snapshots/ab", "22").ok());
  EXPECT_EQ(ListAll(*s, "chunks/"), want);
  EXPECT_EQ(ListAll(*s, "snapshots/a"),
            (std::map<std::string, uint64_t>{{"snapshots/a", 1}, {"snapshots/ab", 2}}));
  EXPECT_EQ(ListAll(*s, "snapshots/ab"), (std::map<std::string, uint64_t>{{"snapshots/ab", 2}}));
  EXPECT_EQ(ListAll(*s, "").size(), 42u);
  EXPECT_TRUE(ListAll(*s, "packs/").empty());
  std::string first = want.begin()->first;
  std::string p3 = first.substr(0, 9);  // "chunks/xy"
  size_t n3 = 0;
  for (auto& [k, v] : want) n3 += k.starts_with(p3);
  EXPECT_EQ(ListAll(*s, p3).size(), n3);
  int seen = 0;
  Status stop = s->List("chunks/", [&](std::string_view, uint64_t) {
    return ++seen == 3 ? Status::Aborted("enough") : Status::Ok();
  });
  EXPECT_EQ(stop.message(), "enough");
  EXPECT_EQ(seen, 3);
}

TEST(FileStoreTest, FailedPutLeavesTheOldObjectAndNoTemporary) {
  testing::TempDir dir;
  auto s = OpenAt(dir);
  ASSERT_TRUE(s->Put("snapshots/x", "old").ok());
  ASSERT_TRUE(failpoint::Configure("file_store.put.before_rename:error").ok());
  Status put = s->Put("snapshots/x", "new bytes");
  ASSERT_TRUE(failpoint::Configure("").ok());
  EXPECT_EQ(put.message(), "failpoint file_store.put.before_rename");
  EXPECT_EQ(*s->Get("snapshots/x"), "old");
  EXPECT_EQ(AllFiles(s->root()), std::vector<std::string>{"snapshots/x"});
}

TEST(FileStoreTest, KilledPutIsInvisible) {
  testing::TempDir dir;
  auto s = OpenAt(dir);
  ASSERT_TRUE(s->Put("snapshots/x", "old").ok());
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child dies by SIGKILL between fsync and rename, like a power cut.
    (void)failpoint::Configure("file_store.put.before_rename:kill");
    (void)s->Put("snapshots/x", "new bytes");
    (void)s->Put("snapshots/y", "other");
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(*s->Get("snapshots/x"), "old");
  EXPECT_EQ(*s->Exists("snapshots/y"), false);
  // The temporary is on disk but no listing shows it, and a later Put works.
  EXPECT_EQ(AllFiles(s->root()).size(), 2u);
  EXPECT_EQ(ListAll(*s, ""), (std::map<std::string, uint64_t>{{"snapshots/x", 3}}));
  ASSERT_TRUE(s->Put("snapshots/x", "new bytes").ok());
  EXPECT_EQ(*s->Get("snapshots/x"), "new bytes");
}

TEST(FileStoreTest, ConcurrentPutsOfOneKeyLeaveOneCompleteObject) {
  testing::TempDir dir;
  auto s = OpenAt(dir);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::string body(1 << 20, static_cast<char>('a' + t));
      for (int i = 0; i < 5; ++i) EXPECT_TRUE(s->Put("config", body).ok());
    });
  }
  for (auto& th : threads) th.join();
  std::string got = *s->Get("config");
  ASSERT_EQ(got.size(), 1u << 20);
  EXPECT_EQ(got.find_first_not_of(got[0]), std::string::npos);
  EXPECT_EQ(AllFiles(s->root()), std::vector<std::string>{"config"});
}

}  // namespace
}  // namespace cutover
