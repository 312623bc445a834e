// Client-side encryption of a datasync store (`--encrypt KEYFILE`): the store learns neither the
// content nor the content hashes of what is pushed to it.
//
// Design.
//   Key file: exactly 32 random bytes, or 64 hex digits with an optional trailing newline; it
//   must be a regular file with no group or other permission bits (chmod 600). Nothing else is
//   accepted, and no message ever echoes its content.
//   Sub-keys: HMAC-SHA-256(master, label) with one label each for the AES-256-GCM key, the
//   object-name key and the key check. The master key is wiped once they are derived.
//   Config: the config object stays plaintext and records "encryption": true and "key_check":
//   the first 16 bytes (hex) of the key-check sub-key, so a wrong key, an encrypted store used
//   without --encrypt and a plain store used with it are refused before anything is read or
//   written (datasync/store_config.h).
//   Names: a chunk or pack is stored under the same layout as a plain store, but over
//   HMAC-SHA-256(name key, SHA-256 id) instead of the SHA-256 itself (ObjectNames, store.h).
//   Manifests keep the SHA-256 ids (they are encrypted), so pull's reuse of DEST's chunks, the
//   files cache and verify's hash checks work as on a plain store; one key gives a chunk one
//   name, so dedup works as before.
//   Bytes: every object but the config is stored as nonce(12, random) || ciphertext || tag(16),
//   AES-256-GCM under the object's key as associated data (an object copied to another key
//   fails to decrypt). A failed decryption is Corruption "corrupt or not encrypted with this
//   key: <object key>", which pull reports as a corrupt chunk (exit 1) and verify as a failure.
//   Random 96-bit nonces keep one key safe for about 2^32 objects (4 PiB of 1 MiB chunks).
//   What the store still sees: object sizes (plaintext + 28 bytes), snapshot names, the number
//   of objects and when they are written, and which objects two snapshots share.
//   Ranged reads (packs of small files): the whole object is fetched and decrypted, and kept in
//   a small cache (64 MiB, 256 objects) shared by all threads, so a pack is fetched once while
//   its files are restored, not once per file.
//
// Thread-safety: EncryptionKey is immutable; the store returned by EncryptStore is as
// thread-safe as the store it wraps.
#ifndef CUTOVER_DATASYNC_ENCRYPTED_STORE_H_
#define CUTOVER_DATASYNC_ENCRYPTED_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

// Bytes an encrypted object adds to its plaintext: the nonce and the tag.
inline constexpr uint64_t kEncryptionOverhead = 12 + 16;

// The keys derived from one key file. Never printed, logged or stored (but the key check).
class EncryptionKey {
 public:
  // Reads and checks the key file at `path`. InvalidArgument, one line naming `path`, when it
  // cannot be read, is not a regular file, has group or other permission bits, or is not 32
  // bytes or 64 hex digits (+ newline).
  static Result<EncryptionKey> FromFile(const std::string& path);
  // Parses a key file's `contents` (`path` only names it in messages).
  static Result<EncryptionKey> Parse(std::string_view contents, std::string_view path);

  EncryptionKey(const EncryptionKey&) = default;
  EncryptionKey& operator=(const EncryptionKey&) = default;
  ~EncryptionKey();

  // The key file's path, for messages.
  const std::string& file() const { return file_; }
  // 32 hex digits that identify the key without revealing it (recorded in the store config).
  const std::string& key_check() const { return key_check_; }
  const std::array<uint8_t, 32>& cipher_key() const { return cipher_key_; }
  const std::array<uint8_t, 32>& name_key() const { return name_key_; }

 private:
  EncryptionKey() = default;
  std::string file_;
  std::string key_check_;
  std::array<uint8_t, 32> cipher_key_{};
  std::array<uint8_t, 32> name_key_{};
};

// Wraps `inner` so that every object but the config is encrypted on Put and decrypted on
// Get/GetRange, Head and List report plaintext sizes, Names() is keyed and Encryption() says so.
// Checks nothing against the config: ReadStoreConfig does.
std::unique_ptr<Store> EncryptStore(std::unique_ptr<Store> inner, const EncryptionKey& key);

// AES-256-GCM of one object (exposed for tests): nonce || ciphertext || tag with `aad` bound.
Result<std::string> SealObject(const std::array<uint8_t, 32>& key, std::string_view aad,
                               std::string_view plaintext);
// The plaintext, or Corruption "corrupt or not encrypted with this key: <aad>".
Result<std::string> OpenObject(const std::array<uint8_t, 32>& key, std::string_view aad,
                               std::string_view sealed);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_ENCRYPTED_STORE_H_
