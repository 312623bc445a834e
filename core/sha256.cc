#include "core/sha256.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace cutover {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "cutover: fatal: OpenSSL %s failed\n", what);
  std::abort();
}

// SHA-256 fetched once from the default provider: an explicitly fetched EVP_MD skips the
// per-initialisation lookup the implicit EVP_sha256() needs. Never freed (process lifetime).
const EVP_MD* Md() {
  static const EVP_MD* md = [] {
    const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return m != nullptr ? m : EVP_sha256();
  }();
  return md;
}

void Init(EVP_MD_CTX* ctx) {
  if (EVP_DigestInit_ex(ctx, Md(), nullptr) != 1) Die("EVP_DigestInit_ex");
}

}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr) Die("EVP_MD_CTX_new");
  Init(ctx_);
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256::Sha256(Sha256&& other) noexcept : ctx_(other.ctx_) {
  other.ctx_ = EVP_MD_CTX_new();
  if (other.ctx_ == nullptr) Die("EVP_MD_CTX_new");
  Init(other.ctx_);
}

Sha256& Sha256::operator=(Sha256&& other) noexcept {
  if (this != &other) std::swap(ctx_, other.ctx_);
  other.Reset();
  return *this;
}

void Sha256::Update(const void* data, size_t n) {
  if (n == 0) return;
  if (EVP_DigestUpdate(ctx_, data, n) != 1) Die("EVP_DigestUpdate");
}

Sha256Hash Sha256::Final() {
  Sha256Hash out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != kSha256Size) {
    Die("EVP_DigestFinal_ex");
  }
  // Re-initialising keeps the provider context: no allocation per message.
  Init(ctx_);
  return out;
}

void Sha256::Reset() {
  // EVP_MD_CTX_reset would free the provider context; re-initialising is enough to discard
  // the message and cheaper.
  Init(ctx_);
}

Sha256Hash Sha256Digest(const void* data, size_t n) {
  thread_local Sha256 h;
  h.Update(data, n);
  return h.Final();
}

std::string Sha256Hex(std::string_view data) { return HexEncode(Sha256Digest(data)); }

Sha256Hash HmacSha256(std::string_view key, std::string_view data) {
  Sha256Hash out;
  unsigned int len = 0;
  // HMAC() requires a non-null key pointer even for an empty key.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  if (HMAC(Md(), k, static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
           &len) == nullptr ||
      len != kSha256Size) {
    Die("HMAC");
  }
  return out;
}

std::string HexEncode(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string Printable(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string(1, c);
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02x", u);
  return buf;
}

}  // namespace

Result<std::vector<uint8_t>> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return Status::InvalidArgument("bad hex: odd length " + std::to_string(hex.size()));
  }
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); ++i) {
    int v = HexValue(hex[i]);
    if (v < 0) {
      return Status::InvalidArgument("bad hex: invalid character '" + Printable(hex[i]) + "' at " +
                                     std::to_string(i));
    }
    if (i % 2 == 0) {
      out[i / 2] = static_cast<uint8_t>(v << 4);
    } else {
      out[i / 2] |= static_cast<uint8_t>(v);
    }
  }
  return out;
}

Result<Sha256Hash> Sha256FromHex(std::string_view hex) {
  if (hex.size() != 2 * kSha256Size) {
    return Status::InvalidArgument("bad SHA-256 hex: " + std::to_string(hex.size()) +
                                   " characters, expected 64");
  }
  CUTOVER_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, HexDecode(hex));
  Sha256Hash out;
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return out;
}

}  // namespace cutover
