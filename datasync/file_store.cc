#include "datasync/file_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "core/posix_io.h"

namespace cutover {
namespace {

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(ErrnoMessage("cannot open directory", dir));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::IoError(ErrnoMessage("cannot fsync directory", dir));
  return Status::Ok();
}

std::atomic<uint64_t> g_tmp_counter{0};

}  // namespace

Result<std::unique_ptr<FileStore>> FileStore::Open(std::string_view url) {
  constexpr std::string_view kScheme = "file://";
  if (!url.starts_with(kScheme) || url.size() <= kScheme.size() || url[kScheme.size()] != '/') {
    return Status::InvalidArgument("bad file store URL \"" + std::string(url) +
                                   "\": expected file:///absolute/path");
  }
  std::string root(url.substr(kScheme.size()));
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  // Nothing is created here: the first Put makes the directories it needs, so `plan`, `ls`
  // and `verify` against a store that does not exist yet leave no trace.
  struct stat st;
  if (::stat(root.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument("file store " + root + " is not a directory");
  }
  return std::unique_ptr<FileStore>(new FileStore(root));
}

Status FileStore::Put(std::string_view key, std::string_view bytes) {
  CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
  std::string path = PathOf(key);
  std::string dir = path.substr(0, path.rfind('/'));
  std::string base = path.substr(path.rfind('/') + 1);
  CUTOVER_RETURN_IF_ERROR(MakeDirs(dir));
  std::string tmp = dir + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
                    std::to_string(g_tmp_counter.fetch_add(1));
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError(ErrnoMessage("cannot create", tmp));
  Status s = WriteFull(fd, bytes.data(), bytes.size()) < 0
                 ? Status::IoError(ErrnoMessage("cannot write", tmp))
                 : Status::Ok();
  if (s.ok() && ::fsync(fd) != 0) s = Status::IoError(ErrnoMessage("cannot fsync", tmp));
  ::close(fd);
  if (s.ok() && failpoint::g_armed.load(std::memory_order_relaxed) &&
      failpoint::Hit("file_store.put.before_rename")) {
    s = Status::IoError("failpoint file_store.put.before_rename");
  }
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::IoError(ErrnoMessage("cannot rename into", path));
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  CUTOVER_FAILPOINT("file_store.put.after_rename");
  CUTOVER_RETURN_IF_ERROR(FsyncDir(dir));
  CUTOVER_FAILPOINT("store.put.after");
  return Status::Ok();
}

Status FileStore::CheckRegular(std::string_view key) const {
  struct stat st;
  if (::stat(PathOf(key).c_str(), &st) != 0 || S_ISREG(st.st_mode)) return Status::Ok();
  return Status::Corruption("object " + std::string(key) + " in " + Url() +
                            " is not a regular file");
}

Result<std::string> FileStore::Get(std::string_view key) {
  CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
  CUTOVER_RETURN_IF_ERROR(CheckRegular(key));
  auto r = ReadFile(PathOf(key));
  if (!r.ok() && r.status().code() == Code::kNotFound) {
    return Status::NotFound("no object " + std::string(key) + " in " + Url());
  }
  return r;
}

Result<std::string> FileStore::GetRange(std::string_view key, uint64_t offset, uint64_t length) {
  CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
  CUTOVER_RETURN_IF_ERROR(CheckRegular(key));
  std::string path = PathOf(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no object " + std::string(key) + " in " + Url());
    return Status::IoError(ErrnoMessage("cannot open", path));
  }
  std::string out(length, '\0');
  const ssize_t got = PreadFull(fd, out.data(), length, offset);
  if (got < 0) {
    Status s = Status::IoError(ErrnoMessage("cannot read", path));
    ::close(fd);
    return s;
  }
  ::close(fd);
  if (static_cast<uint64_t>(got) < length) {
    return Status::Corruption("object " + std::string(key) + " is shorter than " +
                              std::to_string(offset + length) + " bytes");
  }
  return out;
}

Result<uint64_t> FileStore::Head(std::string_view key) {
  CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
  std::string path = PathOf(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return Status::NotFound("no object " + std::string(key) + " in " + Url());
    }
    return Status::IoError(ErrnoMessage("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode))
    return Status::NotFound("no object " + std::string(key) + " in " + Url());
  return static_cast<uint64_t>(st.st_size);
}

Status FileStore::List(std::string_view prefix,
                       const std::function<Status(std::string_view key, uint64_t size)>& fn) {
  // Walk only the directory the prefix names (the part up to its last '/'), depth first, one
  // open directory per level: memory stays bounded by the depth, not the number of objects.
  std::string pre(prefix);
  std::string start_dir = pre.substr(0, pre.rfind('/') == std::string::npos ? 0 : pre.rfind('/'));
  std::function<Status(const std::string&)> walk = [&](const std::string& rel) -> Status {
    std::string dir = rel.empty() ? root_ : root_ + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();
      return Status::IoError(ErrnoMessage("cannot list", dir));
    }
    Status s;
    while (s.ok()) {
      errno = 0;
      struct dirent* ent = ::readdir(d);
      if (ent == nullptr) {
        if (errno != 0) s = Status::IoError(ErrnoMessage("cannot list", dir));
        break;
      }
      if (ent->d_name[0] == '.') continue;  // ".", "..", and temporaries of Put
      std::string key = rel.empty() ? ent->d_name : rel + "/" + ent->d_name;
      // Prune subtrees that cannot hold a key with the prefix.
      std::string as_dir = key + "/";
      bool could_match = key.starts_with(pre) || pre.starts_with(as_dir);
      if (!could_match) continue;
      struct stat st;
      if (::fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue;  // deleted meanwhile
        s = Status::IoError(ErrnoMessage("cannot stat", dir + "/" + ent->d_name));
        break;
      }
      if (S_ISDIR(st.st_mode)) {
        s = walk(key);
      } else if (S_ISREG(st.st_mode) && key.starts_with(pre)) {
        s = fn(key, static_cast<uint64_t>(st.st_size));
      }
    }
    ::closedir(d);
    return s;
  };
  return walk(start_dir);
}

namespace {

// ".<name>.tmp.<pid>.<n>": a temporary of Put (above).
bool IsPutTemporary(std::string_view name) {
  if (name.size() < 2 || name[0] != '.' || name == "..") return false;
  size_t tmp = name.rfind(".tmp.");
  if (tmp == std::string_view::npos || tmp == 0) return false;
  std::string_view rest = name.substr(tmp + 5);  // "<pid>.<n>"
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) return false;
  return rest.find_first_not_of("0123456789.") == std::string_view::npos &&
         rest.find('.', dot + 1) == std::string_view::npos;
}

}  // namespace

Result<uint64_t> FileStore::RemoveLeftovers(int64_t before_ns) {
  uint64_t removed = 0;
  std::vector<std::string> pending = {root_};
  while (!pending.empty()) {
    const std::string dir = std::move(pending.back());
    pending.pop_back();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return Status::IoError(ErrnoMessage("cannot list", dir));
    }
    while (struct dirent* ent = ::readdir(d)) {
      const std::string_view name = ent->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (::fstatat(dirfd(d), ent->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISDIR(st.st_mode) && name[0] != '.') {
        pending.push_back(dir + "/" + ent->d_name);
      } else if (S_ISREG(st.st_mode) && IsPutTemporary(name) &&
                 static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec <
                     before_ns &&
                 ::unlinkat(dirfd(d), ent->d_name, 0) == 0) {
        ++removed;
      }
    }
    ::closedir(d);
  }
  return removed;
}

Status FileStore::Delete(std::string_view key) {
  CUTOVER_RETURN_IF_ERROR(ValidateKey(key));
  std::string path = PathOf(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::IoError(ErrnoMessage("cannot delete", path));
  }
  return Status::Ok();
}

}  // namespace cutover
