// Verify: proves a snapshot is restorable. Every chunk and pack range the manifest names is read
// back from the store and its SHA-256 checked (never trusting the server); with a DEST directory,
// every entry there is compared with the manifest (type, size, mode, mtime, symlink target, and
// each file's bytes chunk by chunk).
//
// Thread-safety: Verify may run concurrently with other Verify calls; it uses `jobs` threads.
#ifndef CUTOVER_DATASYNC_VERIFY_H_
#define CUTOVER_DATASYNC_VERIFY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/snapshots.h"
#include "datasync/store.h"

namespace cutover {

class DatasyncState;

struct VerifyResult {
  SnapshotRef snapshot;         // the snapshot verified
  uint64_t chunks_checked = 0;  // distinct chunk references read from the store
  uint64_t bytes_checked = 0;
  uint64_t files_checked = 0;  // files compared in DEST (0 without DEST)
  // One line per failure: "file a/b: chunk <hex>: missing in the store: ..." /
  // "file a/b: chunk <hex>: corrupt in the store (its SHA-256 does not match)" /
  // "file a/b: differs from the manifest: ..." / "file a/c: in DEST but not in the snapshot"
  // (sorted).
  std::vector<std::string> failures;
};

// Verifies a snapshot (the newest of a name, or an id); `dest_dir` empty = the store only. The
// Status is an error only when the verification could not run (no such snapshot: NotFound;
// unreadable manifest); findings go in `failures`. With a `state`, each chunk or pack found missing
// or corrupt is dropped from its journal (DatasyncState::ForgetConfirmed), so the next push puts it
// again. With a DEST, each entry there the snapshot does not name is a failure too ("file a/c: in
// DEST but not in the snapshot", "dir ..." for a directory, listed once with all it holds;
// datasync/extras.h) unless `allow_extra`.
Result<VerifyResult> Verify(Store& store, const SnapshotSelector& snapshot,
                            const std::string& dest_dir, int jobs = 8,
                            DatasyncState* state = nullptr, bool allow_extra = false);

// The result of a verify of a snapshot in `store_url` (and of `dest`, when not empty) as the
// cutover.datasync-verify/1 document and as the lines `datasync verify` prints.
nlohmann::json VerifyResultToJson(const VerifyResult& r, std::string_view store_url,
                                  std::string_view dest);
std::string RenderVerifyResult(const VerifyResult& r, std::string_view store_url,
                               std::string_view dest);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_VERIFY_H_
