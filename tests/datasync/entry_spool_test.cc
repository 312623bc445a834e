#include "datasync/entry_spool.h"

#include <dirent.h>
#include <stdlib.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/harness/test_env.h"

namespace cutover {
namespace {

EntrySpool::Record FileRecord(int i) {
  EntrySpool::Record r;
  r.entry.path = "dir/file-" + std::to_string(i);
  r.entry.type = EntryType::kFile;
  r.entry.mode = 0640;
  r.entry.mtime_ns = 1700000000000000000 + i;
  for (int k = 0; k < i % 4; ++k) {
    ChunkRef c;
    c.id[0] = static_cast<uint8_t>(i);
    c.id[31] = static_cast<uint8_t>(k);
    c.length = 100 + k;
    c.packed = k == 1;
    c.pack[5] = 9;
    c.pack_offset = static_cast<uint64_t>(i) * 7;
    r.entry.chunks.push_back(c);
    r.entry.size += c.length;
    FastDigest f{};
    f[0] = static_cast<uint8_t>(k);
    f[15] = static_cast<uint8_t>(i);
    r.fast.push_back(f);
  }
  r.key = FileStatKey{1, static_cast<uint64_t>(i), r.entry.size, 5, 6};
  r.flags = static_cast<uint32_t>(i % 8);
  return r;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (struct dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

// Every field written is read back, in order, twice over; the file is gone from the directory
// from the start.
TEST(EntrySpoolTest, ReadsBackWhatWasWrittenAndLeavesNoFile) {
  testing::TempDir tmp;
  ::setenv("TMPDIR", tmp.path().c_str(), 1);
  auto spool = EntrySpool::Create();
  ::unsetenv("TMPDIR");
  ASSERT_TRUE(spool.ok()) << spool.status().ToString();
  EXPECT_EQ(FilesIn(tmp.path()), 0u);
  EntrySpool::Record link;
  link.entry = Entry{"a link", EntryType::kSymlink, 0777, 0, 3, std::string("t\0x", 3), {}};
  ASSERT_TRUE((*spool)->Write(link).ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*spool)->Write(FileRecord(i)).ok());
  EXPECT_EQ((*spool)->size(), 1001u);
  for (int pass = 0; pass < 2; ++pass) {
    ASSERT_TRUE((*spool)->Rewind().ok());
    EntrySpool::Record r;
    auto more = (*spool)->Read(&r);
    ASSERT_TRUE(more.ok() && *more);
    EXPECT_EQ(r.entry, link.entry);
    for (int i = 0; i < 1000; ++i) {
      more = (*spool)->Read(&r);
      ASSERT_TRUE(more.ok() && *more) << i;
      EntrySpool::Record want = FileRecord(i);
      EXPECT_EQ(r.entry, want.entry);
      EXPECT_EQ(r.key, want.key);
      EXPECT_EQ(r.flags, want.flags);
      EXPECT_EQ(r.fast, want.fast);
    }
    more = (*spool)->Read(&r);
    ASSERT_TRUE(more.ok());
    EXPECT_FALSE(*more);
  }
}

TEST(EntrySpoolTest, AnUnusableTemporaryDirectoryIsNamed) {
  ::setenv("TMPDIR", "/nonexistent-cutover-dir", 1);
  auto spool = EntrySpool::Create();
  ::unsetenv("TMPDIR");
  ASSERT_FALSE(spool.ok());
  EXPECT_NE(spool.status().message().find("/nonexistent-cutover-dir"), std::string::npos)
      << spool.status().ToString();
}

}  // namespace
}  // namespace cutover
