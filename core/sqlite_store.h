// The SQLite store: a thin, Status-returning layer over the SQLite C API that every tool uses for
// its local state (datasync resume state and files cache, canary history, stored results).
//
// A database is opened by a component ("datasync", "canary", ...) with that component's list of
// schema migrations; Open brings the component's tables up to its newest one, the pending
// migrations in one transaction together with the component's row in the table
// cutover_schema(component, version), and refuses a file in which that component is newer than this
// cutover. The version is kept per component because the tools share one state file (--db): with
// one version for the whole file (PRAGMA user_version, before 0.1.1) the second tool to open a file
// found the first one's number and never created its own tables. A file from then is adopted: its
// user_version belongs to the component whose first table exists. Every connection runs with:
//   journal_mode=WAL     readers do not block the writer; several processes may share the file
//   synchronous=FULL     each commit fsyncs the WAL. WAL with NORMAL already survives kill -9 (the
//                        crash tests' model); FULL also keeps a committed transaction across a
//                        power cut, which resume state promises, for one fsync per commit
//   foreign_keys=ON
//   busy timeout         OpenOptions::busy_timeout_ms; a lock still held after it is Unavailable
// The file is created with mode 0600 (SQLite gives its -wal and -shm files the same mode), and
// missing parent directories with mode 0700.
//
// Every SQLite error becomes a Status whose message starts with the database path and carries
// SQLite's own message: SQLITE_BUSY -> Unavailable "<path>: database is locked", a file that is
// not a database -> Corruption, constraint violations -> FailedPrecondition, I/O -> IoError,
// errors in our own SQL -> Internal.
//
// Thread-safety: a SqliteDb and the Statements and Transactions made from it belong to one thread
// at a time (open one SqliteDb per thread). Several processes may open the same file at once;
// SQLite's file locks and the busy timeout serialize their writers. Do not use a connection
// across fork(): a child opens its own, and only of a file the parent had no connection to at the
// fork (SQLite keeps its lock bookkeeping per process, and the child inherits a copy of it).
#ifndef CUTOVER_CORE_SQLITE_STORE_H_
#define CUTOVER_CORE_SQLITE_STORE_H_

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cutover {

// One schema step. Migrations are numbered 1..N in order; `sql` may hold several statements.
struct Migration {
  int version;
  const char* sql;
};

struct OpenOptions {
  // How long a statement waits for another connection's lock before failing with Unavailable.
  int busy_timeout_ms = 5000;
  // For commands that only read (status, history): NotFound "<path>: no state file there
  // (nothing has been recorded yet)" instead of creating the file or its directories.
  bool must_exist = false;
};

namespace sqlite_internal {
struct Connection;
}  // namespace sqlite_internal

// A prepared statement. Made by SqliteDb::Prepare; movable, not copyable. Parameter indexes are
// 1-based (as in SQLite), column indexes 0-based. Keeps its connection alive while it exists.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  // Resets the statement and hands it back to the connection's cache.
  ~Statement();

  // Binds parameter `index`. Text and blobs are copied. An empty string binds an empty text and an
  // empty span an empty blob, never NULL. InvalidArgument for an index out of range.
  // Any integer type (bool included) binds as a 64-bit integer; uint64_t above INT64_MAX wraps.
  template <std::integral T>
  Status Bind(int index, T value) {
    return BindInt64(index, static_cast<int64_t>(value));
  }
  Status Bind(int index, double value);
  Status Bind(int index, std::string_view text);
  Status Bind(int index, const char* text) { return Bind(index, std::string_view(text)); }
  Status Bind(int index, std::span<const uint8_t> blob);
  Status Bind(int index, std::nullptr_t);

  // Runs the statement to its next row: true when a row is ready for the column getters, false
  // when the statement is done.
  Result<bool> Step();
  // Steps until done, discarding any rows (for INSERT/UPDATE/DELETE).
  Status Run();

  // Column getters for the current row. REQUIRES: the last Step returned true and
  // 0 <= col < ColumnCount(). NULL reads as 0, 0.0, "" or an empty blob.
  int ColumnCount() const;
  bool IsNull(int col) const;
  int64_t Int64(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::vector<uint8_t> Blob(int col) const;

  // Rewinds the statement so it can run again and clears its bindings.
  void Reset();

 private:
  friend class SqliteDb;
  Statement(std::shared_ptr<sqlite_internal::Connection> conn, std::string sql, sqlite3_stmt* stmt);
  Status BindInt64(int index, int64_t value);
  Status BindResult(int index, int rc);
  void Release();

  std::shared_ptr<sqlite_internal::Connection> conn_;
  std::string sql_;
  sqlite3_stmt* stmt_ = nullptr;
};

// An open database connection. RAII: closed when destroyed (once no Statement or Transaction made
// from it is left). Movable, not copyable.
class SqliteDb {
 public:
  // Opens (creating when absent) the database at `path` and applies `component`'s pending
  // `migrations`. `path` may be ":memory:" for a private in-memory database. Errors:
  //   FailedPrecondition  the component's version in the file is newer than its last migration
  //   Corruption          the file is not a SQLite database
  //   Unavailable         another connection held a lock longer than the busy timeout
  //   Internal            `migrations` are not numbered 1..N, or `component` is not [a-z0-9_]+
  static Result<SqliteDb> Open(const std::string& path, std::string_view component,
                               std::span<const Migration> migrations, OpenOptions opts = {});

  SqliteDb(SqliteDb&& other) noexcept = default;
  SqliteDb& operator=(SqliteDb&& other) noexcept = default;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  ~SqliteDb() = default;

  // Runs one or more statements that return no rows of interest.
  Status Exec(std::string_view sql);

  // Prepares one statement (trailing whitespace and `;` allowed). Statements are cached per
  // connection by their SQL text, so preparing the same SQL again is cheap.
  Result<Statement> Prepare(std::string_view sql);

  // The schema version of the component this connection was opened for.
  Result<int> SchemaVersion();

  // The rowid of the last successful INSERT on this connection, and the rows changed by the last
  // INSERT/UPDATE/DELETE.
  int64_t LastInsertRowId() const;
  int Changes() const;

  // True while a transaction is open on this connection.
  bool InTransaction() const;

  const std::string& path() const;

  // The raw handle, for SQLite features this class does not wrap. Stays owned by the SqliteDb.
  sqlite3* raw() const;

 private:
  friend class Transaction;
  SqliteDb(std::shared_ptr<sqlite_internal::Connection> conn, std::string component)
      : conn_(std::move(conn)), component_(std::move(component)) {}

  std::shared_ptr<sqlite_internal::Connection> conn_;
  std::string component_;
};

// An RAII transaction: rolled back when destroyed without a successful Commit. Movable.
class Transaction {
 public:
  enum class Mode {
    kDeferred,   // takes locks on first use
    kImmediate,  // takes the write lock now (waiting up to the busy timeout): use for writers
    kExclusive,
  };

  // Begins a transaction on `db`. Unavailable when the write lock stays held past the busy timeout.
  static Result<Transaction> Begin(SqliteDb& db, Mode mode = Mode::kImmediate);

  Transaction(Transaction&& other) noexcept;
  Transaction& operator=(Transaction&& other) noexcept;
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();

  // Commits. Failpoints: "sqlite.commit.before" (may return its error), "sqlite.commit.after".
  // On failure the transaction is rolled back when it is destroyed.
  Status Commit();

 private:
  explicit Transaction(std::shared_ptr<sqlite_internal::Connection> conn)
      : conn_(std::move(conn)) {}
  void RollbackIfOpen();

  std::shared_ptr<sqlite_internal::Connection> conn_;
  bool done_ = false;
};

}  // namespace cutover

#endif  // CUTOVER_CORE_SQLITE_STORE_H_
