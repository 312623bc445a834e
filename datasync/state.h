// datasync's local state in the SQLite file (core/sqlite_store.h; path from --db / CUTOVER_DB):
//   files    the files cache: (store, path) with the stat key (device, inode, size, mtime_ns,
//            ctime_ns) it was read under -> its chunk list. A file whose stat key is unchanged is
//            not re-read on the next push to that store.
//   journal  the chunk and pack keys a store has confirmed (per store URL): a push resumed after
//            kill -9 skips them without asking the store.
//   epochs   per store URL, the store's gc epoch the journal was written under: a gc that
//            deletes anything changes the epoch, and the journal of an older epoch is dropped
//            (it may name chunks that are gone).
//   audit    one row per push / pull / gc (when, who, what, source, destination, bytes, result),
//            listed by `cutover datasync history`.
//
// Thread-safety: every method may be called from any thread (one connection behind a mutex).
#ifndef CUTOVER_DATASYNC_STATE_H_
#define CUTOVER_DATASYNC_STATE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/sqlite_store.h"
#include "core/status.h"
#include "datasync/manifest.h"

namespace cutover {

// What says a file is unchanged since it was last read.
struct FileStatKey {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool operator==(const FileStatKey&) const = default;
};

struct AuditRecord {
  int64_t when_ns = 0;  // when the operation started
  std::string who;      // the local user name
  std::string what;     // "push", "pull", "gc"
  std::string source;   // directory or store URL
  std::string destination;
  std::string snapshot;
  uint64_t bytes = 0;  // bytes sent or received
  std::string result;  // "ok" or the error message
};

class DatasyncState {
 public:
  // Opens (creating, unless `opts.must_exist`) the state database at `path` (":memory:" for
  // tests).
  static Result<std::unique_ptr<DatasyncState>> Open(const std::string& path,
                                                     OpenOptions opts = {});

  // What the files cache holds of `path` pushed to `store_url`.
  struct CachedFile {
    bool unchanged = false;        // its stat key is still the one given
    std::vector<ChunkRef> chunks;  // as last pushed
    std::vector<FastDigest> fast;  // per chunk; empty when the row predates them
  };
  Result<std::optional<CachedFile>> LookupFile(const std::string& store_url,
                                               const std::string& path, const FileStatKey& key);
  // Remembers the chunk lists of many files in one transaction.
  struct FileRow {
    std::string path;
    FileStatKey key;
    std::vector<ChunkRef> chunks;
    std::vector<FastDigest> fast;  // per chunk, or empty
  };
  Status RememberFiles(const std::string& store_url, const std::vector<FileRow>& rows);

  // True when `store_url` has confirmed holding `object_key`.
  Result<bool> IsConfirmed(const std::string& store_url, const std::string& object_key);
  // Records that `store_url` holds `object_key` (committed before returning).
  Status RecordConfirmed(const std::string& store_url, const std::string& object_key);
  // Drops `object_key` from the journal of `store_url` (a verify or pull found it missing or
  // corrupt), so the next push asks the store instead of trusting it.
  Status ForgetConfirmed(const std::string& store_url, const std::string& object_key);

  // The store's gc epoch the journal of `store_url` belongs to; "" before any gc was seen.
  Result<std::string> JournalEpoch(const std::string& store_url);
  // Drops the journal of `store_url` and records that it now belongs to `epoch` (one
  // transaction). The files cache stays: its chunk lists are checked against the store.
  Status ResetJournal(const std::string& store_url, const std::string& epoch);

  Status RecordAudit(const AuditRecord& r);
  // The newest `limit` audit rows, newest first.
  Result<std::vector<AuditRecord>> History(int limit);

 private:
  explicit DatasyncState(SqliteDb db) : db_(std::move(db)) {}
  std::mutex mu_;
  SqliteDb db_;
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_STATE_H_
