#include "core/file_util.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

TEST(FileUtilTest, AtomicWriteReplacesAndReads) {
  testing::TempDir dir;
  std::string p = dir.Join("a/b/doc.json");
  ASSERT_TRUE(MakeDirs(dir.Join("a/b")).ok());
  ASSERT_TRUE(WriteFileAtomic(p, "one").ok());
  ASSERT_TRUE(WriteFileAtomic(p, "two", 0600).ok());
  auto r = ReadFile(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "two");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // No temporary file is left behind.
  std::string out;
  EXPECT_EQ(testing::RunShell("ls -A " + dir.Join("a/b"), &out), 0);
  EXPECT_EQ(out, "doc.json\n");
}

TEST(FileUtilTest, Errors) {
  testing::TempDir dir;
  auto missing = ReadFile(dir.Join("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "cannot open " + dir.Join("nope") + ": No such file or directory");
  Status s = WriteFileAtomic(dir.Join("no/such/dir/x"), "x");
  EXPECT_EQ(s.code(), Code::kIoError);
  ASSERT_TRUE(WriteFileAtomic(dir.Join("file"), "x").ok());
  EXPECT_EQ(MakeDirs(dir.Join("file/sub")).code(), Code::kIoError);
}

TEST(FileUtilTest, ExpandHome) {
  ::setenv("HOME", "/home/tester", 1);
  EXPECT_EQ(ExpandHome("~/.cache/cutover"), "/home/tester/.cache/cutover");
  EXPECT_EQ(ExpandHome("/abs/~/x"), "/abs/~/x");
}

}  // namespace
}  // namespace cutover
