#include "datasync/hash.h"

#include <cstdlib>
#include <cstring>

#include <openssl/evp.h>
// Header-only: the digest is compiled in, no libxxhash at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/sha256.h"

namespace cutover {

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) std::abort();
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(ctx_); }

void Sha256Stream::Update(const void* data, size_t n) {
  // EVP_DigestUpdate on an initialized SHA-256 context cannot fail but for memory corruption.
  if (n > 0 && EVP_DigestUpdate(ctx_, data, n) != 1) std::abort();
}

ChunkId Sha256Stream::Final() {
  ChunkId id{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, id.data(), &len) != 1 || len != id.size() ||
      EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    std::abort();
  }
  return id;
}

#if defined(CUTOVER_FAST_DIGEST_AVX2)
namespace internal {
void FastDigestAvx2(const void* data, size_t n, uint8_t out[16]);  // fast_digest_avx2.cc
}  // namespace internal
#endif

FastDigest FastDigestOf(const void* data, size_t n) {
#if defined(CUTOVER_FAST_DIGEST_AVX2)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    FastDigest d;
    internal::FastDigestAvx2(data, n, d.data());
    return d;
  }
#endif
  return FastDigestPortable(data, n);
}

FastDigest FastDigestPortable(const void* data, size_t n) {
  const XXH128_hash_t h = XXH3_128bits(data, n);
  FastDigest d;
  std::memcpy(d.data(), &h.low64, 8);
  std::memcpy(d.data() + 8, &h.high64, 8);
  return d;
}

ChunkId Sha256Of(const void* data, size_t n) {
  ChunkId id{};
  unsigned int len = 0;
  if (EVP_Digest(data, n, id.data(), &len, EVP_sha256(), nullptr) != 1) std::abort();
  return id;
}

std::string ToHex(const ChunkId& id) { return HexEncode(std::span<const uint8_t>(id)); }

Result<ChunkId> ParseChunkId(std::string_view hex) {
  if (hex.size() != 64) {
    return Status::InvalidArgument("bad chunk id: " + std::to_string(hex.size()) +
                                   " characters, want 64");
  }
  ChunkId id{};
  for (size_t i = 0; i < 64; ++i) {
    char c = hex[i];
    int v;
    if (c >= '0' && c <= '9') {
      v = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      v = c - 'a' + 10;
    } else {
      return Status::InvalidArgument("bad chunk id: not lower-case hex at character " +
                                     std::to_string(i));
    }
    id[i / 2] = static_cast<uint8_t>(id[i / 2] | (i % 2 == 0 ? v << 4 : v));
  }
  return id;
}

}  // namespace cutover
