#include "core/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "core/failpoint.h"
#include "core/file_util.h"

namespace cutover {
namespace sqlite_internal {

// The state shared by a SqliteDb and the Statements and Transactions made from it; lives on the
// heap so that moving a SqliteDb leaves their pointers valid.
struct Connection {
  ~Connection() {
    for (auto& [sql, stmt] : cache) sqlite3_finalize(stmt);
    sqlite3_close_v2(db);
  }

  sqlite3* db = nullptr;
  std::string path;
  // Idle prepared statements by SQL text. A statement in use is out of the map.
  std::unordered_map<std::string, sqlite3_stmt*> cache;
};

}  // namespace sqlite_internal

namespace {

using sqlite_internal::Connection;

constexpr size_t kMaxCachedStatements = 64;

// Maps a SQLite result code (extended or primary) to a Status for the database at `path`.
Status FromSqlite(int rc, const std::string& path, std::string_view message) {
  std::string m = path + ": " + std::string(message);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
      return Status::Unavailable(path + ": database is locked");
    case SQLITE_LOCKED:
      return Status::Unavailable(std::move(m));
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return Status::Corruption(std::move(m));
    case SQLITE_CONSTRAINT:
      return Status::FailedPrecondition(std::move(m));
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
      return Status::IoError(std::move(m));
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
      return Status::InvalidArgument(std::move(m));
    case SQLITE_INTERRUPT:
    case SQLITE_ABORT:
      return Status::Aborted(std::move(m));
    default:
      return Status::Internal(std::move(m));
  }
}

Status FromConnection(int rc, const Connection& c) {
  return FromSqlite(rc, c.path, sqlite3_errmsg(c.db));
}

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool IsMemoryPath(const std::string& path) { return path.empty() || path == ":memory:"; }

// Creates the database file with mode 0600 when it does not exist yet, and its parent directories.
Status CreateFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return Status::Ok();
  if (errno != ENOENT) {
    return Status::IoError(path + ": cannot stat: " + std::strerror(errno));
  }
  std::string dir = DirName(path);
  if (!dir.empty()) CUTOVER_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(path + ": cannot create: " + std::strerror(errno));
  ::close(fd);
  return Status::Ok();
}

Result<int> ReadUserVersion(Connection& c) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(c.db, "PRAGMA user_version", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return FromConnection(rc, c);
  rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW) {
    Status s = FromConnection(rc, c);
    sqlite3_finalize(stmt);
    return s;
  }
  int v = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  return v;
}

// Runs `sql`; on failure returns the SQLite code and sets *message.
int ExecRaw(Connection& c, std::string_view sql, std::string* message) {
  std::string text(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(c.db, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) *message = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return rc;
}

Status ExecOn(Connection& c, std::string_view sql) {
  std::string message;
  int rc = ExecRaw(c, sql, &message);
  if (rc == SQLITE_OK) return Status::Ok();
  return FromSqlite(rc, c.path, message);
}

void RollbackOn(Connection& c) {
  if (sqlite3_get_autocommit(c.db) == 0) {
    (void)sqlite3_exec(c.db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status Configure(Connection& c, const OpenOptions& opts) {
  sqlite3_extended_result_codes(c.db, 1);
  int rc = sqlite3_busy_timeout(c.db, opts.busy_timeout_ms < 0 ? 0 : opts.busy_timeout_ms);
  if (rc != SQLITE_OK) return FromConnection(rc, c);

  // The first statement that reads the file: a file that is not a database fails here.
  // Turning a new file to WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once,
  // without its busy handler, when another process is doing the same (two commands started
  // together on a fresh machine): retry it within the busy timeout, as the handler would.
  sqlite3_stmt* stmt = nullptr;
  rc = sqlite3_prepare_v2(c.db, "PRAGMA journal_mode=WAL", -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return FromConnection(rc, c);
  rc = sqlite3_step(stmt);
  for (int waited_ms = 0, pause_ms = 1;
       (rc & 0xff) == SQLITE_BUSY && waited_ms < opts.busy_timeout_ms;
       waited_ms += pause_ms, pause_ms = std::min(pause_ms * 2, 50)) {
    sqlite3_reset(stmt);
    sqlite3_sleep(pause_ms);
    rc = sqlite3_step(stmt);
  }
  std::string mode;
  if (rc == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    if (text != nullptr) mode = reinterpret_cast<const char*>(text);
  }
  Status s = rc == SQLITE_ROW ? Status::Ok() : FromConnection(rc, c);
  sqlite3_finalize(stmt);
  CUTOVER_RETURN_IF_ERROR(s);
  if (mode != "wal" && !IsMemoryPath(c.path)) {
    return Status::Environment(c.path + ": cannot use the WAL journal (journal mode is '" + mode +
                               "')");
  }
  CUTOVER_RETURN_IF_ERROR(ExecOn(c, "PRAGMA synchronous=FULL"));
  return ExecOn(c, "PRAGMA foreign_keys=ON");
}

// Runs a query that returns one integer (0 when it returns no row).
Result<int> QueryInt(Connection& c, const std::string& sql, std::string_view text_arg = {}) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(c.db, sql.c_str(), -1, &stmt, nullptr);
  if (rc != SQLITE_OK) return FromConnection(rc, c);
  if (!text_arg.empty()) {
    sqlite3_bind_text(stmt, 1, text_arg.data(), static_cast<int>(text_arg.size()),
                      SQLITE_TRANSIENT);
  }
  rc = sqlite3_step(stmt);
  int v = 0;
  if (rc == SQLITE_ROW) {
    v = sqlite3_column_int(stmt, 0);
  } else if (rc != SQLITE_DONE) {
    Status s = FromConnection(rc, c);
    sqlite3_finalize(stmt);
    return s;
  }
  sqlite3_finalize(stmt);
  return v;
}

// The name in the first "CREATE TABLE [IF NOT EXISTS] name" of `sql` (empty when none).
std::string FirstTable(std::string_view sql) {
  std::string upper(sql);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  size_t at = upper.find("CREATE TABLE");
  if (at == std::string::npos) return "";
  at += 12;
  auto skip_space = [&] {
    while (at < upper.size() && std::isspace(static_cast<unsigned char>(upper[at]))) ++at;
  };
  skip_space();
  if (upper.compare(at, 13, "IF NOT EXISTS") == 0) {
    at += 13;
    skip_space();
  }
  size_t end = at;
  while (end < sql.size() &&
         (std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_'))
    ++end;
  return std::string(sql.substr(at, end - at));
}

// The component's row in cutover_schema, or -1 when it has none. REQUIRES: the table exists.
Result<int> StoredVersion(Connection& c, std::string_view component) {
  return QueryInt(c,
                  "SELECT coalesce((SELECT version FROM cutover_schema WHERE component = ?), -1)",
                  component);
}

// The component's version in the file. Without a row of its own, a file written before versions
// were kept per component is adopted: its user_version is the component's when the component's
// first table exists. REQUIRES: cutover_schema exists.
Result<int> ComponentVersion(Connection& c, std::string_view component,
                             std::span<const Migration> migrations) {
  CUTOVER_ASSIGN_OR_RETURN(int stored, StoredVersion(c, component));
  if (stored >= 0) return stored;
  CUTOVER_ASSIGN_OR_RETURN(int legacy, ReadUserVersion(c));
  if (legacy == 0 || migrations.empty()) return 0;
  std::string table = FirstTable(migrations[0].sql);
  if (table.empty()) return 0;
  CUTOVER_ASSIGN_OR_RETURN(
      int exists,
      QueryInt(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table));
  return exists > 0 ? legacy : 0;
}

Status SetComponentVersion(Connection& c, std::string_view component, int version) {
  return ExecOn(c, "INSERT INTO cutover_schema(component, version) VALUES('" +
                       std::string(component) + "', " + std::to_string(version) +
                       ") ON CONFLICT(component) DO UPDATE SET version = excluded.version");
}

// In one transaction: makes cutover_schema, adopts a legacy version, and applies the pending
// migrations, unless another process got there first. Returns the component's version.
Result<int> Migrate(Connection& c, std::string_view component,
                    std::span<const Migration> migrations) {
  const int known = static_cast<int>(migrations.size());
  // Fast path, without taking the write lock: the component is up to date (or newer).
  CUTOVER_ASSIGN_OR_RETURN(
      int have_table,
      QueryInt(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
               "cutover_schema"));
  if (have_table > 0) {
    CUTOVER_ASSIGN_OR_RETURN(int v, StoredVersion(c, component));
    if (v >= known) return v;
  }
  CUTOVER_RETURN_IF_ERROR(ExecOn(c, "BEGIN IMMEDIATE"));
  Result<int> r = [&]() -> Result<int> {
    CUTOVER_RETURN_IF_ERROR(
        ExecOn(c,
               "CREATE TABLE IF NOT EXISTS cutover_schema(component TEXT PRIMARY KEY, "
               "version INTEGER NOT NULL) WITHOUT ROWID"));
    CUTOVER_ASSIGN_OR_RETURN(int current, ComponentVersion(c, component, migrations));
    for (int v = current + 1; v <= known; ++v) {
      const Migration& m = migrations[static_cast<size_t>(v - 1)];
      std::string message;
      int rc = ExecRaw(c, m.sql, &message);
      if (rc != SQLITE_OK) {
        return FromSqlite(
            rc, c.path,
            std::string(component) + " migration " + std::to_string(m.version) + ": " + message);
      }
    }
    if (current <= known) CUTOVER_RETURN_IF_ERROR(SetComponentVersion(c, component, known));
    CUTOVER_RETURN_IF_ERROR(ExecOn(c, "COMMIT"));
    return current;
  }();
  if (!r.ok()) RollbackOn(c);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SqliteDb

Result<SqliteDb> SqliteDb::Open(const std::string& path, std::string_view component,
                                std::span<const Migration> migrations, OpenOptions opts) {
  bool component_ok = !component.empty();
  for (char ch : component) {
    component_ok =
        component_ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
  }
  if (!component_ok) {
    return Status::Internal(path + ": bad schema component \"" + std::string(component) + "\"");
  }
  for (size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version != static_cast<int>(i) + 1 || migrations[i].sql == nullptr) {
      return Status::Internal(path + ": migrations must be numbered 1..N in order; entry " +
                              std::to_string(i + 1) + " has version " +
                              std::to_string(migrations[i].version));
    }
  }
  const int known = static_cast<int>(migrations.size());

  bool memory = IsMemoryPath(path);
  if (!memory && opts.must_exist && ::access(path.c_str(), F_OK) != 0) {
    return Status::NotFound(path + ": no state file there (nothing has been recorded yet)");
  }
  if (!memory) CUTOVER_RETURN_IF_ERROR(CreateFile(path));

  auto conn = std::make_shared<Connection>();
  conn->path = memory ? ":memory:" : path;
  int rc =
      sqlite3_open_v2(conn->path.c_str(), &conn->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = conn->db != nullptr ? sqlite3_errmsg(conn->db) : sqlite3_errstr(rc);
    return FromSqlite(rc, conn->path, "cannot open database: " + message);
  }
  CUTOVER_RETURN_IF_ERROR(Configure(*conn, opts));

  CUTOVER_ASSIGN_OR_RETURN(int version, Migrate(*conn, component, migrations));
  if (version > known) {
    return Status::FailedPrecondition(
        conn->path + ": " + std::string(component) + " schema version " + std::to_string(version) +
        " is newer than this cutover knows (" + std::to_string(known) + "); upgrade cutover");
  }
  return SqliteDb(std::move(conn), std::string(component));
}

Status SqliteDb::Exec(std::string_view sql) {
  if (conn_ == nullptr) return Status::Internal("use of a moved-from SqliteDb");
  return ExecOn(*conn_, sql);
}

Result<Statement> SqliteDb::Prepare(std::string_view sql) {
  if (conn_ == nullptr) return Status::Internal("use of a moved-from SqliteDb");
  std::string key(sql);
  auto it = conn_->cache.find(key);
  if (it != conn_->cache.end()) {
    sqlite3_stmt* stmt = it->second;
    conn_->cache.erase(it);
    return Statement(conn_, std::move(key), stmt);
  }
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(conn_->db, key.data(), static_cast<int>(key.size()), &stmt, &tail);
  if (rc != SQLITE_OK) return FromConnection(rc, *conn_);
  if (stmt == nullptr) {
    return Status::InvalidArgument(conn_->path + ": no SQL statement in '" + key + "'");
  }
  for (const char* p = tail; p != nullptr && p < key.data() + key.size(); ++p) {
    if (*p != ' ' && *p != '\n' && *p != '\t' && *p != '\r' && *p != ';') {
      sqlite3_finalize(stmt);
      return Status::InvalidArgument(conn_->path + ": Prepare takes one statement, got more in '" +
                                     key + "'");
    }
  }
  return Statement(conn_, std::move(key), stmt);
}

Result<int> SqliteDb::SchemaVersion() {
  if (conn_ == nullptr) return Status::Internal("use of a moved-from SqliteDb");
  return QueryInt(*conn_, "SELECT version FROM cutover_schema WHERE component = ?", component_);
}

int64_t SqliteDb::LastInsertRowId() const { return sqlite3_last_insert_rowid(conn_->db); }

int SqliteDb::Changes() const { return sqlite3_changes(conn_->db); }

bool SqliteDb::InTransaction() const { return sqlite3_get_autocommit(conn_->db) == 0; }

const std::string& SqliteDb::path() const { return conn_->path; }

sqlite3* SqliteDb::raw() const { return conn_->db; }

// ---------------------------------------------------------------------------------------------
// Statement

Statement::Statement(std::shared_ptr<Connection> conn, std::string sql, sqlite3_stmt* stmt)
    : conn_(std::move(conn)), sql_(std::move(sql)), stmt_(stmt) {}

Statement::Statement(Statement&& other) noexcept
    : conn_(std::move(other.conn_)),
      sql_(std::move(other.sql_)),
      stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    Release();
    conn_ = std::move(other.conn_);
    sql_ = std::move(other.sql_);
    stmt_ = std::exchange(other.stmt_, nullptr);
  }
  return *this;
}

Statement::~Statement() { Release(); }

void Statement::Release() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  if (conn_->cache.size() < kMaxCachedStatements && conn_->cache.count(sql_) == 0) {
    conn_->cache.emplace(std::move(sql_), stmt_);
  } else {
    sqlite3_finalize(stmt_);
  }
  stmt_ = nullptr;
  conn_.reset();
}

Status Statement::BindResult(int index, int rc) {
  if (rc == SQLITE_OK) return Status::Ok();
  return FromSqlite(rc, conn_->path,
                    "bind parameter " + std::to_string(index) + ": " + sqlite3_errstr(rc));
}

Status Statement::BindInt64(int index, int64_t value) {
  return BindResult(index, sqlite3_bind_int64(stmt_, index, value));
}

Status Statement::Bind(int index, double value) {
  return BindResult(index, sqlite3_bind_double(stmt_, index, value));
}

Status Statement::Bind(int index, std::string_view text) {
  // A null data pointer would bind NULL; an empty view binds an empty text.
  const char* data = text.data() != nullptr ? text.data() : "";
  return BindResult(
      index, sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

Status Statement::Bind(int index, std::span<const uint8_t> blob) {
  if (blob.empty()) return BindResult(index, sqlite3_bind_zeroblob(stmt_, index, 0));
  return BindResult(index,
                    sqlite3_bind_blob64(stmt_, index, blob.data(), blob.size(), SQLITE_TRANSIENT));
}

Status Statement::Bind(int index, std::nullptr_t) {
  return BindResult(index, sqlite3_bind_null(stmt_, index));
}

Result<bool> Statement::Step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status s = FromConnection(rc, *conn_);
  sqlite3_reset(stmt_);
  return s;
}

Status Statement::Run() {
  for (;;) {
    CUTOVER_ASSIGN_OR_RETURN(bool row, Step());
    if (!row) return Status::Ok();
  }
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }

bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Statement::Int64(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::Double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::Text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

std::vector<uint8_t> Statement::Blob(int col) const {
  const void* p = sqlite3_column_blob(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr || n <= 0) return {};
  const auto* b = static_cast<const uint8_t*>(p);
  return std::vector<uint8_t>(b, b + n);
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

// ---------------------------------------------------------------------------------------------
// Transaction

Result<Transaction> Transaction::Begin(SqliteDb& db, Mode mode) {
  if (db.conn_ == nullptr) return Status::Internal("use of a moved-from SqliteDb");
  const char* sql = mode == Mode::kImmediate   ? "BEGIN IMMEDIATE"
                    : mode == Mode::kExclusive ? "BEGIN EXCLUSIVE"
                                               : "BEGIN DEFERRED";
  CUTOVER_RETURN_IF_ERROR(ExecOn(*db.conn_, sql));
  return Transaction(db.conn_);
}

Transaction::Transaction(Transaction&& other) noexcept
    : conn_(std::move(other.conn_)), done_(std::exchange(other.done_, true)) {}

Transaction& Transaction::operator=(Transaction&& other) noexcept {
  if (this != &other) {
    RollbackIfOpen();
    conn_ = std::move(other.conn_);
    done_ = std::exchange(other.done_, true);
  }
  return *this;
}

Transaction::~Transaction() { RollbackIfOpen(); }

void Transaction::RollbackIfOpen() {
  if (!done_ && conn_ != nullptr) RollbackOn(*conn_);
  done_ = true;
  conn_.reset();
}

Status Transaction::Commit() {
  if (done_ || conn_ == nullptr) return Status::Internal("Commit of a finished transaction");
  CUTOVER_FAILPOINT_RETURN("sqlite.commit.before");
  CUTOVER_RETURN_IF_ERROR(ExecOn(*conn_, "COMMIT"));
  done_ = true;
  CUTOVER_FAILPOINT("sqlite.commit.after");
  return Status::Ok();
}

}  // namespace cutover
