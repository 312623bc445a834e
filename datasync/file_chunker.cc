#include "datasync/file_chunker.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/file_system.h"
#include "core/posix_io.h"
#include "datasync/chunk_hasher.h"

namespace cutover {
Result<FileChunkStats> FileChunker::Run(int fd, const std::string& path, const FileStatKey& key,
                                        const PreviousChunks& previous,
                                        const std::function<Status(const CutChunk&)>& emit) const {
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  FileChunkStats stats;
  Chunker chunker(params_);
  std::vector<uint64_t> ends;  // stream offsets where cut chunks end
  // The file's bytes from the start of the current chunk: pending[base, held), of which the
  // chunker has consumed pending[base, fed). A read first moves them to the front; fewer than
  // max size bytes are there then, so it always fits. One buffer per worker thread, kept from
  // file to file and never zero-filled (pages are touched only as far as files reach).
  thread_local std::unique_ptr<char[]> buffer;
  thread_local size_t capacity = 0;
  if (capacity < params_.max_size + kChunkFileReadBytes) {
    capacity = params_.max_size + kChunkFileReadBytes;
    buffer.reset(new char[capacity]);
  }
  char* const pending = buffer.get();
  size_t base = 0, held = 0, fed = 0;
  uint64_t pending_offset = 0, read_total = 0, emitted = 0;
  bool eof = false;
  auto read_more = [&]() -> Status {
    if (base > 0) {
      std::memmove(pending, pending + base, held - base);
      held -= base;
      fed -= base;
      base = 0;
    }
    const ssize_t got = ReadSome(fd, pending + held, kChunkFileReadBytes);
    if (got < 0) return Status::IoError(ErrnoMessage("cannot read", path));
    if (got == 0) eof = true;
    held += static_cast<size_t>(got);
    read_total += static_cast<uint64_t>(got);
    return Status::Ok();
  };
  // Names the chunk pending[base, base + length) (`known` when a previous chunk had its bytes),
  // hands it over, then drops its bytes.
  auto take_one = [&](uint64_t length, const FastDigest& fast, const ChunkId* known,
                      bool small_file) -> Status {
    CutChunk c;
    c.bytes = std::string_view(pending + base, length);
    c.length = length;
    c.fast = fast;
    c.small_file = small_file;
    if (known != nullptr) {
      c.id = *known;
    } else if (auto k = previous.by_digest.find(fast);
               k != previous.by_digest.end() && k->second.first == length) {
      c.id = k->second.second;
    } else {
      c.id = Sha256Of(c.bytes);
      stats.hashed_bytes += length;
    }
    CUTOVER_RETURN_IF_ERROR(emit(c));
    ++emitted;
    base += length;
    pending_offset += length;
    return Status::Ok();
  };
  auto take = [&](bool small_file) -> Status {
    for (uint64_t end : ends) {
      const uint64_t length = end - pending_offset;
      CUTOVER_RETURN_IF_ERROR(
          take_one(length, FastDigestOf(pending + base, length), nullptr, small_file));
    }
    ends.clear();
    return Status::Ok();
  };
  for (;;) {
    // At a chunk start where the last push had a chunk start too: if the bytes are that chunk's,
    // so is the cut.
    auto p = chunker.at_chunk_start() ? previous.by_offset.find(pending_offset)
                                      : previous.by_offset.end();
    if (p != previous.by_offset.end() &&
        (!p->second.last || pending_offset + p->second.length == key.size)) {
      while (!eof && held - base < p->second.length) CUTOVER_RETURN_IF_ERROR(read_more());
      if (held - base >= p->second.length) {
        const FastDigest fast = FastDigestOf(pending + base, p->second.length);
        if (fast == p->second.fast) {
          chunker.SkipChunk(p->second.length, &ends);
          ends.clear();
          fed = base + p->second.length;
          CUTOVER_RETURN_IF_ERROR(take_one(p->second.length, fast, &p->second.id, false));
          continue;
        }
      }
    }
    if (fed == held) {
      if (eof) break;
      CUTOVER_RETURN_IF_ERROR(read_more());
      continue;
    }
    const size_t used =
        chunker.FeedToCut(reinterpret_cast<const uint8_t*>(pending + fed), held - fed, &ends);
    fed += used;
    stats.scanned_bytes += used;
    CUTOVER_RETURN_IF_ERROR(take(/*small_file=*/false));
  }
  chunker.Finish(&ends);
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IoError(ErrnoMessage("cannot stat", path));
  const FileInfo now = FileInfoFromStat(st);
  if (read_total != key.size || now.size != key.size || now.mtime_ns != key.mtime_ns ||
      now.ctime_ns != key.ctime_ns) {
    return Status::IoError("file changed while being read: " + path);
  }
  const bool small =
      emitted == 0 && ends.size() == 1 && ends[0] - pending_offset < params_.min_size;
  CUTOVER_RETURN_IF_ERROR(take(small));
  return stats;
}

}  // namespace cutover
