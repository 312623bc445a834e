#include "core/file_util.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/failpoint.h"
#include "core/posix_io.h"

namespace cutover {
namespace {

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound(ErrnoMessage("cannot open", path));
    return Status::IoError(ErrnoMessage("cannot open", path));
  }
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ReadSome(fd, buf, sizeof buf);
    if (n < 0) {
      Status s = Status::IoError(ErrnoMessage("cannot read", path));
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::IoError(ErrnoMessage("cannot create", tmp));
  if (WriteFull(fd, data.data(), data.size()) < 0) {
    Status s = Status::IoError(ErrnoMessage("cannot write", tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  CUTOVER_FAILPOINT("file.write_atomic.before_fsync");
  if (::fsync(fd) != 0) {
    Status s = Status::IoError(ErrnoMessage("cannot fsync", tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::IoError(ErrnoMessage("cannot rename into", path));
    ::unlink(tmp.c_str());
    return s;
  }
  int dfd = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& dir, mode_t mode) {
  if (dir.empty()) return Status::Ok();
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST) {
      return Status::IoError(ErrnoMessage("cannot create directory", partial));
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::IoError("not a directory: " + dir);
  }
  return Status::Ok();
}

std::string ExpandHome(const std::string& path) {
  if (path.rfind("~/", 0) != 0) return path;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return path;
  return std::string(home) + path.substr(1);
}

}  // namespace cutover
