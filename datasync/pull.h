// Pull: restores a snapshot from a store into a directory, files downloaded by `jobs` worker
// threads (one file per worker at a time). Chunks a file already at the same path in DEST holds
// are not downloaded: that file is chunked with the snapshot's chunker, and each chunk it shares
// with the snapshot's version is read from it (checked against its SHA-256 again) instead. A
// file that already has the snapshot's bytes is not rewritten; only its mode and mtime are set.
// So a re-pull after a small change downloads only the changed chunks. (Chunks moved to another
// path are downloaded again: only the same path is looked at.)
//
// Rules:
//   - the manifest is decoded and validated first (datasync/manifest.h refuses absolute paths,
//     "..", entries below a symlink or file); on disk, no parent of an entry may be a symlink or
//     a non-directory, so nothing is ever written outside DEST;
//   - every chunk's SHA-256 is checked before its bytes are written; a corrupt chunk fails the
//     pull with Corruption naming the file and the chunk;
//   - each file is written under a temporary name (".<name>.cutover-tmp") in its final
//     directory, fsynced, given its mode and mtime, then renamed into place: no partial file ever
//     appears under its final name; symlinks likewise;
//   - directory modes and mtimes are set last, deepest first.
//
// Thread-safety: one Pull at a time per destination directory.
#ifndef CUTOVER_DATASYNC_PULL_H_
#define CUTOVER_DATASYNC_PULL_H_

#include <cstdint>
#include <functional>
#include <string>

#include "core/status.h"
#include "datasync/store.h"

namespace cutover {

struct PullResult {
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;             // file bytes written
  uint64_t downloaded_bytes = 0;  // chunk bytes read from the store
  uint64_t reused_bytes = 0;      // file bytes taken from DEST's files instead
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
};

// Restores snapshot `name` of `store` into `dest_dir` (created when missing).
// NotFound: no such snapshot. InvalidArgument: an unsafe manifest or a DEST path in the way.
// Corruption: a chunk that fails its hash. IoError: local write failures.
Result<PullResult> Pull(Store& store, const std::string& name, const std::string& dest_dir,
                        const PullOptions& opts = {});

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_PULL_H_
