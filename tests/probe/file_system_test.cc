// Tests of core/file_system (owned by probe: the host seam its collectors read through).
#include "core/file_system.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

TEST(FileSystemTest, PathHelpers) {
  EXPECT_EQ(JoinPath("/usr/lib/", "/libc.so"), "/usr/lib/libc.so");
  EXPECT_EQ(NormalizePath("/a//b/./c/../d"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/../.."), "/");
  // Already normal paths come back as they are; every other form is still normalised.
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath("/usr/lib/x.so"), "/usr/lib/x.so");
  EXPECT_EQ(NormalizePath("/a/b/"), "/a/b");
  EXPECT_EQ(NormalizePath("/a/.b/..c"), "/a/.b/..c");
  EXPECT_EQ(NormalizePath("/a/b/.."), "/a");
  EXPECT_EQ(NormalizePath("/a/./b"), "/a/b");
  EXPECT_EQ(NormalizePath("a/b"), "/a/b");
  EXPECT_EQ(NormalizePath(""), "/");
  EXPECT_EQ(BaseName("/usr/lib/libcudnn.so.9"), "libcudnn.so.9");
  EXPECT_EQ(DirName("/usr/lib/libcudnn.so.9"), "/usr/lib");
  EXPECT_EQ(DirName("/x"), "/");
}

TEST(FileSystemTest, FakeResolvesLinksInsideTheTreeAndRecordsAccess) {
  FakeFileSystem fs;
  fs.AddFile("/usr/local/cuda-12.4/version.json", "{}");
  fs.AddSymlink("/usr/local/cuda", "cuda-12.4");
  fs.AddSymlink("/opt/abs", "/usr/local/cuda");
  fs.AddFile("/proc/secret", "x");
  fs.SetUnreadable("/proc/secret");
  EXPECT_EQ(*fs.ReadFile("/opt/abs/version.json"), "{}");
  EXPECT_EQ(*fs.RealPath("/opt/abs"), "/usr/local/cuda-12.4");
  EXPECT_EQ(*fs.ReadLink("/usr/local/cuda"), "cuda-12.4");
  EXPECT_EQ(fs.ReadLink("/usr/local/cuda-12.4").status().message(),
            "/usr/local/cuda-12.4: not a symbolic link");
  EXPECT_EQ(fs.ReadFile("/proc/secret").status().ToString(),
            "io_error: /proc/secret: Permission denied");
  EXPECT_EQ(fs.ReadFile("/nope").status().code(), Code::kNotFound);
  EXPECT_EQ(*fs.ListDir("/usr/local"), (std::vector<std::string>{"cuda", "cuda-12.4"}));
  EXPECT_EQ(fs.Stat("/usr/local/cuda", false)->type, FileType::kSymlink);
  EXPECT_EQ(fs.Stat("/usr/local/cuda")->type, FileType::kDirectory);
  EXPECT_EQ(fs.accessed().front(), "/opt/abs/version.json");
  fs.AddSymlink("/loop", "/loop");
  EXPECT_EQ(fs.ReadFile("/loop").status().message(), "/loop: Too many levels of symbolic links");
}

TEST(FileSystemTest, RealRootedKeepsAbsoluteLinksInsideTheRoot) {
  testing::TempDir dir;
  ASSERT_EQ(::mkdir(dir.Join("etc").c_str(), 0755), 0);
  std::ofstream(dir.Join("etc/os-release")) << "ID=fixture\n";
  ASSERT_EQ(::symlink("/etc/os-release", dir.Join("link").c_str()), 0);
  ASSERT_EQ(::symlink("../../../../../../etc", dir.Join("up").c_str()), 0);
  RealFileSystem fs(dir.path());
  EXPECT_EQ(*fs.ReadFile("/link"), "ID=fixture\n");           // not the host's /etc/os-release
  EXPECT_EQ(*fs.ReadFile("/up/os-release"), "ID=fixture\n");  // ".." stops at the root
  EXPECT_EQ(*fs.RealPath("/link"), "/etc/os-release");
  EXPECT_EQ(fs.ReadFile("/etc").status().message(), "/etc: Is a directory");
  EXPECT_EQ(fs.ReadFile("/missing").status().ToString(),
            "not_found: /missing: No such file or directory");
  EXPECT_EQ(*fs.ListDir("/"), (std::vector<std::string>{"etc", "link", "up"}));
  EXPECT_EQ(fs.ReadFile("/etc/os-release", 2).value(), "ID");
}

}  // namespace
}  // namespace cutover
