// Push's second stage: one regular file read once, sequentially, cut into content-defined
// chunks (datasync/chunker.h) and each chunk named by its SHA-256, handed to a callback as it is
// cut while its bytes are still in the buffer (at most max chunk size + one 4 MiB read held).
//
//   FileChunker chunker(params);
//   CUTOVER_ASSIGN_OR_RETURN(FileChunkStats st,
//       chunker.Run(fd, path, key, previous, [&](const CutChunk& c) { return Upload(c); }));
//
// What the last push of the file cut (`previous`, from the files cache) saves work: a chunk
// whose fast digest and length match one of then keeps its SHA-256 without computing it, and
// where a chunk starts at an offset one of then started at and has its fast digest, it ends
// where that one ended, so it is not scanned for its cut (datasync/chunker.h SkipChunk). After
// the last read the file must still match `key` (size, mtime, ctime), else IoError "file changed
// while being read: PATH" and the last chunks are not handed over.
//
// Thread-safety: a FileChunker is used by one thread; its read buffer is per thread.
#ifndef CUTOVER_DATASYNC_FILE_CHUNKER_H_
#define CUTOVER_DATASYNC_FILE_CHUNKER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/hash.h"
#include "datasync/manifest.h"
#include "datasync/state.h"

namespace cutover {

// The chunks of a file as the last push cut them.
struct PreviousChunks {
  // fast digest -> (length, id)
  std::unordered_map<FastDigest, std::pair<uint64_t, ChunkId>, FastDigestHash> by_digest;
  struct At {
    uint64_t length;
    FastDigest fast;
    ChunkId id;
    bool last;  // the file's last chunk then: it ended at the end of the file, not at a cut
  };
  std::unordered_map<uint64_t, At> by_offset;  // by start offset in the file
};

// One chunk as it is cut. `bytes` is valid only during the callback.
struct CutChunk {
  ChunkId id;
  uint64_t length = 0;
  FastDigest fast;
  std::string_view bytes;
  // The file is this one chunk and it is below the chunker's min size: a pack takes it (the
  // caller does not upload it alone).
  bool small_file = false;
};

struct FileChunkStats {
  uint64_t hashed_bytes = 0;   // SHA-256'd (the rest: known by fast digest)
  uint64_t scanned_bytes = 0;  // looked through for cut points (the rest: skipped chunks)
};

class FileChunker {
 public:
  explicit FileChunker(const ChunkerParams& params) : params_(params) {}

  // Reads the open file `fd` (named `path` in messages) to its end and calls `emit` for each
  // chunk in file order. Stops at the first error of a read or of `emit`.
  Result<FileChunkStats> Run(int fd, const std::string& path, const FileStatKey& key,
                             const PreviousChunks& previous,
                             const std::function<Status(const CutChunk&)>& emit) const;

 private:
  ChunkerParams params_;
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_FILE_CHUNKER_H_
