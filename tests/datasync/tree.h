// Test helper: a directory tree as a map, to compare a restored tree with its source.
#ifndef CUTOVER_TESTS_DATASYNC_TREE_H_
#define CUTOVER_TESTS_DATASYNC_TREE_H_

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
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

}  // namespace cutover::testing

#endif  // CUTOVER_TESTS_DATASYNC_TREE_H_
