// Pull: restores a snapshot from a store into a directory, files downloaded by `jobs` worker
// threads (one file per worker at a time). Chunks DEST already holds are not downloaded: the
// file at the same path, and every regular file of DEST the snapshot does not name but that
// has the size of one of its files (a file moved or renamed since the last pull; files of other
// sizes are not read), are chunked with the snapshot's chunker, and each
// chunk they share with the snapshot is read from them (checked against its SHA-256 again)
// instead. A file that already has the snapshot's bytes is not rewritten; only its mode and
// mtime are set. So a re-pull after a small change, or after files moved, downloads only the
// changed chunks. Files the snapshot does not name are left in place.
//
// One pull at a time per DEST: a pull holds an exclusive flock on the DEST directory itself
// (nothing is created for it; the kernel drops it when the process dies), and a second pull
// into the same DEST fails at once with Unavailable (exit 3). A dry run takes no lock.
//
// Rules:
//   - the manifest is decoded and validated first (datasync/manifest.h refuses absolute paths,
//     "..", entries below a symlink or file); on disk, no parent of an entry may be a symlink or
//     a non-directory, so nothing is ever written outside DEST;
//   - every chunk's SHA-256 is checked before its bytes are written; a corrupt chunk fails the
//     pull with Corruption naming the file and the chunk;
//   - each file is written under a temporary name in a private directory pull creates directly
//     under DEST (".cutover-pull", or ".cutover-pull.N" when the snapshot or DEST has that name
//     as something else) and removes when done; fsynced, given its mode and mtime, then renamed
//     into place: no partial file ever appears under its final name; symlinks likewise. So no
//     temporary shares a name with an entry a snapshot may hold, nothing in DEST outside the
//     snapshot's paths is created or removed, and every name the file system allows restores
//     (a temporary's name is 32 hex digits, whatever the entry's length). DEST must be one file
//     system: an entry below a mount point inside DEST fails (rename across file systems);
//   - directory modes and mtimes are set last, deepest first; a directory already in DEST without
//     write permission for its owner (an earlier pull restored its mode 555) is made writable
//     while its entries are written and gets the snapshot's mode back at the end;
//   - an entry that cannot be restored (a file name the file system refuses, a corrupt chunk,
//     something in the way) does not stop the others: every other entry is restored, and the
//     pull then fails naming each one (Corruption when all are corrupt or missing chunks, else
//     the first other failure's code). Only a store-wide failure (Unavailable) stops it early.
//
// Thread-safety: Pull may run from several threads or processes; those with the same DEST
// exclude each other (see above).
#ifndef CUTOVER_DATASYNC_PULL_H_
#define CUTOVER_DATASYNC_PULL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "datasync/snapshots.h"
#include "datasync/store.h"

namespace cutover {

class DatasyncState;

struct PullResult {
  SnapshotRef snapshot;  // the snapshot pulled
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;             // file bytes written
  uint64_t downloaded_bytes = 0;  // chunk bytes read from the store
  uint64_t reused_bytes = 0;      // file bytes taken from DEST's files instead
  // With delete_extra: DEST's entries the snapshot does not name, removed (or, in a dry run,
  // to remove); a directory is listed once, with a trailing '/', for all it holds.
  std::vector<std::string> deleted;
};

struct PullOptions {
  int jobs = 8;  // worker threads
  // Reads the manifest and chunks DEST's files, and counts what a pull would download and what
  // it would reuse (downloaded_bytes, reused_bytes), writing nothing: DEST is not even created.
  bool dry_run = false;
  // Called from worker threads with chunk bytes downloaded and verified.
  std::function<void(uint64_t bytes)> on_confirmed;
  // Called once the manifest is read, with the snapshot's total file bytes.
  std::function<void(uint64_t total)> on_total;
  // Set: each chunk or pack found missing or corrupt is dropped from its journal
  // (DatasyncState::ForgetConfirmed), so the next push puts it again.
  DatasyncState* state = nullptr;
  // Removes what DEST holds that the snapshot does not name, once every entry is restored
  // (nothing is removed when one failed); inside DEST only, never through a symlink
  // (datasync/extras.h). With dry_run, lists it instead.
  bool delete_extra = false;
};

// Restores a snapshot of `store` (the newest of a name, or an id: datasync/snapshots.h) into
// `dest_dir` (created when missing). NotFound: no such snapshot. InvalidArgument: an unsafe
// manifest or a DEST path in the way. Corruption: a chunk that fails its hash. IoError: local write
// failures.
Result<PullResult> Pull(Store& store, const SnapshotSelector& snapshot, const std::string& dest_dir,
                        const PullOptions& opts = {});

// The result of a pull (`opts` as pulled from `store_url` into `dest`) as the
// cutover.datasync-pull/1 document and as the lines `datasync pull` prints (a dry run's would_*
// in place of what was done; with delete_extra, the paths deleted or that would be).
nlohmann::json PullResultToJson(const PullResult& r, const PullOptions& opts,
                                std::string_view store_url, std::string_view dest);
std::string RenderPullResult(const PullResult& r, const PullOptions& opts,
                             std::string_view store_url, std::string_view dest);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_PULL_H_
