// A temporary file of manifest entries, written in order and read back in order, so a push of a
// million files keeps a window of them in memory instead of all of them (with their chunk lists,
// each file's stat key and a few flags).
//
// The file is created in $TMPDIR (default /tmp) and unlinked at once: nothing is left behind, not
// even after kill -9. Writes are buffered; a full disk is an IoError naming the spool.
//
// Thread-safety: none; one thread writes, then reads.
#ifndef CUTOVER_DATASYNC_ENTRY_SPOOL_H_
#define CUTOVER_DATASYNC_ENTRY_SPOOL_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/status.h"
#include "datasync/manifest.h"
#include "datasync/state.h"

namespace cutover {

class EntrySpool {
 public:
  struct Record {
    Entry entry;
    FileStatKey key;               // files: the walk's stat of the file
    uint32_t flags = 0;            // the caller's bits, stored as given
    std::vector<FastDigest> fast;  // files: per chunk, or empty
  };

  // IoError "cannot create a temporary file in DIR: ..." on failure.
  static Result<std::unique_ptr<EntrySpool>> Create();
  ~EntrySpool();
  EntrySpool(const EntrySpool&) = delete;
  EntrySpool& operator=(const EntrySpool&) = delete;

  // Appends a record. REQUIRES: Rewind not called yet.
  Status Write(const Record& r);
  // Flushes what was written and goes back to the first record for reading (again).
  Status Rewind();
  // The next record into *r; false at the end. Corruption when the file does not read back as
  // written (it never should: it is ours and unlinked).
  Result<bool> Read(Record* r);
  // Records written so far.
  uint64_t size() const { return count_; }

 private:
  explicit EntrySpool(std::FILE* f) : f_(f) {}
  std::FILE* f_;
  uint64_t count_ = 0;
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_ENTRY_SPOOL_H_
