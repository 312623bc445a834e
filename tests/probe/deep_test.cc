// probe collect --deep: the hash cache (hits, a corrupt or unwritable file), loading a library
// in a child (its version, a crash, a hang), and a --deep collection of an image root holding a
// library nvcc built here, validated against the schema.
#include "probe/deep.h"

#include <sys/stat.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "core/sha256.h"
#include "probe/collect.h"
#include "tests/harness/schema_check.h"
#include "tests/harness/test_env.h"

namespace cutover::probe {
namespace {

const std::string kFakeLib = CUTOVER_FAKE_NVML_PATH;

std::string FixtureSo() {
  return testing::SourceDir() + "/tests/fixtures/binaries/libscale-sm80-ptx90.so";
}

std::string FindingMessage(const std::vector<Finding>& fs, const std::string& code) {
  for (const Finding& f : fs) {
    if (f.code == code) return f.message;
  }
  return "";
}

TEST(DeepTest, CacheDirFollowsXdgThenHome) {
  EXPECT_EQ(HashCache::DefaultDir({{"XDG_CACHE_HOME", "/x/cache"}, {"HOME", "/home/u"}}),
            "/x/cache/cutover");
  EXPECT_EQ(HashCache::DefaultDir({{"XDG_CACHE_HOME", "relative"}, {"HOME", "/home/u"}}),
            "/home/u/.cache/cutover")
      << "a relative XDG_CACHE_HOME is ignored, as the XDG spec says";
  EXPECT_EQ(HashCache::DefaultDir({}), "");
}

TEST(DeepTest, CacheRoundTripAndAtomicPrivateFile) {
  testing::TempDir dir;
  std::vector<Finding> findings;
  HashCache c = HashCache::Load(dir.Join("c"), &findings);
  EXPECT_TRUE(findings.empty()) << "a missing cache is simply empty";
  FileInfo a{.size = 10, .mtime_ns = 5, .device = 1, .inode = 2};
  FileInfo b = a;
  b.mtime_ns = 6;  // the same file changed
  EXPECT_EQ(c.Find(a), std::nullopt);
  c.Put(a, std::string(64, 'a'));
  ASSERT_TRUE(c.Save().ok());
  struct stat st;
  ASSERT_EQ(::stat(c.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  HashCache again = HashCache::Load(dir.Join("c"), &findings);
  EXPECT_TRUE(findings.empty());
  EXPECT_EQ(again.Find(a), std::string(64, 'a'));
  EXPECT_EQ(again.Find(b), std::nullopt) << "a new mtime is a new key";
}

TEST(DeepTest, ACorruptCacheIsAWarningAndIsRewritten) {
  testing::TempDir dir;
  ASSERT_TRUE(MakeDirs(dir.Join("c")).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.Join("c/sha256-cache.json"), "{\"schema\": \"cutover.hash").ok());
  std::vector<Finding> findings;
  HashCache c = HashCache::Load(dir.Join("c"), &findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].severity, "warning");
  EXPECT_EQ(findings[0].code, "deep.hash_cache_corrupt");
  EXPECT_EQ(findings[0].message, dir.Join("c/sha256-cache.json") +
                                     ": not a JSON object; hashes are computed again and it is "
                                     "rewritten");
  ASSERT_TRUE(c.Save().ok());
  findings.clear();
  HashCache::Load(dir.Join("c"), &findings);
  EXPECT_TRUE(findings.empty()) << "the rewritten file reads back cleanly";

  ASSERT_TRUE(WriteFileAtomic(dir.Join("c/sha256-cache.json"),
                              R"({"schema":"cutover.hash-cache/1","entries":{"1:2:3:4":"zz"}})")
                  .ok());
  HashCache::Load(dir.Join("c"), &findings);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].message, dir.Join("c/sha256-cache.json") +
                                     ": entry 1:2:3:4 is not a SHA-256 hex digest; hashes are "
                                     "computed again and it is rewritten");
}

TEST(DeepTest, HashFileReadsInPiecesAndMatchesOneShot) {
  FakeFileSystem fs;
  std::string big(9 << 20, 'x');  // more than one 8 MiB piece
  big[123] = 'y';
  fs.AddFile("/lib/big.so", big);
  uint64_t bytes = 0;
  Result<std::string> h = HashFile(fs, "/lib/big.so", &bytes);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, Sha256Hex(big));
  EXPECT_EQ(bytes, big.size());
  fs.SetUnreadable("/lib/big.so");
  EXPECT_EQ(HashFile(fs, "/lib/big.so", &bytes).status().message(),
            "/lib/big.so: Permission denied");
}

TEST(DeepTest, LoadsTheLibraryInAChildAndAsksItsVersion) {
  Result<std::optional<std::string>> v = LoadedLibraryVersion("cudart", kFakeLib, 5000);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, "12.4");
  v = LoadedLibraryVersion("cudnn_ops", kFakeLib, 5000);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::nullopt) << "cuDNN's sub-libraries have no version call";
  EXPECT_EQ(LoadedLibraryVersion("nccl", kFakeLib, 5000).status().message(),
            kFakeLib + ": no symbol ncclGetVersion");
  EXPECT_EQ(LoadedLibraryVersion("cudart", "/nonexistent/libcudart.so.12", 5000).status().message(),
            "/nonexistent/libcudart.so.12: dlopen failed: /nonexistent/libcudart.so.12: cannot "
            "open shared object file: No such file or directory");
}

TEST(DeepTest, ALibraryThatCrashesOrHangsWhenLoadedIsAFinding) {
  ::setenv("FAKE_LIB_CRASH_ON_LOAD", "1", 1);
  auto crashed = LoadedLibraryVersion("cudart", kFakeLib, 5000);
  ::unsetenv("FAKE_LIB_CRASH_ON_LOAD");
  EXPECT_EQ(crashed.status().message(), "loading " + kFakeLib + " died with signal 11");
  ::setenv("FAKE_LIB_HANG_ON_LOAD", "1", 1);
  auto hung = LoadedLibraryVersion("cudart", kFakeLib, 300);
  ::unsetenv("FAKE_LIB_HANG_ON_LOAD");
  EXPECT_EQ(hung.status().message(), "loading " + kFakeLib + " timed out after 300 ms");

  // Through InspectLibraries: the collection goes on, with a finding.
  RealFileSystem fs("/");
  CollectContext ctx(fs, CollectOptions{});
  std::vector<LibraryInfo> libs = {{.name = "cudart", .version = "12.3.107", .path = kFakeLib},
                                   {.name = "cudart", .version = "12.4.99", .path = kFakeLib}};
  testing::TempDir cache;
  DeepOptions deep{
      .enabled = true, .load = true, .load_timeout_ms = 5000, .cache_dir = cache.path()};
  ::setenv("FAKE_LIB_CRASH_ON_LOAD", "1", 1);
  std::optional<DeepInfo> info = InspectLibraries(ctx, deep, &libs);
  ::unsetenv("FAKE_LIB_CRASH_ON_LOAD");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->loaded, 0);
  EXPECT_EQ(FindingMessage(ctx.findings(), "library.load_failed"),
            "loading " + kFakeLib + " died with signal 11");
  EXPECT_EQ(libs[0].loaded_version, std::nullopt);
  EXPECT_TRUE(libs[0].sha256.has_value()) << "the hash does not depend on loading";

  CollectContext ctx2(fs, CollectOptions{});
  info = InspectLibraries(ctx2, deep, &libs);
  EXPECT_EQ(info->loaded, 2);
  EXPECT_EQ(info->hashes_from_cache, 2) << "both name the same file, hashed in the first run";
  EXPECT_EQ(info->hashes_computed, 0);
  EXPECT_EQ(libs[0].loaded_version, "12.4");
  EXPECT_EQ(FindingMessage(ctx2.findings(), "library.loaded_version_differs"),
            kFakeLib +
                " reports version 12.4 when loaded, but its files said 12.3.107: the "
                "version from files is wrong for this copy");
  int differs = 0;
  for (const Finding& f : ctx2.findings()) differs += f.code == "library.loaded_version_differs";
  EXPECT_EQ(differs, 1) << "12.4.99 agrees with 12.4";
}

TEST(DeepTest, AnUnwritableCacheIsAWarningNotAFailure) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteFileAtomic(dir.Join("file"), "x").ok());
  RealFileSystem fs("/");
  CollectContext ctx(fs, CollectOptions{});
  std::vector<LibraryInfo> libs = {{.name = "nccl-net-fixture", .path = FixtureSo()}};
  DeepOptions deep{.enabled = true, .cache_dir = dir.Join("file/cutover")};
  std::optional<DeepInfo> info = InspectLibraries(ctx, deep, &libs);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->hashes_computed, 1);
  EXPECT_TRUE(libs[0].sha256.has_value());
  std::string msg = FindingMessage(ctx.findings(), "deep.hash_cache_unwritable");
  EXPECT_EQ(msg.rfind(dir.Join("file/cutover/sha256-cache.json") + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find("; hashes are computed again next time"), std::string::npos) << msg;
}

// An image root with the nvcc-built library where the loader finds NCCL net plugins.
TEST(DeepTest, DeepCollectionOfARootReadsFilesOnlyAndHitsTheCacheTheSecondTime) {
  testing::TempDir root, cache;
  ASSERT_TRUE(MakeDirs(root.Join("usr/lib/x86_64-linux-gnu")).ok());
  Result<std::string> so = ReadFile(FixtureSo());
  ASSERT_TRUE(so.ok()) << so.status().ToString();
  ASSERT_TRUE(
      WriteFileAtomic(root.Join("usr/lib/x86_64-linux-gnu/libnccl-net-fixture.so"), *so).ok());
  RealFileSystem fs(root.path());
  CollectOptions o;
  o.deep = {.enabled = true, .load = true, .cache_dir = cache.path()};
  o.read_kernel_log = true;
  Fingerprint fp = Collect(fs, o);
  CUTOVER_EXPECT_VALID_FINGERPRINT(FingerprintToJson(fp));
  ASSERT_EQ(fp.libraries.size(), 1u);
  const LibraryInfo& l = fp.libraries[0];
  EXPECT_EQ(l.name, "nccl-net-fixture");
  EXPECT_EQ(l.sha256, Sha256Hex(*so));
  EXPECT_EQ(l.cuda_archs, (std::vector<std::string>{"compute_90", "sm_80"}));
  EXPECT_EQ(l.ptx_isa, "9.0");
  EXPECT_EQ(l.glibc_needed, "2.2.5");
  EXPECT_EQ(l.loaded_version, std::nullopt) << "an image's libraries are never loaded";
  EXPECT_EQ(l.real_path, "/usr/lib/x86_64-linux-gnu/libnccl-net-fixture.so")
      << "--deep always names the real file";
  EXPECT_EQ(FindingMessage(fp.collection.findings, "deep.files_only"),
            "--deep on " + root.path() +
                ": sha256 and GPU architectures are read from the files; loaded_version is not "
                "asked (loading an image's libraries would run its code on this host)");
  ASSERT_TRUE(fp.collection.deep.has_value());
  EXPECT_EQ(*fp.collection.deep, (DeepInfo{.hash_cache = cache.Join("sha256-cache.json"),
                                           .hashes_from_cache = 0,
                                           .hashes_computed = 1,
                                           .bytes_hashed = so->size(),
                                           .loaded = 0}));
  EXPECT_EQ(fp.collection.kernel_log, "not read (no /var/log/kern.log under the root)");

  Fingerprint second = Collect(fs, o);
  ASSERT_TRUE(second.collection.deep.has_value());
  EXPECT_EQ(second.collection.deep->hashes_from_cache, 1);
  EXPECT_EQ(second.collection.deep->hashes_computed, 0);
  EXPECT_EQ(second.collection.deep->bytes_hashed, 0u);
  EXPECT_EQ(second.libraries[0].sha256, l.sha256);

  // Round trip through JSON keeps every new field.
  Result<Fingerprint> back = FingerprintFromJson(FingerprintToJson(second));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->libraries[0].cuda_archs, l.cuda_archs);
  EXPECT_EQ(back->libraries[0].sha256, l.sha256);
  EXPECT_EQ(back->collection.deep, second.collection.deep);

  // Without --deep: glibc_needed still, nothing else.
  CollectOptions plain;
  Fingerprint shallow = Collect(fs, plain);
  EXPECT_EQ(shallow.libraries[0].glibc_needed, "2.2.5");
  EXPECT_EQ(shallow.libraries[0].sha256, std::nullopt);
  EXPECT_EQ(shallow.libraries[0].cuda_archs, std::nullopt);
  EXPECT_EQ(shallow.libraries[0].real_path, std::nullopt) << "not a link: null without --deep";
  EXPECT_FALSE(shallow.collection.deep.has_value());
}

}  // namespace
}  // namespace cutover::probe
