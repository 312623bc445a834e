// Chunking and hashing in one pass: a Chunker that also computes each chunk's SHA-256 ID, and a
// file reader built on it (large sequential reads, no copy of the data).
//
// Thread-safety: a ChunkHasher is a stateful stream used by one thread at a time; distinct
// ChunkHashers and ChunkFile calls may run on distinct threads.
#ifndef CUTOVER_DATASYNC_CHUNK_HASHER_H_
#define CUTOVER_DATASYNC_CHUNK_HASHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/hash.h"

namespace cutover {

// One chunk of a stream: where it lies and its SHA-256.
struct Chunk {
  uint64_t offset = 0;
  uint64_t length = 0;
  ChunkId id{};
};

class ChunkHasher {
 public:
  // REQUIRES: params.Validate().ok()
  explicit ChunkHasher(const ChunkerParams& params) : chunker_(params) {}

  // Consumes data[0, n); appends every chunk that ends inside it.
  void Feed(const uint8_t* data, size_t n, std::vector<Chunk>* out);
  // Appends the last, partial chunk if any, and resets for a new stream.
  void Finish(std::vector<Chunk>* out);

 private:
  Chunker chunker_;
  Sha256Stream sha_;
  uint64_t chunk_start_ = 0;  // stream offset where the current chunk began
  std::vector<uint64_t> ends_;
};

// Size of each read() of ChunkFile.
inline constexpr size_t kChunkFileReadBytes = 4 << 20;

// Chunks and hashes the regular file at `path` with sequential reads of kChunkFileReadBytes.
// NotFound when it does not exist, IoError when it cannot be read.
Result<std::vector<Chunk>> ChunkFile(const std::string& path, const ChunkerParams& params);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_CHUNK_HASHER_H_
