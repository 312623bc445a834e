#include "datasync/extras.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/posix_io.h"

namespace cutover {
namespace {

// The names in the open directory `fd` (closed by the caller), sorted.
Result<std::vector<std::string>> Names(int fd, const std::string& where) {
  int dup = ::dup(fd);
  if (dup < 0) return Status::IoError(ErrnoMessage("cannot list", where));
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return Status::IoError(ErrnoMessage("cannot list", where));
  }
  std::vector<std::string> names;
  while (struct dirent* ent = ::readdir(d)) {
    if (std::strcmp(ent->d_name, ".") != 0 && std::strcmp(ent->d_name, "..") != 0) {
      names.emplace_back(ent->d_name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// Removes `name` in directory `parent` and, for a directory, all it holds (never following a
// symlink: it is unlinked itself).
Status RemoveAt(int parent, const std::string& name, const std::string& where) {
  struct stat st;
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return errno == ENOENT ? Status::Ok() : Status::IoError(ErrnoMessage("cannot stat", where));
  }
  if (S_ISDIR(st.st_mode)) {
    int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Status::IoError(ErrnoMessage("cannot open", where));
    Result<std::vector<std::string>> names = Names(fd, where);
    Status s = names.status();
    for (size_t i = 0; s.ok() && i < names->size(); ++i) {
      s = RemoveAt(fd, (*names)[i], where + "/" + (*names)[i]);
    }
    ::close(fd);
    CUTOVER_RETURN_IF_ERROR(s);
  }
  if (::unlinkat(parent, name.c_str(), S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
      errno != ENOENT) {
    return Status::IoError(ErrnoMessage("cannot remove", where));
  }
  return Status::Ok();
}

Status Walk(int fd, const std::string& dest, const std::string& rel,
            const std::function<bool(const std::string&)>& named,
            const std::function<void(const std::string&, bool)>& fn, bool remove) {
  const std::string where = rel.empty() ? dest : dest + "/" + rel;
  CUTOVER_ASSIGN_OR_RETURN(std::vector<std::string> names, Names(fd, where));
  for (const std::string& name : names) {
    const std::string path = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return Status::IoError(ErrnoMessage("cannot stat", dest + "/" + path));
    }
    const bool is_dir = S_ISDIR(st.st_mode);
    if (!named(path)) {
      fn(path, is_dir);
      if (remove) CUTOVER_RETURN_IF_ERROR(RemoveAt(fd, name, dest + "/" + path));
      continue;
    }
    if (!is_dir) continue;
    int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return Status::IoError(ErrnoMessage("cannot open", dest + "/" + path));
    Status s = Walk(sub, dest, path, named, fn, remove);
    ::close(sub);
    CUTOVER_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

}  // namespace

Status ForEachExtra(const std::string& dest, const std::function<bool(const std::string&)>& named,
                    const std::function<void(const std::string& path, bool is_dir)>& fn,
                    bool remove) {
  int fd = ::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Ok();  // nothing there yet (a dry run)
    return Status::IoError(ErrnoMessage("cannot open", dest));
  }
  Status s = Walk(fd, dest, "", named, fn, remove);
  ::close(fd);
  return s;
}

}  // namespace cutover
