#include "core/posix_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cutover {

std::string ErrnoMessage(std::string_view what, std::string_view path) {
  const int err = errno;
  std::string out(what);
  out += ' ';
  out += path;
  out += ": ";
  out += std::strerror(err);
  return out;
}

ssize_t ReadSome(int fd, void* buf, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

ssize_t PreadFull(int fd, void* buf, size_t n, uint64_t offset) {
  char* p = static_cast<char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

ssize_t WriteFull(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  size_t done = 0;
  while (done < n) {
    const ssize_t put = ::write(fd, p + done, n - done);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return -1;
    if (put == 0) {  // no progress on a non-empty write: never loop on it
      errno = EIO;
      return -1;
    }
    done += static_cast<size_t>(put);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace cutover
