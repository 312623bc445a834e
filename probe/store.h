// probe's table in the SQLite state file (core/sqlite_store.h; `--db FILE` or $CUTOVER_DB):
//   fingerprints  one row per `probe collect --db`: the host (its hostname, or the --root
//                 directory when the tree has none), the collection time (RFC 3339 UTC, from the
//                 document), and the fingerprint document as `--out` writes it (environment
//                 values of secret-looking names are already "[REDACTED]" by the collector).
//                 Indexed by (host, collected_at).
//
// Thread-safety: one FingerprintStore per thread; several processes may share the file (WAL,
// busy timeout).
#ifndef CUTOVER_PROBE_STORE_H_
#define CUTOVER_PROBE_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/fingerprint.h"
#include "core/sqlite_store.h"
#include "core/status.h"

namespace cutover::probe {

struct StoredFingerprint {
  int64_t id = 0;
  std::string host;
  std::string collected_at;
  std::string document;  // the JSON text of the fingerprint document
};

class FingerprintStore {
 public:
  // Opens (creating with mode 0600 when absent) the state file at `path` and brings the "probe"
  // component's tables up to date. Errors as SqliteDb::Open.
  static Result<FingerprintStore> Open(const std::string& path);

  // The key a fingerprint is stored under: its hostname, else "root:" + its collection root.
  static std::string HostKey(const Fingerprint& fp);

  // Stores `fp` (collection.collected_at must be set: InvalidArgument otherwise); returns the
  // row id.
  Result<int64_t> Add(const Fingerprint& fp);

  // The fingerprints stored for `host`, oldest first (by collection time, then row id).
  Result<std::vector<StoredFingerprint>> ForHost(const std::string& host);

 private:
  explicit FingerprintStore(SqliteDb db) : db_(std::move(db)) {}
  SqliteDb db_;
};

}  // namespace cutover::probe

#endif  // CUTOVER_PROBE_STORE_H_
