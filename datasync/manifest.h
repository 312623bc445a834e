// The snapshot manifest: the list of a snapshot's files, directories and symlinks with their
// metadata and the chunks that hold each file's bytes. A push publishes it last, after every
// chunk it names is confirmed stored; a pull reads it first.
//
// On the store it is JSON compressed with zstd (one frame):
//   {"format": 1, "name": "nightly", "created_ns": 1700000000000000000,
//    "chunker": {"version": 1, "min": 524288, "avg": 1048576, "max": 8388608}, "hash": "sha256",
//    "entries": [
//      {"path": "data", "type": "dir", "mode": 493, "mtime_ns": 1700000000000000000},
//      {"path": "data/a.bin", "type": "file", "mode": 420, "size": 5, "mtime_ns": ...,
//       "chunks": [{"id": "<64 hex>", "len": 5}]},
//      {"path": "data/small", "type": "file", ..., "chunks":
//         [{"id": "<64 hex>", "len": 9, "pack": "<64 hex>", "off": 1024}]},
//      {"path": "data/b.bin", "type": "file", ..., "link": "data/a.bin"},   (a hard link)
//      {"path": "data/disk.img", "type": "file", ..., "sparse": true},      (had holes)
//      {"path": "latest", "type": "symlink", "mode": 511, "mtime_ns": ..., "target": "data"}]}
// A shard's part (datasync/shard.h) also has
//   "shard": {"index": 2, "count": 4, "tree_entries": 1234, "tree_digest": "<64 hex>"}
// (readers that predate it ignore the member; a part lives under parts/, not snapshots/).
// Paths are relative, '/'-separated. A path or target that is not valid UTF-8 is stored as
// "path_hex"/"target_hex" (hex of its bytes) instead, so any Linux file name round-trips.
// "id" is always the SHA-256 of the chunk's bytes; "pack"/"off" say where it lies when it was
// packed with other small chunks into one pack object.
//
// Decoding validates everything and refuses unsafe input (see DecodeManifest); encoding runs the
// same validation, so an unsafe manifest is never published.
//
// Thread-safety: plain values and pure functions.
#ifndef CUTOVER_DATASYNC_MANIFEST_H_
#define CUTOVER_DATASYNC_MANIFEST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/hash.h"

namespace cutover {

// Bump when the manifest's layout or meaning changes; readers refuse a newer format.
inline constexpr int kManifestFormat = 1;

// A manifest larger than this once decompressed is refused (a defence against zstd bombs), and
// so is one whose text outgrows what its entries can take: kManifestBaseBytes plus
// kManifestBytesPerItem for each entry and each chunk read so far (an entry's JSON, with a
// 4096-byte path and target both hex-encoded, stays well below it).
inline constexpr uint64_t kMaxManifestBytes = uint64_t{4} << 30;
inline constexpr uint64_t kManifestBaseBytes = uint64_t{1} << 20;
inline constexpr uint64_t kManifestBytesPerItem = uint64_t{32} << 10;

enum class EntryType { kFile, kDir, kSymlink };

// "file", "dir" or "symlink".
std::string_view EntryTypeName(EntryType type);

// Where one chunk of a file lies in the store.
struct ChunkRef {
  ChunkId id{};         // SHA-256 of the chunk's bytes
  uint64_t length = 0;  // > 0
  bool packed = false;  // true: inside pack object `pack` at `pack_offset`
  ChunkId pack{};
  uint64_t pack_offset = 0;

  bool operator==(const ChunkRef&) const = default;
};

struct Entry {
  std::string path;  // relative, '/'-separated, no empty, "." or ".." components
  EntryType type = EntryType::kFile;
  uint32_t mode = 0;             // permission bits, <= 07777
  uint64_t size = 0;             // files: sum of the chunk lengths; 0 otherwise
  int64_t mtime_ns = 0;          // since the Unix epoch
  std::string target;            // symlinks only: non-empty, no NUL
  std::vector<ChunkRef> chunks;  // files only, in file order
  // Files only: the path of an earlier file of the snapshot this one is a hard link to (the
  // same inode in SRC); "" when it is not one. The entry keeps its own chunk list too, so a
  // reader that predates links restores a copy.
  std::string link;
  // Files only: the file had holes in SRC; pull leaves its all-zero blocks as holes.
  bool sparse = false;

  bool operator==(const Entry&) const = default;
};

// A sharded push's part of a snapshot (datasync/shard.h): which share of the tree it holds,
// and what the whole tree looked like to it, so a merge can prove its parts partition one tree.
struct ShardInfo {
  uint32_t index = 0;         // 1..count
  uint32_t count = 0;         // 1..kMaxShards
  uint64_t tree_entries = 0;  // entries of the whole tree, every shard's
  ChunkId tree_digest{};      // SHA-256 over the whole tree's paths and types, in walk order

  bool operator==(const ShardInfo&) const = default;
};

inline constexpr uint32_t kMaxShards = 4096;

struct Manifest {
  int format = kManifestFormat;
  std::string name;        // the snapshot name
  int64_t created_ns = 0;  // when the push started
  ChunkerParams chunker;   // the parameters the chunks were cut with
  std::vector<Entry> entries;
  std::optional<ShardInfo> shard;  // set on a part (parts/<name>/...), never on a snapshot

  bool operator==(const Manifest&) const = default;
};

// Checks the rules DecodeManifest enforces. InvalidArgument with the message DecodeManifest
// would give.
Status ValidateManifest(const Manifest& m);

// Validates `m` and returns its zstd-compressed JSON.
Result<std::string> EncodeManifest(const Manifest& m);

// Encodes a manifest entry by entry, so a push of a million files never holds them all: the
// header (every field of `header` but its entries), then Add for each entry in walk order
// (WalkOrderLess of datasync/shard.h), then Finish. Each entry is checked as EncodeManifest checks
// it; walk order stands in for the whole-manifest checks (no repeat, nothing below a file or a
// symlink), so an entry out of order is refused too.
class ManifestWriter {
 public:
  // InvalidArgument when the header is wrong (format, chunker, shard).
  static Result<std::unique_ptr<ManifestWriter>> Begin(const Manifest& header);
  ~ManifestWriter();
  ManifestWriter(const ManifestWriter&) = delete;
  ManifestWriter& operator=(const ManifestWriter&) = delete;

  // InvalidArgument as DecodeManifest words it, or "manifest entry N: path "b" comes after "c"
  // (entries must be in walk order)".
  Status Add(const Entry& e);
  // The zstd-compressed JSON. InvalidArgument when a shard's tree_entries is below the count.
  Result<std::string> Finish();

 private:
  friend Result<std::string> EncodeManifest(const Manifest& m);
  struct Impl;
  explicit ManifestWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Decompresses, parses and validates. Errors:
//   Corruption "manifest: not zstd data" / "manifest: corrupt zstd data: <reason>" /
//              "manifest: not JSON: <reason>" / "manifest: larger than <n> bytes"
//   InvalidArgument for anything well-formed but wrong, e.g.
//     "manifest: format 2 is newer than this cutover reads (1)"
//     "manifest entry 3: path \"/etc/passwd\" is absolute"
//     "manifest entry 3: path \"a/../b\" has a \"..\" component"
//     "manifest entry 3: path \"a//b\" has an empty component"
//     "manifest entry 3: path contains a NUL byte"
//     "manifest entry 3: path \"a\" repeats entry 1"
//     "manifest entry 4: parent \"a\" of \"a/b\" is a symlink, not a directory"
//   (entries are numbered from 0; see manifest_test.cc for every message).
Result<Manifest> DecodeManifest(std::string_view bytes);

// Reads a manifest as a stream, as DecodeManifest does (the same errors), without holding it:
// the text is decompressed and parsed piece by piece (never the whole text, never a JSON
// document of it), and `on_entry` gets each entry in order as soon as it is read, checked alone
// (its fields, its path, each chunk no longer than the chunker's max size). Returns the header
// (every field but the entries), or the first error, `on_entry`'s included. The checks across
// entries (no repeat, nothing below a file or symlink) are DecodeManifest's.
Result<Manifest> ReadManifest(std::string_view bytes,
                              const std::function<Status(Entry&&)>& on_entry);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_MANIFEST_H_
