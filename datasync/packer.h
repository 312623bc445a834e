// Push's fourth stage: files smaller than the chunker's min size packed together, in walk order,
// into pack objects of at most max size (so a tree of small files costs one PUT per pack), each
// pack handed to a worker for upload once full. A small file whose bytes the previous snapshot
// of the name holds in a pack still present reuses that place; identical small files within a
// pack are stored once.
//
//   Packer packer(store, writer, params, on_confirmed);
//   CUTOVER_RETURN_IF_ERROR(packer.LoadPrevious(newest_key));
//   bool pending = false;
//   CUTOVER_RETURN_IF_ERROR(packer.Place(&ref, read_file, pool, &pending));
//   ...
//   CUTOVER_RETURN_IF_ERROR(packer.Flush(pool));   // then, for each pending ref:
//   CUTOVER_RETURN_IF_ERROR(packer.Resolve(&ref));
//
// A pack's id (its SHA-256) is known once it is full, so a placed chunk first holds the pack's
// number; Resolve swaps in the id.
//
// Thread-safety: Place, Flush and LoadPrevious from one thread; the uploads run on the pool.
#ifndef CUTOVER_DATASYNC_PACKER_H_
#define CUTOVER_DATASYNC_PACKER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "datasync/chunker.h"
#include "datasync/manifest.h"
#include "datasync/object_writer.h"
#include "datasync/store.h"
#include "datasync/task_pool.h"

namespace cutover {

// A pack holds at most this many distinct chunks besides at most max chunk size bytes, so the
// index of the pack being filled stays small even for files of a few bytes. (Identical small
// files further apart than this are stored once per pack.)
inline constexpr size_t kMaxPackMembers = 16384;

class Packer {
 public:
  // `on_confirmed` (may be empty) gets the file bytes of each pack once it is stored, and of
  // each reused place at once; it is called from worker threads.
  Packer(Store& store, ObjectWriter& writer, const ChunkerParams& params,
         std::function<void(uint64_t)> on_confirmed)
      : store_(store), writer_(writer), params_(params), on_confirmed_(std::move(on_confirmed)) {}

  // Indexes the packed chunks of the manifest at `snapshot_key`. A missing or unreadable
  // manifest only costs dedup (Ok); other store errors are returned.
  Status LoadPrevious(const std::string& snapshot_key);

  // Places the one chunk *ref (id and length set) of a small file. `read` gives the file's
  // bytes when they are needed (no member of this pack or the previous snapshot has them); they
  // must hash to ref->id, else IoError "file changed while being read: PATH" with `path`.
  // *ref becomes packed; *pending is true when it holds the pack's number until Resolve.
  Status Place(ChunkRef* ref, const std::string& path,
               const std::function<Result<std::string>()>& read, TaskPool& pool, bool* pending);

  // Hands the pack being filled (if any) to the pool for upload and numbers it.
  Status Flush(TaskPool& pool);

  // Swaps a pending ref's pack number for the pack's id. Internal when the number is unknown.
  Status Resolve(ChunkRef* ref) const;

 private:
  Store& store_;
  ObjectWriter& writer_;
  ChunkerParams params_;
  std::function<void(uint64_t)> on_confirmed_;
  std::unordered_map<ChunkId, ChunkRef, ChunkIdHash> previous_;  // packed chunks of the last one
  std::unordered_map<ChunkId, uint64_t, ChunkIdHash> in_pack_;   // chunk -> offset in pack_
  std::string pack_;
  uint64_t pack_file_bytes_ = 0;   // file bytes placed in pack_
  std::vector<ChunkId> pack_ids_;  // by pack number
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_PACKER_H_
