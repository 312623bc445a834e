// Push: turns a directory into a snapshot in a store (a first, single-threaded version over any
// Store; the parallel libcurl engine, the SQLite files cache and resume journal come later).
//
// Rules:
//   - every regular file is chunked (FastCDC) and each chunk hashed with SHA-256;
//   - a chunk is uploaded only when the store lacks it (Exists first);
//   - files smaller than the chunker's min size are packed together into pack objects of at most
//     max size, so a tree of small files costs one PUT per pack, not per file; a small file whose
//     bytes the previous snapshot of the same name already holds in a pack reuses that place;
//   - the manifest is published last, and only after every chunk and pack it names is confirmed
//     present (Head);
//   - special files (sockets, FIFOs, devices) are skipped and listed in the result; an unreadable
//     file fails the push; a file whose bytes change between chunking and upload fails the push
//     (never a silently wrong snapshot).
//
// Thread-safety: one Push at a time per destination snapshot name.
#ifndef CUTOVER_DATASYNC_PUSH_H_
#define CUTOVER_DATASYNC_PUSH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/store.h"

namespace cutover {

struct PushOptions {
  std::string name;       // snapshot name (a store key component)
  ChunkerParams chunker;  // used for a new store; must match an existing store's config
};

struct PushResult {
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;                // file bytes in the snapshot
  uint64_t chunks = 0;               // chunk references in the manifest
  uint64_t uploaded_objects = 0;     // chunk and pack objects PUT
  uint64_t uploaded_bytes = 0;       // their bytes, manifest excluded
  std::vector<std::string> skipped;  // "path (socket)" for each special file left out
};

// Pushes the tree at `src_dir` to `store` as snapshot `opts.name`.
// NotFound when src_dir does not exist; IoError on read failures; FailedPrecondition on a
// store config mismatch.
Result<PushResult> Push(const std::string& src_dir, Store& store, const PushOptions& opts);

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_PUSH_H_
