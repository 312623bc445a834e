// Test helpers: a directory tree as a map, to compare a restored tree with its source, and a
// generated dataset tree with the entry kinds datasync must carry.
#ifndef CUTOVER_TESTS_DATASYNC_TREE_H_
#define CUTOVER_TESTS_DATASYNC_TREE_H_

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/file_util.h"
#include "datasync/hash.h"

namespace cutover::testing {

// Adds path -> "mode mtime content-hash-or-target" for every entry under root/rel (directories
// too, with their mode and mtime) to *out.
inline void DescribeTree(const std::string& root, const std::string& rel,
                         std::map<std::string, std::string>* out) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string path = rel.empty() ? n : rel + "/" + n;
    std::string full = root + "/" + path;
    struct stat st;
    ASSERT_EQ(::lstat(full.c_str(), &st), 0) << full;
    std::string desc = std::to_string(st.st_mode) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                       std::to_string(st.st_mtim.tv_nsec) + " ";
    if (S_ISDIR(st.st_mode)) {
      DescribeTree(root, path, out);
    } else if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t k = ::readlink(full.c_str(), buf, sizeof buf);
      ASSERT_GE(k, 0) << full;
      desc += std::string(buf, static_cast<size_t>(k));
    } else if (S_ISREG(st.st_mode)) {
      desc += ToHex(Sha256Of(ReadFile(full).value_or("unreadable")));
    }
    (*out)[path] = desc;
  }
  ::closedir(d);
}

inline std::map<std::string, std::string> Tree(const std::string& root) {
  std::map<std::string, std::string> out;
  DescribeTree(root, "", &out);
  return out;
}

inline std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    for (size_t k = 0; k < 8 && i + k < n; ++k) s[i + k] = static_cast<char>(v >> (8 * k));
  }
  return s;
}

inline void SetMtime(const std::string& path, int64_t sec) {
  struct timespec t[2] = {{sec, 123456789}, {sec, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW), 0) << path;
}

// A tree of `big` random files of `big_size` bytes and `small` small files (packed by push),
// with an empty file, a symlink, nested directories and unusual modes. `variant` changes the
// contents of about half the files (the "next version" of the same dataset).
inline void MakeTree(const std::string& root, int big, size_t big_size, int small, int variant) {
  std::mt19937_64 rng(17);
  std::mt19937_64 vrng(1000 + variant);
  ASSERT_TRUE(MakeDirs(root + "/data/shards").ok());
  ASSERT_TRUE(MakeDirs(root + "/meta").ok());
  for (int i = 0; i < big; ++i) {
    std::string bytes = RandomBytes(rng, big_size);
    if (variant > 0 && i % 2 == 0) {
      std::string patch = RandomBytes(vrng, 3000);
      bytes.replace(big_size / 3, patch.size(), patch);
    }
    std::string p = root + "/data/shards/part-" + std::to_string(i) + ".bin";
    ASSERT_TRUE(WriteFileAtomic(p, bytes, 0644).ok());
    SetMtime(p, 1700000000 + i);
  }
  for (int i = 0; i < small; ++i) {
    std::string text = "label " + std::to_string(i) + "\n" + RandomBytes(rng, 100 + i * 37);
    if (variant > 0 && i % 2 == 1) text += "v" + std::to_string(variant);
    std::string p = root + "/meta/s" + std::to_string(i) + ".txt";
    ASSERT_TRUE(WriteFileAtomic(p, text, i % 3 == 0 ? 0600 : 0644).ok());
    SetMtime(p, 1710000000 + i);
  }
  ASSERT_TRUE(WriteFileAtomic(root + "/meta/empty", "", 0640).ok());
  SetMtime(root + "/meta/empty", 1720000000);
  ASSERT_EQ(::symlink("data/shards/part-0.bin", (root + "/current").c_str()), 0);
  SetMtime(root + "/current", 1720000001);
  ASSERT_EQ(::chmod((root + "/meta").c_str(), 0750), 0);
  SetMtime(root + "/data/shards", 1730000000);
  SetMtime(root + "/data", 1730000001);
  SetMtime(root + "/meta", 1730000002);
}

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_DATASYNC_TREE_H_
