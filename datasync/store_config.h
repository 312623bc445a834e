// The store's config object (key "config"): written by the first push, read and checked by every
// later push and pull so that dedup never breaks silently (a push with other chunker parameters
// would cut different chunks and share nothing with what is stored).
//
//   {"format": 1, "chunker": {"version": 1, "min": 524288, "avg": 1048576, "max": 8388608},
//    "hash": "sha256", "encryption": false}
//
// An encrypted store (datasync/encrypted_store.h) has "encryption": true and "key_check": 32 hex
// digits that identify its key; the config itself is never encrypted.
//
// Thread-safety: pure functions over a Store (which is itself thread-safe).
#ifndef CUTOVER_DATASYNC_STORE_CONFIG_H_
#define CUTOVER_DATASYNC_STORE_CONFIG_H_

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/store.h"

namespace cutover {

// Bump when the store layout (store.h) or the config's meaning changes.
inline constexpr int kStoreFormat = 1;

// Reads the config. NotFound when the store has none yet; InvalidArgument when it is malformed,
// newer than this cutover, or uses a hash this build does not have. FailedPrecondition when its
// encryption does not match `store`'s (Store::Encryption()):
//   "store <url> is encrypted: pass --encrypt KEYFILE with its key"
//   "store <url> is not encrypted: drop --encrypt (only a new store can be encrypted)"
//   "the key in <file> is not the key of store <url>"
Result<ChunkerParams> ReadStoreConfig(Store& store);

// Returns the store's chunker parameters: writes a config with `params` (and `store`'s
// encryption) when the store has none
// (and sets *created, when given: a store without a config holds no chunk or pack yet);
// FailedPrecondition "store <url> was created with chunker min/avg/max A/B/C, not X/Y/Z" when it
// has another.
Result<ChunkerParams> EnsureStoreConfig(Store& store, const ChunkerParams& params,
                                        bool* created = nullptr);

// Checks that a snapshot's manifest was cut with the store's chunker, so no chunk it names is
// longer than the store's max size (its entries are checked against its own chunker). OK when
// the store has no config. InvalidArgument
//   "manifest: chunker min/avg/max A/B/C is not the store's (X/Y/Z)".
Status CheckManifestChunker(Store& store, const ChunkerParams& manifest);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STORE_CONFIG_H_
