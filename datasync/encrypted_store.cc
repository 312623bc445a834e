#include "datasync/encrypted_store.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "core/posix_io.h"
#include "core/sha256.h"

namespace cutover {
namespace {

constexpr size_t kNonceSize = 12;
constexpr size_t kTagSize = 16;
// The largest key file read: anything longer is refused unread.
constexpr size_t kMaxKeyFile = 66;
// Ranged reads: decrypted objects kept for the next ranged read of the same object.
constexpr uint64_t kCacheBytes = 64ull << 20;
constexpr size_t kCacheObjects = 256;

// The labels of the sub-keys (bump the version in a label to change what it derives).
constexpr char kCipherLabel[] = "cutover datasync aes-256-gcm key v1";
constexpr char kNameLabel[] = "cutover datasync object name key v1";
constexpr char kCheckLabel[] = "cutover datasync key check v1";

// EVP takes int lengths: feed large objects in pieces.
constexpr size_t kPiece = 1u << 30;

std::string_view AsView(const std::array<uint8_t, 32>& a) {
  return std::string_view(reinterpret_cast<const char*>(a.data()), a.size());
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct CipherCtx {
  CipherCtx() : ctx(EVP_CIPHER_CTX_new()) {}
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
  EVP_CIPHER_CTX* ctx;
};

class EncryptedStore : public Store {
 public:
  EncryptedStore(std::unique_ptr<Store> inner, const EncryptionKey& key)
      : inner_(std::move(inner)),
        cipher_key_(key.cipher_key()),
        names_(key.name_key()),
        encryption_{key.file(), key.key_check()} {}

  ~EncryptedStore() override { OPENSSL_cleanse(cipher_key_.data(), cipher_key_.size()); }

  std::string Url() const override { return inner_->Url(); }

  Status Put(std::string_view key, std::string_view bytes) override {
    if (Plain(key)) return inner_->Put(key, bytes);
    CUTOVER_ASSIGN_OR_RETURN(std::string sealed, SealObject(cipher_key_, key, bytes));
    return inner_->Put(key, sealed);
  }

  Result<std::string> Get(std::string_view key) override {
    CUTOVER_ASSIGN_OR_RETURN(std::string sealed, inner_->Get(key));
    if (Plain(key)) return sealed;
    return OpenObject(cipher_key_, key, sealed);
  }

  Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) override {
    if (Plain(key)) return inner_->GetRange(key, offset, length);
    CUTOVER_ASSIGN_OR_RETURN(std::shared_ptr<const std::string> whole, Whole(key));
    if (offset > whole->size() || length > whole->size() - offset) {
      return Status::Corruption("object " + std::string(key) + " holds " +
                                std::to_string(whole->size()) + " bytes, fewer than offset " +
                                std::to_string(offset) + " + length " + std::to_string(length));
    }
    return whole->substr(offset, length);
  }

  Result<uint64_t> RemoveLeftovers(int64_t before_ns) override {
    return inner_->RemoveLeftovers(before_ns);
  }

  Result<uint64_t> Head(std::string_view key) override {
    CUTOVER_ASSIGN_OR_RETURN(uint64_t size, inner_->Head(key));
    if (Plain(key)) return size;
    if (size < kEncryptionOverhead) {
      return Status::Corruption("corrupt or not encrypted with this key: " + std::string(key));
    }
    return size - kEncryptionOverhead;
  }

  Status List(std::string_view prefix,
              const std::function<Status(std::string_view key, uint64_t size)>& fn) override {
    return inner_->List(prefix, [&](std::string_view key, uint64_t size) {
      if (!Plain(key)) size = size >= kEncryptionOverhead ? size - kEncryptionOverhead : 0;
      return fn(key, size);
    });
  }

  Status Delete(std::string_view key) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = cache_.find(std::string(key));
      if (it != cache_.end() && it->second->done) Drop(it);
    }
    return inner_->Delete(key);
  }

  const ObjectNames& Names() const override { return names_; }
  const StoreEncryption* Encryption() const override { return &encryption_; }

 private:
  // One decrypted object of the ranged-read cache, or its fetch in progress.
  struct Slot {
    bool done = false;
    Status status;
    std::shared_ptr<const std::string> bytes;
    uint64_t last_use = 0;
  };
  using Cache = std::map<std::string, std::shared_ptr<Slot>, std::less<>>;

  // The config stays readable by every cutover, so it can say the store is encrypted.
  static bool Plain(std::string_view key) { return key == kConfigKey; }

  // The whole decrypted object, fetched once however many threads ask for it at once.
  Result<std::shared_ptr<const std::string>> Whole(std::string_view key) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> l(mu_);
      auto it = cache_.find(key);
      if (it != cache_.end()) {
        slot = it->second;
        cv_.wait(l, [&] { return slot->done; });
        if (!slot->status.ok()) return slot->status;
        slot->last_use = ++tick_;
        return slot->bytes;
      }
      slot = std::make_shared<Slot>();
      cache_.emplace(std::string(key), slot);
    }
    Result<std::string> got = Get(key);
    {
      std::lock_guard<std::mutex> l(mu_);
      slot->done = true;
      slot->last_use = ++tick_;
      auto it = cache_.find(key);
      if (got.ok()) {
        slot->bytes = std::make_shared<const std::string>(std::move(got).value());
        bytes_ += slot->bytes->size();
        Evict(slot.get());
      } else {
        slot->status = got.status();
        if (it != cache_.end() && it->second == slot) cache_.erase(it);  // the next call retries
      }
    }
    cv_.notify_all();
    if (!slot->status.ok()) return slot->status;
    return slot->bytes;
  }

  // REQUIRES: mu_ held. Removes the least recently used finished objects, but `keep`, until the
  // cache is within its bounds.
  void Evict(const Slot* keep) {
    while (bytes_ > kCacheBytes || cache_.size() > kCacheObjects) {
      auto victim = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        if (!it->second->done || it->second.get() == keep) continue;
        if (victim == cache_.end() || it->second->last_use < victim->second->last_use) victim = it;
      }
      if (victim == cache_.end()) return;
      Drop(victim);
    }
  }

  // REQUIRES: mu_ held; the slot is done.
  void Drop(Cache::iterator it) {
    if (it->second->bytes != nullptr) bytes_ -= it->second->bytes->size();
    cache_.erase(it);
  }

  std::unique_ptr<Store> inner_;
  std::array<uint8_t, 32> cipher_key_;
  ObjectNames names_;
  StoreEncryption encryption_;

  std::mutex mu_;
  std::condition_variable cv_;
  Cache cache_;
  uint64_t bytes_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace

EncryptionKey::~EncryptionKey() {
  OPENSSL_cleanse(cipher_key_.data(), cipher_key_.size());
  OPENSSL_cleanse(name_key_.data(), name_key_.size());
}

Result<EncryptionKey> EncryptionKey::Parse(std::string_view contents, std::string_view path) {
  const std::string where = "--encrypt " + std::string(path);
  std::array<uint8_t, 32> master{};
  std::string_view hex = contents;
  if (hex.size() == 65 && hex.back() == '\n') hex.remove_suffix(1);
  if (contents.size() == master.size()) {
    std::memcpy(master.data(), contents.data(), master.size());
  } else if (hex.size() == 2 * master.size()) {
    for (size_t i = 0; i < master.size(); ++i) {
      int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
      if (hi < 0 || lo < 0) {
        OPENSSL_cleanse(master.data(), master.size());
        return Status::InvalidArgument(where +
                                       ": not a key: 64 characters, but not all hex "
                                       "digits (expected 32 random bytes or 64 hex "
                                       "digits)");
      }
      master[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
  } else {
    return Status::InvalidArgument(where + ": not a key: " + std::to_string(contents.size()) +
                                   " bytes (expected 32 random bytes or 64 hex digits; make one "
                                   "with: head -c 32 /dev/urandom > FILE)");
  }
  bool zero = true;
  for (uint8_t b : master) zero = zero && b == 0;
  if (zero) {
    return Status::InvalidArgument(where +
                                   ": not a key: all zero bytes (make one with: "
                                   "head -c 32 /dev/urandom > FILE)");
  }
  EncryptionKey key;
  key.file_ = std::string(path);
  key.cipher_key_ = HmacSha256(AsView(master), kCipherLabel);
  key.name_key_ = HmacSha256(AsView(master), kNameLabel);
  std::array<uint8_t, 32> check = HmacSha256(AsView(master), kCheckLabel);
  key.key_check_ = HexEncode(std::span<const uint8_t>(check.data(), 16));
  OPENSSL_cleanse(check.data(), check.size());
  OPENSSL_cleanse(master.data(), master.size());
  return key;
}

Result<EncryptionKey> EncryptionKey::FromFile(const std::string& path) {
  const std::string where = "--encrypt " + path;
  // Anything but a regular file is refused before it is opened (opening a FIFO blocks until a
  // writer comes); O_NONBLOCK keeps the open from blocking should it be swapped for one between
  // the stat and the open, and the fstat then refuses it.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(where + ": not a regular file");
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::InvalidArgument(where + ": cannot open: " + std::strerror(errno));
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(where + ": not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Status::InvalidArgument(where + ": group or others may access it (mode " + mode +
                                   "); run chmod 600 " + path);
  }
  std::string contents(kMaxKeyFile + 1, '\0');
  size_t got = 0;
  while (got < contents.size()) {
    ssize_t n = ReadSome(fd, contents.data() + got, contents.size() - got);
    if (n < 0) {
      int err = errno;
      ::close(fd);
      OPENSSL_cleanse(contents.data(), contents.size());
      return Status::InvalidArgument(where + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  Result<EncryptionKey> key =
      got > kMaxKeyFile
          ? Result<EncryptionKey>(Status::InvalidArgument(
                where + ": not a key: over " + std::to_string(kMaxKeyFile) +
                " bytes (expected 32 random bytes or 64 hex digits; make one with: head -c 32 "
                "/dev/urandom > FILE)"))
          : Parse(std::string_view(contents.data(), got), path);
  OPENSSL_cleanse(contents.data(), contents.size());
  return key;
}

namespace {

// Sets `c` up for AES-256-GCM, encrypting (1) or decrypting (0), under `key` and `nonce` with
// `aad` bound. False when OpenSSL refuses.
bool GcmSetup(CipherCtx& c, int encrypt, const std::array<uint8_t, 32>& key,
              const unsigned char* nonce, std::string_view aad) {
  int len = 0;
  return c.ctx != nullptr &&
         EVP_CipherInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr, encrypt) == 1 &&
         EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceSize, nullptr) == 1 &&
         EVP_CipherInit_ex(c.ctx, nullptr, nullptr, key.data(), nonce, encrypt) == 1 &&
         EVP_CipherUpdate(c.ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                          static_cast<int>(aad.size())) == 1;
}

// Runs in[0, n) through `c` into `out` (the same length: GCM is a stream mode), in pieces of
// at most kPiece since OpenSSL takes int lengths. False when OpenSSL refuses.
bool GcmRun(CipherCtx& c, const unsigned char* in, size_t n, unsigned char* out) {
  for (size_t done = 0; done < n;) {
    const size_t piece = std::min(kPiece, n - done);
    int len = 0;
    if (EVP_CipherUpdate(c.ctx, out + done, &len, in + done, static_cast<int>(piece)) != 1) {
      return false;
    }
    done += piece;
  }
  return true;
}

}  // namespace

Result<std::string> SealObject(const std::array<uint8_t, 32>& key, std::string_view aad,
                               std::string_view plaintext) {
  std::string out(kNonceSize + plaintext.size() + kTagSize, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(o, kNonceSize) != 1) return Status(Code::kInternal, "encrypt: no random nonce");
  CipherCtx c;
  if (!GcmSetup(c, 1, key, o, aad)) {
    return Status(Code::kInternal, "encrypt: AES-256-GCM setup failed");
  }
  unsigned char* dst = o + kNonceSize;
  int len = 0;
  if (!GcmRun(c, reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(), dst) ||
      EVP_EncryptFinal_ex(c.ctx, dst + plaintext.size(), &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagSize, dst + plaintext.size()) != 1) {
    return Status(Code::kInternal, "encrypt: AES-256-GCM failed");
  }
  return out;
}

Result<std::string> OpenObject(const std::array<uint8_t, 32>& key, std::string_view aad,
                               std::string_view sealed) {
  auto bad = [&] {
    return Status::Corruption("corrupt or not encrypted with this key: " + std::string(aad));
  };
  if (sealed.size() < kNonceSize + kTagSize) return bad();
  const auto* in = reinterpret_cast<const unsigned char*>(sealed.data());
  const size_t n_plain = sealed.size() - kNonceSize - kTagSize;
  std::string out(n_plain, '\0');
  CipherCtx c;
  if (!GcmSetup(c, 0, key, in, aad)) {
    return Status(Code::kInternal, "decrypt: AES-256-GCM setup failed");
  }
  auto* dst = reinterpret_cast<unsigned char*>(out.data());
  if (!GcmRun(c, in + kNonceSize, n_plain, dst)) return bad();
  unsigned char tag[kTagSize];
  std::memcpy(tag, in + kNonceSize + n_plain, kTagSize);
  int len = 0;
  if (EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1 ||
      EVP_DecryptFinal_ex(c.ctx, dst + n_plain, &len) != 1) {
    OPENSSL_cleanse(out.data(), out.size());
    return bad();
  }
  return out;
}

std::unique_ptr<Store> EncryptStore(std::unique_ptr<Store> inner, const EncryptionKey& key) {
  return std::make_unique<EncryptedStore>(std::move(inner), key);
}

}  // namespace cutover
