#include "datasync/chunk_hasher.h"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/posix_io.h"

namespace cutover {

void ChunkHasher::Feed(const uint8_t* data, size_t n, std::vector<Chunk>* out) {
  const uint64_t base = chunker_.offset();
  ends_.clear();
  chunker_.Feed(data, n, &ends_);
  uint64_t done = base;  // stream offset of data already given to sha_
  for (uint64_t end : ends_) {
    sha_.Update(data + (done - base), static_cast<size_t>(end - done));
    out->push_back(Chunk{chunk_start_, end - chunk_start_, sha_.Final()});
    chunk_start_ = end;
    done = end;
  }
  sha_.Update(data + (done - base), static_cast<size_t>(base + n - done));
}

void ChunkHasher::Finish(std::vector<Chunk>* out) {
  ends_.clear();
  chunker_.Finish(&ends_);
  if (!ends_.empty()) out->push_back(Chunk{chunk_start_, ends_[0] - chunk_start_, sha_.Final()});
  chunk_start_ = 0;
  (void)sha_.Final();  // reset
}

Result<std::vector<Chunk>> ChunkFile(const std::string& path, const ChunkerParams& params) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::string msg = ErrnoMessage("cannot open", path);
    if (errno == ENOENT) return Status::NotFound(msg);
    return Status::IoError(msg);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kChunkFileReadBytes]);
  ChunkHasher hasher(params);
  std::vector<Chunk> chunks;
  for (;;) {
    ssize_t got = ReadSome(fd, buf.get(), kChunkFileReadBytes);
    if (got < 0) {
      Status s = Status::IoError(ErrnoMessage("cannot read", path));
      ::close(fd);
      return s;
    }
    if (got == 0) break;
    hasher.Feed(buf.get(), static_cast<size_t>(got), &chunks);
  }
  ::close(fd);
  hasher.Finish(&chunks);
  return chunks;
}

}  // namespace cutover
