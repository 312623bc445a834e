#include "core/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>

#include "core/posix_io.h"

namespace cutover {
namespace {

constexpr int kMaxLinkHops = 40;

std::vector<std::string> SplitComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = i;
    while (j < path.size() && path[j] != '/') ++j;
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

Status ErrnoStatus(const std::string& path, int err) {
  if (err == ENOENT || err == ENOTDIR)
    return Status::NotFound(path + ": No such file or directory");
  return Status::IoError(path + ": " + std::strerror(err));
}

// Resolves links of the tree path `path` component by component. `link_of` returns the target
// of a tree path when it is a symbolic link, nullopt otherwise (including when it is absent).
Result<std::string> ResolveInTree(
    const std::string& path, bool follow_last,
    const std::function<std::optional<std::string>(const std::string&)>& link_of) {
  std::vector<std::string> pending = SplitComponents(path);
  std::reverse(pending.begin(), pending.end());  // pop from the back
  std::string prefix = "/";
  int hops = 0;
  while (!pending.empty()) {
    std::string comp = std::move(pending.back());
    pending.pop_back();
    if (comp == ".") continue;
    if (comp == "..") {
      prefix = DirName(prefix);
      continue;
    }
    std::string candidate = JoinPath(prefix, comp);
    bool last = pending.empty();
    if (last && !follow_last) return candidate;
    std::optional<std::string> target = link_of(candidate);
    if (!target) {
      prefix = std::move(candidate);
      continue;
    }
    if (++hops > kMaxLinkHops) {
      return Status::IoError(path + ": Too many levels of symbolic links");
    }
    std::vector<std::string> parts = SplitComponents(*target);
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(*it);
    if (!target->empty() && (*target)[0] == '/') prefix.assign(1, '/');
  }
  return prefix;
}

}  // namespace

FileInfo FileInfoFromStat(const struct stat& st) {
  FileInfo info;
  if (S_ISREG(st.st_mode)) {
    info.type = FileType::kRegular;
  } else if (S_ISDIR(st.st_mode)) {
    info.type = FileType::kDirectory;
  } else if (S_ISLNK(st.st_mode)) {
    info.type = FileType::kSymlink;
  } else {
    info.type = FileType::kOther;
  }
  info.size = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  info.device = st.st_dev;
  info.inode = st.st_ino;
  info.mode = st.st_mode & 07777;
  info.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
  info.links = st.st_nlink;
  info.allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  info.format = st.st_mode & S_IFMT;
  return info;
}

bool FileSystem::IsDirectory(const std::string& path) const {
  Result<FileInfo> info = Stat(path);
  return info.ok() && info->type == FileType::kDirectory;
}

bool FileSystem::IsRegularFile(const std::string& path) const {
  Result<FileInfo> info = Stat(path);
  return info.ok() && info->type == FileType::kRegular;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  size_t skip = 0;
  while (skip < name.size() && name[skip] == '/') ++skip;
  if (out.empty() || out.back() != '/') out += '/';
  out.append(name.substr(skip));
  return out;
}

namespace {

// True when NormalizePath would return `path` unchanged: absolute, and no empty, "." or ".."
// component (no "//", no trailing '/' except the root itself).
bool IsNormalPath(std::string_view path) {
  if (path.empty() || path[0] != '/') return false;
  if (path.size() == 1) return true;
  size_t start = 1;
  for (;;) {
    const size_t end = path.find('/', start);
    const std::string_view c =
        path.substr(start, end == std::string_view::npos ? path.npos : end - start);
    if (c.empty() || c == "." || c == "..") return false;
    if (end == std::string_view::npos) return true;
    start = end + 1;
  }
}

}  // namespace

std::string NormalizePath(std::string_view path) {
  // The common case (every walk's Stat) without splitting into components.
  if (IsNormalPath(path)) return std::string(path);
  std::vector<std::string> out;
  for (std::string& c : SplitComponents(path)) {
    if (c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(std::move(c));
  }
  std::string s;
  for (const std::string& c : out) s += "/" + c;
  return s.empty() ? "/" : s;
}

std::string_view BaseName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string DirName(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

Result<std::string> FileSystem::ReadAt(const std::string& path, uint64_t offset, size_t len) const {
  if (len > SIZE_MAX - offset) len = SIZE_MAX - offset;
  CUTOVER_ASSIGN_OR_RETURN(std::string prefix, ReadFile(path, offset + len));
  if (offset >= prefix.size()) return std::string();
  return prefix.substr(offset, len);
}

// ---------------------------------------------------------------------------------------------
// RealFileSystem

RealFileSystem::RealFileSystem(std::string root) : root_(std::move(root)) {
  while (!root_.empty() && root_.back() == '/') root_.pop_back();
}

Result<std::string> RealFileSystem::HostPath(const std::string& path, bool follow_last) const {
  if (root_.empty()) return NormalizePath(path);
  auto link_of = [this](const std::string& p) -> std::optional<std::string> {
    std::string host = root_ + p;
    char buf[4096];
    ssize_t n = ::readlink(host.c_str(), buf, sizeof(buf));
    if (n < 0) return std::nullopt;
    return std::string(buf, static_cast<size_t>(n));
  };
  CUTOVER_ASSIGN_OR_RETURN(std::string resolved, ResolveInTree(path, follow_last, link_of));
  return root_ + resolved;
}

Result<std::string> RealFileSystem::ReadAt(const std::string& path, uint64_t offset,
                                           size_t len) const {
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, true));
  int fd = ::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::IoError(path + ": not a regular file");
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  std::string out;
  if (offset < size) {
    out.resize(static_cast<size_t>(std::min<uint64_t>(len, size - offset)));
    const ssize_t done = PreadFull(fd, out.data(), out.size(), offset);
    if (done < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(path, err);
    }
    out.resize(static_cast<size_t>(done));
  }
  ::close(fd);
  return out;
}

Result<std::string> RealFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, true));
  int fd = ::open(host.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) st.st_mode = 0;
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::IoError(path + ": Is a directory");
  }
  std::string out;
  // /proc and /sys files report size 0 or 4096: read until EOF, in chunks of at least 16 KiB
  // (a regular file's whole size at once).
  size_t chunk = 16384;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    chunk = std::max(chunk, std::min(static_cast<size_t>(st.st_size) + 1, max_bytes));
  }
  std::string buf(chunk, '\0');
  while (out.size() < max_bytes) {
    size_t want = std::min(buf.size(), max_bytes - out.size());
    ssize_t n = ReadSome(fd, buf.data(), want);
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoStatus(path, err);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<std::vector<std::string>> RealFileSystem::ListDir(const std::string& path) const {
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, true));
  DIR* dir = ::opendir(host.c_str());
  if (dir == nullptr) {
    int err = errno;
    if (err == ENOTDIR) return Status::IoError(path + ": Not a directory");
    return ErrnoStatus(path, err);
  }
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

Result<FileInfo> RealFileSystem::Stat(const std::string& path, bool follow_links) const {
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, follow_links));
  struct stat st;
  int rc = follow_links ? ::stat(host.c_str(), &st) : ::lstat(host.c_str(), &st);
  if (rc != 0) return ErrnoStatus(path, errno);
  return FileInfoFromStat(st);
}

Result<std::string> RealFileSystem::ReadLink(const std::string& path) const {
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, false));
  char buf[4096];
  ssize_t n = ::readlink(host.c_str(), buf, sizeof(buf));
  if (n < 0) {
    if (errno == EINVAL) return Status::InvalidArgument(path + ": not a symbolic link");
    return ErrnoStatus(path, errno);
  }
  return std::string(buf, static_cast<size_t>(n));
}

Result<std::string> RealFileSystem::RealPath(const std::string& path) const {
  if (root_.empty()) {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return ErrnoStatus(path, errno);
    return std::string(buf);
  }
  CUTOVER_ASSIGN_OR_RETURN(std::string host, HostPath(path, true));
  struct stat st;
  if (::lstat(host.c_str(), &st) != 0) return ErrnoStatus(path, errno);
  std::string tree = host.substr(root_.size());
  return tree.empty() ? "/" : tree;
}

// ---------------------------------------------------------------------------------------------
// FakeFileSystem

FakeFileSystem::FakeFileSystem() { nodes_["/"] = Node{}; }

void FakeFileSystem::AddDir(const std::string& path) {
  std::string p = NormalizePath(path);
  while (true) {
    auto it = nodes_.find(p);
    if (it == nodes_.end() || it->second.type != FileType::kDirectory) {
      Node n;
      n.type = FileType::kDirectory;
      n.inode = next_inode_++;
      nodes_[p] = n;
    }
    if (p == "/") break;
    p = DirName(p);
  }
}

void FakeFileSystem::AddFile(const std::string& path, std::string content) {
  std::string p = NormalizePath(path);
  AddDir(DirName(p));
  Node n;
  n.type = FileType::kRegular;
  n.data = std::move(content);
  n.inode = next_inode_++;
  nodes_[p] = std::move(n);
}

void FakeFileSystem::AddSymlink(const std::string& path, std::string target) {
  std::string p = NormalizePath(path);
  AddDir(DirName(p));
  Node n;
  n.type = FileType::kSymlink;
  n.data = std::move(target);
  n.inode = next_inode_++;
  nodes_[p] = std::move(n);
}

void FakeFileSystem::SetUnreadable(const std::string& path) {
  auto it = nodes_.find(NormalizePath(path));
  if (it != nodes_.end()) it->second.unreadable = true;
}

void FakeFileSystem::Record(const std::string& path) const {
  if (accessed_set_.insert(path).second) accessed_.push_back(path);
}

Result<std::string> FakeFileSystem::Resolve(const std::string& path, bool follow_last) const {
  auto link_of = [this](const std::string& p) -> std::optional<std::string> {
    auto it = nodes_.find(p);
    if (it == nodes_.end() || it->second.type != FileType::kSymlink) return std::nullopt;
    return it->second.data;
  };
  CUTOVER_ASSIGN_OR_RETURN(std::string key, ResolveInTree(path, follow_last, link_of));
  if (nodes_.find(key) == nodes_.end()) {
    return Status::NotFound(path + ": No such file or directory");
  }
  return key;
}

Result<std::string> FakeFileSystem::ReadFile(const std::string& path, size_t max_bytes) const {
  Record(path);
  CUTOVER_ASSIGN_OR_RETURN(std::string key, Resolve(path, true));
  const Node& n = nodes_.at(key);
  if (n.unreadable) return Status::IoError(path + ": Permission denied");
  if (n.type == FileType::kDirectory) return Status::IoError(path + ": Is a directory");
  return n.data.substr(0, max_bytes);
}

Result<std::vector<std::string>> FakeFileSystem::ListDir(const std::string& path) const {
  Record(path);
  CUTOVER_ASSIGN_OR_RETURN(std::string key, Resolve(path, true));
  const Node& n = nodes_.at(key);
  if (n.type != FileType::kDirectory) return Status::IoError(path + ": Not a directory");
  if (n.unreadable) return Status::IoError(path + ": Permission denied");
  std::vector<std::string> names;
  std::string prefix = key == "/" ? "/" : key + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end(); ++it) {
    const std::string& k = it->first;
    if (k.compare(0, prefix.size(), prefix) != 0) break;
    if (k.size() == prefix.size()) continue;
    if (k.find('/', prefix.size()) != std::string::npos) continue;
    names.push_back(k.substr(prefix.size()));
  }
  return names;  // std::map order is sorted
}

Result<FileInfo> FakeFileSystem::Stat(const std::string& path, bool follow_links) const {
  Record(path);
  CUTOVER_ASSIGN_OR_RETURN(std::string key, Resolve(path, follow_links));
  const Node& n = nodes_.at(key);
  FileInfo info;
  info.type = n.type;
  info.size = n.data.size();
  info.inode = n.inode;
  info.device = 1;
  info.mode = n.unreadable ? 0 : (n.type == FileType::kDirectory ? 0755 : 0644);
  info.allocated = info.size;
  return info;
}

Result<std::string> FakeFileSystem::ReadLink(const std::string& path) const {
  Record(path);
  CUTOVER_ASSIGN_OR_RETURN(std::string key, Resolve(path, false));
  const Node& n = nodes_.at(key);
  if (n.type != FileType::kSymlink) return Status::InvalidArgument(path + ": not a symbolic link");
  return n.data;
}

Result<std::string> FakeFileSystem::RealPath(const std::string& path) const {
  Record(path);
  return Resolve(path, true);
}

}  // namespace cutover
