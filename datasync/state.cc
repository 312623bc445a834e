#include "datasync/state.h"

#include <cstring>

namespace cutover {
namespace {

constexpr Migration kMigrations[] = {
    {1,
     "CREATE TABLE datasync_files (store TEXT NOT NULL, path TEXT NOT NULL, dev INTEGER NOT NULL,"
     " ino INTEGER NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
     " ctime_ns INTEGER NOT NULL, chunks BLOB NOT NULL, PRIMARY KEY (store, path));"
     "CREATE TABLE datasync_journal (store TEXT NOT NULL, key TEXT NOT NULL,"
     " PRIMARY KEY (store, key)) WITHOUT ROWID;"
     "CREATE TABLE datasync_audit (id INTEGER PRIMARY KEY, when_ns INTEGER NOT NULL,"
     " who TEXT NOT NULL, what TEXT NOT NULL, source TEXT NOT NULL, destination TEXT NOT NULL,"
     " snapshot TEXT NOT NULL, bytes INTEGER NOT NULL, result TEXT NOT NULL);"},
    {2,
     "CREATE TABLE datasync_epochs (store TEXT PRIMARY KEY NOT NULL, epoch TEXT NOT NULL)"
     " WITHOUT ROWID;"},
    // Per chunk, 16 bytes of XXH3-128 (datasync/hash.h FastDigest); NULL in older rows.
    {3, "ALTER TABLE datasync_files ADD COLUMN fast BLOB;"},
};

// A chunk list as a blob: per chunk 32 id bytes, 8 length, 1 packed flag, 32 pack, 8 offset.
constexpr size_t kRefBytes = 32 + 8 + 1 + 32 + 8;

void PutU64(std::vector<uint8_t>* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::vector<uint8_t> EncodeRefs(const std::vector<ChunkRef>& refs) {
  std::vector<uint8_t> out;
  out.reserve(refs.size() * kRefBytes);
  for (const ChunkRef& r : refs) {
    out.insert(out.end(), r.id.begin(), r.id.end());
    PutU64(&out, r.length);
    out.push_back(r.packed ? 1 : 0);
    out.insert(out.end(), r.pack.begin(), r.pack.end());
    PutU64(&out, r.pack_offset);
  }
  return out;
}

std::optional<std::vector<ChunkRef>> DecodeRefs(const std::vector<uint8_t>& b) {
  if (b.size() % kRefBytes != 0) return std::nullopt;
  std::vector<ChunkRef> refs(b.size() / kRefBytes);
  const uint8_t* p = b.data();
  for (ChunkRef& r : refs) {
    std::memcpy(r.id.data(), p, 32);
    r.length = GetU64(p + 32);
    r.packed = p[40] != 0;
    std::memcpy(r.pack.data(), p + 41, 32);
    r.pack_offset = GetU64(p + 73);
    p += kRefBytes;
  }
  return refs;
}

}  // namespace

Result<std::unique_ptr<DatasyncState>> DatasyncState::Open(const std::string& path,
                                                           OpenOptions opts) {
  CUTOVER_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path, "datasync", kMigrations, opts));
  // The journal gets a commit per stored object. In WAL mode, NORMAL still keeps every commit
  // through a kill -9 (it is in the OS's page cache); only a power loss or kernel crash can drop
  // the last few, which costs a HEAD request or a file read again, never a wrong snapshot (the
  // files cache and the journal are hints checked against the file and the store). FULL paid an
  // fsync per uploaded chunk.
  CUTOVER_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous=NORMAL"));
  return std::unique_ptr<DatasyncState>(new DatasyncState(std::move(db)));
}

Result<std::optional<DatasyncState::CachedFile>> DatasyncState::LookupFile(
    const std::string& store_url, const std::string& path, const FileStatKey& key) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Statement st,
                           db_.Prepare("SELECT dev, ino, size, mtime_ns, ctime_ns, chunks, fast "
                                       "FROM datasync_files WHERE store = ? AND path = ?"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
  CUTOVER_RETURN_IF_ERROR(st.Bind(2, path));
  CUTOVER_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<CachedFile>();
  FileStatKey have{static_cast<uint64_t>(st.Int64(0)), static_cast<uint64_t>(st.Int64(1)),
                   static_cast<uint64_t>(st.Int64(2)), st.Int64(3), st.Int64(4)};
  CachedFile f;
  f.unchanged = have == key;
  std::optional<std::vector<ChunkRef>> chunks = DecodeRefs(st.Blob(5));
  if (!chunks.has_value()) return std::optional<CachedFile>();  // a damaged row: read the file
  f.chunks = std::move(*chunks);
  const std::vector<uint8_t> fast = st.Blob(6);
  if (fast.size() == f.chunks.size() * sizeof(FastDigest)) {  // else: an older row, or damage
    f.fast.resize(f.chunks.size());
    if (!fast.empty()) std::memcpy(f.fast.data(), fast.data(), fast.size());
  }
  return std::optional<CachedFile>(std::move(f));
}

Status DatasyncState::RememberFiles(const std::string& store_url,
                                    const std::vector<FileRow>& rows) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  for (const FileRow& r : rows) {
    CUTOVER_ASSIGN_OR_RETURN(Statement st,
                             db_.Prepare("INSERT OR REPLACE INTO datasync_files VALUES "
                                         "(?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
    CUTOVER_RETURN_IF_ERROR(st.Bind(2, r.path));
    CUTOVER_RETURN_IF_ERROR(st.Bind(3, r.key.dev));
    CUTOVER_RETURN_IF_ERROR(st.Bind(4, r.key.ino));
    CUTOVER_RETURN_IF_ERROR(st.Bind(5, r.key.size));
    CUTOVER_RETURN_IF_ERROR(st.Bind(6, r.key.mtime_ns));
    CUTOVER_RETURN_IF_ERROR(st.Bind(7, r.key.ctime_ns));
    std::vector<uint8_t> blob = EncodeRefs(r.chunks);
    CUTOVER_RETURN_IF_ERROR(st.Bind(8, std::span<const uint8_t>(blob)));
    CUTOVER_RETURN_IF_ERROR(
        st.Bind(9, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(r.fast.data()),
                                            r.fast.size() * sizeof(FastDigest))));
    CUTOVER_RETURN_IF_ERROR(st.Run());
  }
  return tx.Commit();
}

Result<bool> DatasyncState::IsConfirmed(const std::string& store_url,
                                        const std::string& object_key) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(
      Statement st, db_.Prepare("SELECT 1 FROM datasync_journal WHERE store = ? AND key = ?"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
  CUTOVER_RETURN_IF_ERROR(st.Bind(2, object_key));
  return st.Step();
}

Status DatasyncState::RecordConfirmed(const std::string& store_url, const std::string& object_key) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Statement st,
                           db_.Prepare("INSERT OR IGNORE INTO datasync_journal VALUES (?, ?)"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
  CUTOVER_RETURN_IF_ERROR(st.Bind(2, object_key));
  return st.Run();
}

Status DatasyncState::ForgetConfirmed(const std::string& store_url, const std::string& object_key) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Statement st,
                           db_.Prepare("DELETE FROM datasync_journal WHERE store = ? AND key = ?"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
  CUTOVER_RETURN_IF_ERROR(st.Bind(2, object_key));
  return st.Run();
}

Result<std::string> DatasyncState::JournalEpoch(const std::string& store_url) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Statement st,
                           db_.Prepare("SELECT epoch FROM datasync_epochs WHERE store = ?"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
  CUTOVER_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

Status DatasyncState::ResetJournal(const std::string& store_url, const std::string& epoch) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  {
    CUTOVER_ASSIGN_OR_RETURN(Statement st,
                             db_.Prepare("DELETE FROM datasync_journal WHERE store = ?"));
    CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
    CUTOVER_RETURN_IF_ERROR(st.Run());
  }
  {
    CUTOVER_ASSIGN_OR_RETURN(Statement st,
                             db_.Prepare("INSERT OR REPLACE INTO datasync_epochs VALUES (?, ?)"));
    CUTOVER_RETURN_IF_ERROR(st.Bind(1, store_url));
    CUTOVER_RETURN_IF_ERROR(st.Bind(2, epoch));
    CUTOVER_RETURN_IF_ERROR(st.Run());
  }
  return tx.Commit();
}

Status DatasyncState::RecordAudit(const AuditRecord& r) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("INSERT INTO datasync_audit (when_ns, who, what, source, destination, "
                  "snapshot, bytes, result) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, r.when_ns));
  CUTOVER_RETURN_IF_ERROR(st.Bind(2, r.who));
  CUTOVER_RETURN_IF_ERROR(st.Bind(3, r.what));
  CUTOVER_RETURN_IF_ERROR(st.Bind(4, r.source));
  CUTOVER_RETURN_IF_ERROR(st.Bind(5, r.destination));
  CUTOVER_RETURN_IF_ERROR(st.Bind(6, r.snapshot));
  CUTOVER_RETURN_IF_ERROR(st.Bind(7, r.bytes));
  CUTOVER_RETURN_IF_ERROR(st.Bind(8, r.result));
  return st.Run();
}

Result<std::vector<AuditRecord>> DatasyncState::History(int limit) {
  std::lock_guard<std::mutex> l(mu_);
  CUTOVER_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("SELECT when_ns, who, what, source, destination, snapshot, bytes, result "
                  "FROM datasync_audit ORDER BY id DESC LIMIT ?"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, limit));
  std::vector<AuditRecord> out;
  for (;;) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back({st.Int64(0), st.Text(1), st.Text(2), st.Text(3), st.Text(4), st.Text(5),
                   static_cast<uint64_t>(st.Int64(6)), st.Text(7)});
  }
  return out;
}

}  // namespace cutover
