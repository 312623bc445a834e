// Chunk IDs: SHA-256 of a chunk's bytes, and their hex form used in store keys and manifests.
//
// SHA-256 comes from OpenSSL's EVP interface here. core/sha256.h (an incremental Sha256 class,
// a one-shot Sha256Digest and hex helpers) is being written; when it lands, Sha256Stream and
// Sha256Of below become thin forwards to it, and this header keeps only the ChunkId helpers.
//
// Thread-safety: ChunkId is a value. A Sha256Stream is used by one thread at a time.
#ifndef CUTOVER_DATASYNC_HASH_H_
#define CUTOVER_DATASYNC_HASH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/status.h"

struct evp_md_ctx_st;

namespace cutover {

using ChunkId = std::array<uint8_t, 32>;

// A 128-bit XXH3 digest of a chunk's bytes. Not a name (chunks are named by their SHA-256): the
// files cache keeps one per chunk, so that a push re-reading an edited file can tell the chunks it
// pushed before, byte for byte with overwhelming probability, without computing their SHA-256
// again (XXH3 runs at memory speed, SHA-256 at about 1.5 GB/s a core). Nothing else trusts it.
using FastDigest = std::array<uint8_t, 16>;
FastDigest FastDigestOf(const void* data, size_t n);        // AVX2 where the CPU has it
FastDigest FastDigestPortable(const void* data, size_t n);  // the same digest, baseline x86-64

struct FastDigestHash {
  size_t operator()(const FastDigest& d) const noexcept {
    size_t h;
    std::memcpy(&h, d.data(), sizeof h);
    return h;
  }
};

// For unordered containers keyed by chunk: an id is a SHA-256, so any 8 of its bytes are uniform.
struct ChunkIdHash {
  size_t operator()(const ChunkId& id) const noexcept {
    size_t h;
    std::memcpy(&h, id.data(), sizeof h);
    return h;
  }
};

// Incremental SHA-256.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void Update(const void* data, size_t n);
  // Returns the digest of everything updated since construction or the last Final, and resets.
  ChunkId Final();

 private:
  evp_md_ctx_st* ctx_;
};

// One-shot SHA-256.
ChunkId Sha256Of(const void* data, size_t n);
inline ChunkId Sha256Of(std::string_view s) { return Sha256Of(s.data(), s.size()); }

// 64 lower-case hex digits.
std::string ToHex(const ChunkId& id);

// Parses 64 lower-case hex digits. InvalidArgument "bad chunk id: <why>" otherwise.
Result<ChunkId> ParseChunkId(std::string_view hex);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_HASH_H_
