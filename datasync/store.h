// The store interface datasync pushes to and pulls from: a flat namespace of immutable-ish
// objects under '/'-separated keys, the least a directory, a WebDAV server and an S3 bucket all
// offer. Chunk and pack objects are content-addressed (their key is their SHA-256), so a Put
// may be retried or repeated freely; snapshot manifests (each under a key of its own, never
// replaced) and the config are the only objects whose key names something else.
//
// Layout (the keys every Store implementation shares):
//   config                       the store's config object (format, chunker, hash, encryption)
//   snap/<name>/<ns>-<id>        a snapshot manifest (datasync/manifest.h), one per push: a
//                                name is a series of them (datasync/snapshots.h)
//   snapshots/<name>             a snapshot manifest written before snapshot ids (read only)
//   parts/<name>/<I>-of-<N>      a sharded push's part of snapshot <name>, until merged
//                                (datasync/shard.h)
//   chunks/ab/cd/<64 hex>        one chunk, spread over 65,536 prefixes by its first 4 hex digits
//   packs/ab/cd/<64 hex>         a pack of small chunks, keyed by the SHA-256 of its bytes
//                                (an encrypted store names both by a keyed hash of the SHA-256
//                                instead: ObjectNames below, datasync/encrypted_store.h)
//   locks/<kind>-<16 hex>        a push or gc lock (datasync/store_lock.h)
//   gc-epoch                     changed by each gc that deletes (datasync/gc.h)
// Spreading keys keeps directories small and, on S3, spreads requests over partitioned prefixes.
//
// Thread-safety: implementations must allow concurrent calls from many threads (push and pull
// run many transfers at once).
#ifndef CUTOVER_DATASYNC_STORE_H_
#define CUTOVER_DATASYNC_STORE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/http_client.h"
#include "core/status.h"
#include "datasync/hash.h"

namespace cutover {

// How chunk and pack ids become store keys: always ask the store (Store::Names()), never
// ChunkKey/PackKey directly, so that an encrypted store's keys are used.
// Plain: ChunkKey/PackKey. Keyed (an encrypted store): the same layout over
// HMAC-SHA-256(name key, id), so that keys reveal no content hash while one chunk keeps one key.
// Thread-safety: immutable.
class ObjectNames {
 public:
  ObjectNames() = default;
  explicit ObjectNames(const std::array<uint8_t, 32>& name_key);
  ObjectNames(const ObjectNames&) = delete;
  ObjectNames& operator=(const ObjectNames&) = delete;
  ~ObjectNames();

  // The key of the chunk (pack) whose SHA-256 is `id`.
  std::string Chunk(const ChunkId& id) const;
  std::string Pack(const ChunkId& id) const;

 private:
  bool keyed_ = false;
  std::array<uint8_t, 32> key_{};
};

// What an encrypted store says about its key (Store::Encryption()).
struct StoreEncryption {
  std::string key_file;   // the key file's path, for messages
  std::string key_check;  // 32 hex digits identifying the key (datasync/encrypted_store.h)
};

class Store {
 public:
  virtual ~Store() = default;

  // The store's URL, e.g. "file:///data/store". Never contains a credential.
  virtual std::string Url() const = 0;

  // Stores `bytes` under `key`, replacing any object there. Atomic: a reader sees the old object
  // or the complete new one, never a part; once it returns OK the object is durable.
  // Every implementation hits the failpoint "store.put.after" once the object is stored (the
  // crash tests kill there, after the N-th write, whatever the store).
  virtual Status Put(std::string_view key, std::string_view bytes) = 0;

  // The object's bytes. NotFound when there is none.
  virtual Result<std::string> Get(std::string_view key) = 0;

  // `length` bytes from `offset` (packs are read this way). NotFound when there is no object,
  // Corruption when the object is shorter than offset + length.
  virtual Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length) = 0;

  // The object's size. NotFound when there is none.
  virtual Result<uint64_t> Head(std::string_view key) = 0;

  // Calls `fn(key, size)` for every object whose key starts with `prefix`, as it is listed
  // (never the whole listing in memory), in no particular order. Stops at and returns the first
  // non-OK status `fn` returns.
  virtual Status List(std::string_view prefix,
                      const std::function<Status(std::string_view key, uint64_t size)>& fn) = 0;

  // Removes the object. OK when there was none (deletes are idempotent).
  virtual Status Delete(std::string_view key) = 0;

  // Removes what killed Puts left behind that no key names (a FileStore's temporaries), when
  // last modified before `before_ns` (ns since the epoch); returns how many went. Stores that
  // leave nothing behind (WebDAV and S3 PUTs are atomic on the server) keep this default: 0.
  virtual Result<uint64_t> RemoveLeftovers(int64_t before_ns) {
    (void)before_ns;
    return uint64_t{0};
  }

  // True when an object is stored under `key` (Head without the size).
  Result<bool> Exists(std::string_view key);

  // How this store names chunks and packs (plain unless encrypted).
  virtual const ObjectNames& Names() const;

  // Null for a plain store; the key's description for an encrypted one.
  virtual const StoreEncryption* Encryption() const { return nullptr; }
};

// Checks that `key` is a valid store key: non-empty '/'-separated components of [A-Za-z0-9._-],
// none empty, none starting with '.', at most 1024 bytes. InvalidArgument "bad store key ...".
Status ValidateKey(std::string_view key);

inline constexpr char kConfigKey[] = "config";
// "chunks/ab/cd/<hex>": the layout. The key of a chunk is store.Names().Chunk(id).
std::string ChunkKey(const ChunkId& id);
// "packs/ab/cd/<hex>".
std::string PackKey(const ChunkId& id);
// "snapshots/<name>". InvalidArgument when `name` is not one key component.
Result<std::string> SnapshotKey(std::string_view name);

// Options of the remote stores (WebDAV and S3). Fields a store does not use are ignored.
struct StoreOptions {
  // S3: the endpoint URL ("http://127.0.0.1:9000"); empty = AWS (https://s3.<region>...).
  std::string endpoint;
  // S3: the signing region; empty = "us-east-1".
  std::string region;
  // S3: path-style URLs (endpoint/bucket/key); unset = on when `endpoint` is set.
  std::optional<bool> path_style;
  // S3: keys per ListObjectsV2 page (max-keys), 1..1000.
  int list_page_size = 1000;
  // TLS: a CA bundle replacing the system one; `insecure` skips peer verification.
  std::string ca_file;
  bool insecure = false;
  // Transfers the caller runs at once (a hint for connection reuse; the client grows as needed).
  int jobs = 8;
  // Timeouts, retries and backoff of the HTTP client; its TLS and auth fields are replaced by
  // the store's.
  HttpClientOptions http;
  // S3: environment lookup for credentials (AWS_*, HOME); null = the process environment.
  std::function<std::optional<std::string>(std::string_view name)> getenv;
};

// Opens the store at `url`: file:///abs/path, http(s)://host/path (WebDAV) or
// s3://bucket/prefix. InvalidArgument for anything else. Sends nothing.
Result<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options);
Result<std::unique_ptr<Store>> OpenStore(std::string_view url);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STORE_H_
