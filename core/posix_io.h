// The POSIX read and write loops every tool needs, written once: retried on EINTR, short
// transfers continued, errors left in errno for the caller's message (ErrnoMessage).
//
// Thread-safety: each call touches only its own arguments and errno (thread-local).
#ifndef CUTOVER_CORE_POSIX_IO_H_
#define CUTOVER_CORE_POSIX_IO_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cutover {

// "WHAT PATH: <text of errno>", with errno as it is at the call ("cannot read /a/b: Permission
// denied").
std::string ErrnoMessage(std::string_view what, std::string_view path);

// ::read, retried while it fails with EINTR: the count (0 at the end), or -1 with errno set.
ssize_t ReadSome(int fd, void* buf, size_t n);

// Reads n bytes at `offset` (pread, so the file position is untouched), continuing short reads
// and retrying EINTR: the count, below n only at the end of the file, or -1 with errno set.
ssize_t PreadFull(int fd, void* buf, size_t n, uint64_t offset);

// Writes all n bytes, continuing short writes and retrying EINTR: n, or -1 with errno set.
ssize_t WriteFull(int fd, const void* buf, size_t n);

}  // namespace cutover

#endif  // CUTOVER_CORE_POSIX_IO_H_
