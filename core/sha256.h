// SHA-256 and HMAC-SHA-256 through OpenSSL's libcrypto (EVP), which uses the CPU's SHA extensions
// (SHA-NI, ARMv8 crypto) where present, plus hex encoding of digests.
//
//   Sha256 h;  h.Update(a);  h.Update(b);  Sha256Hash d = h.Final();   // incremental
//   Sha256Hash d = Sha256Digest(data);                                 // one-shot
//
// The digest algorithm is fetched from the default provider once per process; an Sha256 object
// keeps its EVP context across Final() calls, so hashing many small inputs with one object costs
// no allocation. Allocation failure inside OpenSSL aborts the process (as operator new would).
//
// Thread-safety: the free functions are thread-safe (one-shot hashing uses a per-thread context).
// An Sha256 object must not be used from two threads at once.
#ifndef CUTOVER_CORE_SHA256_H_
#define CUTOVER_CORE_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace cutover {

constexpr size_t kSha256Size = 32;
using Sha256Hash = std::array<uint8_t, kSha256Size>;

// Incremental SHA-256.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&& other) noexcept;
  Sha256& operator=(Sha256&& other) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Appends `n` bytes at `data` to the message.
  void Update(const void* data, size_t n);
  void Update(std::string_view data) { Update(data.data(), data.size()); }

  // Returns the digest of everything appended since construction or the last Final()/Reset(),
  // and starts a new, empty message.
  Sha256Hash Final();

  // Discards what was appended and starts a new, empty message.
  void Reset();

 private:
  EVP_MD_CTX* ctx_;
};

// The SHA-256 digest of `n` bytes at `data`.
Sha256Hash Sha256Digest(const void* data, size_t n);
inline Sha256Hash Sha256Digest(std::string_view data) {
  return Sha256Digest(data.data(), data.size());
}

// Lower-case hex of SHA-256(data): 64 characters.
std::string Sha256Hex(std::string_view data);

// HMAC-SHA-256(key, data) (RFC 2104; keys of any length).
Sha256Hash HmacSha256(std::string_view key, std::string_view data);

// Lower-case hex of `bytes`.
std::string HexEncode(std::span<const uint8_t> bytes);
inline std::string HexEncode(const Sha256Hash& h) { return HexEncode(std::span<const uint8_t>(h)); }
inline std::string HexEncode(std::string_view bytes) {
  return HexEncode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            bytes.size()));
}

// Decodes hex (either case). InvalidArgument: "bad hex: odd length 3" or
// "bad hex: invalid character 'g' at 4".
Result<std::vector<uint8_t>> HexDecode(std::string_view hex);

// Decodes a 64-character hex SHA-256 digest. InvalidArgument: as HexDecode, or
// "bad SHA-256 hex: 62 characters, expected 64".
Result<Sha256Hash> Sha256FromHex(std::string_view hex);

}  // namespace cutover

#endif  // CUTOVER_CORE_SHA256_H_
