// The host seam: every read of the host's files by a collector goes through a FileSystem, so a
// collector can run against the live host ("/"), an unpacked image or fixture tree (--root DIR),
// or an in-memory tree in a unit test.
//
// Paths given to a FileSystem are absolute paths *inside* the tree ("/proc/meminfo"). A
// RealFileSystem rooted at DIR resolves them under DIR, and resolves symbolic links inside the
// tree too: an absolute link target "/usr/local/cuda-12.4" means DIR/usr/local/cuda-12.4, and ".."
// never climbs above DIR. FakeFileSystem keeps files, directories and links in memory and records
// the paths it was asked for, so tests can assert what a collector touched.
//
// Thread-safety: RealFileSystem is safe to use from several threads (it holds only its root).
// FakeFileSystem must be filled before use and then used from one thread (it records accesses).
#ifndef CUTOVER_CORE_FILE_SYSTEM_H_
#define CUTOVER_CORE_FILE_SYSTEM_H_

#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace cutover {

enum class FileType { kRegular, kDirectory, kSymlink, kOther };

// What Stat reports about one path.
struct FileInfo {
  FileType type = FileType::kOther;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  uint32_t mode = 0;       // permission bits
  int64_t ctime_ns = 0;    // inode change time (a same-size rewrite changes it)
  uint64_t links = 1;      // hard links to the inode
  uint64_t allocated = 0;  // bytes of storage the file occupies (fewer than size: holes)
  uint32_t format = 0;     // the S_IFMT bits, which name what a kOther is (socket, FIFO, ...)
};

class FileSystem {
 public:
  // The default cap on ReadFile: files larger than this are truncated to it.
  static constexpr size_t kDefaultMaxRead = 4 << 20;

  virtual ~FileSystem() = default;

  // Reads at most `max_bytes` of the file at `path` (following links). NotFound when it does not
  // exist, IoError ("<path>: <reason>") when it cannot be read (permission, a directory, ...).
  virtual Result<std::string> ReadFile(const std::string& path,
                                       size_t max_bytes = kDefaultMaxRead) const = 0;

  // Reads at most `len` bytes of the file at `path` (following links) from byte `offset`: fewer
  // at its end, none past it. Errors as ReadFile. The default reads the prefix with ReadFile;
  // RealFileSystem reads only the range, so a 0.5 GB library can be hashed or its ELF headers
  // read piece by piece.
  virtual Result<std::string> ReadAt(const std::string& path, uint64_t offset, size_t len) const;

  // The names of the entries in directory `path` (no "." or ".."), sorted.
  // NotFound when it does not exist, IoError when it is not a directory or cannot be read.
  virtual Result<std::vector<std::string>> ListDir(const std::string& path) const = 0;

  // Information on `path`; follows links when `follow_links`, otherwise describes the link itself.
  virtual Result<FileInfo> Stat(const std::string& path, bool follow_links = true) const = 0;

  // The target of the symbolic link `path`, as stored (relative or absolute inside the tree).
  // InvalidArgument when `path` is not a link.
  virtual Result<std::string> ReadLink(const std::string& path) const = 0;

  // The path with every link resolved inside the tree (like realpath), or NotFound.
  virtual Result<std::string> RealPath(const std::string& path) const = 0;

  // True when `path` exists (following links).
  bool Exists(const std::string& path) const { return Stat(path).ok(); }
  bool IsDirectory(const std::string& path) const;
  bool IsRegularFile(const std::string& path) const;

  // The root this tree stands for, as shown in reports ("/" for the live host).
  virtual std::string RootLabel() const = 0;
};

// What a stat(2) result says, as a FileInfo (what RealFileSystem::Stat returns), for code that
// already holds one (an fstat of an open file).
FileInfo FileInfoFromStat(const struct stat& st);

// Joins `dir` and `name` with exactly one '/'.
std::string JoinPath(std::string_view dir, std::string_view name);

// Normalises an absolute path lexically: collapses "//", "." and ".." (never above "/").
std::string NormalizePath(std::string_view path);

// The last component of `path` ("libcudnn.so.9" for "/usr/lib/libcudnn.so.9").
std::string_view BaseName(std::string_view path);

// Everything before the last component ("/usr/lib" for "/usr/lib/libcudnn.so.9"; "/" for "/x").
std::string DirName(std::string_view path);

// The real file system, rooted at `root` ("/" for the live host).
class RealFileSystem : public FileSystem {
 public:
  explicit RealFileSystem(std::string root = "/");

  Result<std::string> ReadFile(const std::string& path,
                               size_t max_bytes = kDefaultMaxRead) const override;
  Result<std::string> ReadAt(const std::string& path, uint64_t offset, size_t len) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<FileInfo> Stat(const std::string& path, bool follow_links = true) const override;
  Result<std::string> ReadLink(const std::string& path) const override;
  Result<std::string> RealPath(const std::string& path) const override;
  std::string RootLabel() const override { return root_.empty() ? "/" : root_; }

 private:
  // The host path for tree path `path`, with links resolved inside the tree when rooted
  // elsewhere than "/" (and, unless `follow_last`, the last component left unresolved).
  Result<std::string> HostPath(const std::string& path, bool follow_last) const;

  std::string root_;  // "" for "/", else the root without a trailing '/'
};

// An in-memory tree for unit tests.
class FakeFileSystem : public FileSystem {
 public:
  FakeFileSystem();

  // Adds a regular file (and its parent directories), replacing what was there.
  void AddFile(const std::string& path, std::string content);
  // Adds a directory (and its parents).
  void AddDir(const std::string& path);
  // Adds a symbolic link at `path` pointing to `target` (relative or absolute inside the tree).
  void AddSymlink(const std::string& path, std::string target);
  // Makes ReadFile / ListDir of `path` fail with IoError "<path>: Permission denied".
  void SetUnreadable(const std::string& path);

  // Every path passed to ReadFile, ListDir, Stat or ReadLink, in order of first use.
  const std::vector<std::string>& accessed() const { return accessed_; }

  Result<std::string> ReadFile(const std::string& path,
                               size_t max_bytes = kDefaultMaxRead) const override;
  Result<std::vector<std::string>> ListDir(const std::string& path) const override;
  Result<FileInfo> Stat(const std::string& path, bool follow_links = true) const override;
  Result<std::string> ReadLink(const std::string& path) const override;
  Result<std::string> RealPath(const std::string& path) const override;
  std::string RootLabel() const override { return "fake:/"; }

 private:
  struct Node {
    FileType type = FileType::kDirectory;
    std::string data;  // file content or link target
    bool unreadable = false;
    uint64_t inode = 0;
  };
  void Record(const std::string& path) const;
  // Resolves `path` to the key of its node, following links (all, or all but the last).
  Result<std::string> Resolve(const std::string& path, bool follow_last) const;

  std::map<std::string, Node> nodes_;
  uint64_t next_inode_ = 1;
  mutable std::vector<std::string> accessed_;
  mutable std::set<std::string> accessed_set_;
};

}  // namespace cutover

#endif  // CUTOVER_CORE_FILE_SYSTEM_H_
