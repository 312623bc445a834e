#include "probe/store.h"

#include <utility>

namespace cutover::probe {
namespace {

// Append-only: a change is a new migration, never an edit of a shipped one.
constexpr Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE fingerprints(
  id INTEGER PRIMARY KEY,
  host TEXT NOT NULL,
  collected_at TEXT NOT NULL,
  document TEXT NOT NULL);
CREATE INDEX fingerprints_host ON fingerprints(host, collected_at);
)sql"},
};

}  // namespace

Result<FingerprintStore> FingerprintStore::Open(const std::string& path) {
  CUTOVER_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::Open(path, "probe", kMigrations));
  return FingerprintStore(std::move(db));
}

std::string FingerprintStore::HostKey(const Fingerprint& fp) {
  if (fp.hostname && !fp.hostname->empty()) return *fp.hostname;
  return "root:" + fp.collection.root;
}

Result<int64_t> FingerprintStore::Add(const Fingerprint& fp) {
  if (!fp.collection.collected_at) {
    return Status::InvalidArgument("the fingerprint has no collection.collected_at to store it by");
  }
  CUTOVER_ASSIGN_OR_RETURN(
      Statement s,
      db_.Prepare("INSERT INTO fingerprints(host, collected_at, document) VALUES(?, ?, ?)"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, HostKey(fp)));
  CUTOVER_RETURN_IF_ERROR(s.Bind(2, *fp.collection.collected_at));
  CUTOVER_RETURN_IF_ERROR(s.Bind(3, FingerprintToJson(fp).dump()));
  CUTOVER_RETURN_IF_ERROR(s.Run());
  return db_.LastInsertRowId();
}

Result<std::vector<StoredFingerprint>> FingerprintStore::ForHost(const std::string& host) {
  CUTOVER_ASSIGN_OR_RETURN(Statement s,
                           db_.Prepare("SELECT id, host, collected_at, document FROM fingerprints "
                                       "WHERE host = ? ORDER BY collected_at, id"));
  CUTOVER_RETURN_IF_ERROR(s.Bind(1, host));
  std::vector<StoredFingerprint> out;
  while (true) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row) break;
    out.push_back({s.Int64(0), s.Text(1), s.Text(2), s.Text(3)});
  }
  return out;
}

}  // namespace cutover::probe
