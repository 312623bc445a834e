#include "core/sqlite_store.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/failpoint.h"
#include "core/file_util.h"
#include "tests/harness/test_env.h"

namespace cutover {
namespace {

using ::cutover::testing::TempDir;

constexpr Migration kV1[] = {
    {1, "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"},
};
constexpr Migration kV2[] = {
    {1, "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"},
    {2,
     "ALTER TABLE item ADD COLUMN size INTEGER NOT NULL DEFAULT 0;"
     "CREATE TABLE tag (item_id INTEGER NOT NULL REFERENCES item(id), tag TEXT NOT NULL);"},
};

// Opens or fails the test.
SqliteDb MustOpen(const std::string& path, std::span<const Migration> migrations,
                  OpenOptions opts = {}) {
  Result<SqliteDb> db = SqliteDb::Open(path, "test", migrations, opts);
  EXPECT_TRUE(db.ok()) << db.status().ToString();
  if (!db.ok()) std::abort();
  return std::move(db).value();
}

// Runs a single-value query returning an integer; -1 on any error (with a test failure).
int64_t QueryInt(SqliteDb& db, const std::string& sql) {
  Result<Statement> st = db.Prepare(sql);
  if (!st.ok()) {
    ADD_FAILURE() << st.status().ToString();
    return -1;
  }
  Result<bool> row = st->Step();
  if (!row.ok() || !*row) {
    ADD_FAILURE() << "no row for " << sql << ": " << row.status().ToString();
    return -1;
  }
  return st->Int64(0);
}

Status InsertItem(SqliteDb& db, std::string_view name) {
  CUTOVER_ASSIGN_OR_RETURN(Statement st, db.Prepare("INSERT INTO item (name) VALUES (?1)"));
  CUTOVER_RETURN_IF_ERROR(st.Bind(1, name));
  return st.Run();
}

// Runs `body` in a forked child and returns its wait status. The child never returns into gtest.
int InChild(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

TEST(SqliteStoreTest, MigrationsApplyInOrderAndKeepData) {
  TempDir tmp;
  const std::string path = tmp.Join("state.db");
  {
    SqliteDb db = MustOpen(path, kV1);
    EXPECT_EQ(*db.SchemaVersion(), 1);
    ASSERT_TRUE(InsertItem(db, "alpha").ok());
    ASSERT_TRUE(InsertItem(db, "beta").ok());
  }
  {
    SqliteDb db = MustOpen(path, kV2);
    EXPECT_EQ(*db.SchemaVersion(), 2);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item"), 2);
    // Migration 2's column and table exist.
    ASSERT_TRUE(db.Exec("UPDATE item SET size = 7 WHERE name = 'alpha'").ok());
    ASSERT_TRUE(db.Exec("INSERT INTO tag VALUES (1, 'x')").ok());
  }
  {
    // Reopening at the same version changes nothing.
    SqliteDb db = MustOpen(path, kV2);
    EXPECT_EQ(*db.SchemaVersion(), 2);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item"), 2);
    EXPECT_EQ(QueryInt(db, "SELECT size FROM item WHERE name = 'alpha'"), 7);
    EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM tag"), 1);
  }
}

TEST(SqliteStoreTest, NewerSchemaIsRefused) {
  TempDir tmp;
  const std::string path = tmp.Join("state.db");
  {
    SqliteDb db = MustOpen(path, kV2);
    ASSERT_TRUE(db.Exec("UPDATE cutover_schema SET version = 7 WHERE component = 'test'").ok());
  }
  Result<SqliteDb> db = SqliteDb::Open(path, "test", kV2);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(db.status().message(),
            path + ": test schema version 7 is newer than this cutover knows (2); upgrade cutover");
}

// The tools share one state file: each component's tables and version are its own.
constexpr Migration kOther[] = {
    {1, "CREATE TABLE other_rows (x INTEGER);"},
    {2, "CREATE TABLE other_more (y INTEGER);"},
};

TEST(SqliteStoreTest, ComponentsSharingAFileEachGetTheirTables) {
  TempDir tmp;
  const std::string path = tmp.Join("state.db");
  {
    SqliteDb a = MustOpen(path, kV2);
    ASSERT_TRUE(InsertItem(a, "alpha").ok());
  }
  Result<SqliteDb> b = SqliteDb::Open(path, "other", kOther);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(*b->SchemaVersion(), 2);
  EXPECT_TRUE(b->Exec("INSERT INTO other_rows VALUES (1); INSERT INTO other_more VALUES (2)").ok());
  SqliteDb a = MustOpen(path, kV2);
  EXPECT_EQ(*a.SchemaVersion(), 2);
  EXPECT_EQ(QueryInt(a, "SELECT count(*) FROM item"), 1);
  EXPECT_EQ(QueryInt(a, "SELECT count(*) FROM cutover_schema"), 2);
}

// A file from a build that kept one PRAGMA user_version for the whole file: the component whose
// first table exists adopts it (and migrates on from there); any other starts from 0.
TEST(SqliteStoreTest, LegacyUserVersionIsAdoptedByItsOwner) {
  TempDir tmp;
  const std::string path = tmp.Join("legacy.db");
  {
    const Migration none[] = {{1, "SELECT 1"}};
    SqliteDb db = MustOpen(path, none);  // creates the file and cutover_schema
    ASSERT_TRUE(db.Exec("DROP TABLE cutover_schema;"
                        "CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);"
                        "INSERT INTO item(name) VALUES ('kept');"
                        "PRAGMA user_version = 1;")
                    .ok());
  }
  SqliteDb owner = MustOpen(path, kV2);
  EXPECT_EQ(*owner.SchemaVersion(), 2) << "adopted version 1, then migration 2 applied";
  EXPECT_EQ(QueryInt(owner, "SELECT count(*) FROM item"), 1);
  EXPECT_EQ(QueryInt(owner, "SELECT count(*) FROM sqlite_master WHERE name = 'tag'"), 1);
  Result<SqliteDb> other = SqliteDb::Open(path, "other", kOther);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_EQ(QueryInt(*other, "SELECT count(*) FROM sqlite_master WHERE name = 'other_more'"), 1);
}

TEST(SqliteStoreTest, BadComponentNameIsRefused) {
  Result<SqliteDb> db = SqliteDb::Open(":memory:", "Bad-Name", kV1);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kInternal);
}

TEST(SqliteStoreTest, FailedMigrationIsRolledBack) {
  TempDir tmp;
  const std::string path = tmp.Join("state.db");
  { SqliteDb db = MustOpen(path, kV1); }
  const Migration broken[] = {
      kV1[0],
      {2, "CREATE TABLE extra (x INTEGER); INSERT INTO nowhere VALUES (1);"},
  };
  Result<SqliteDb> db = SqliteDb::Open(path, "test", broken);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kInternal);
  EXPECT_EQ(db.status().message(), path + ": test migration 2: no such table: nowhere");
  SqliteDb again = MustOpen(path, kV1);
  EXPECT_EQ(*again.SchemaVersion(), 1);
  EXPECT_EQ(QueryInt(again, "SELECT count(*) FROM sqlite_master WHERE name = 'extra'"), 0);
}

TEST(SqliteStoreTest, MigrationsMustBeNumberedFromOne) {
  const Migration gap[] = {{1, "SELECT 1"}, {3, "SELECT 1"}};
  Result<SqliteDb> db = SqliteDb::Open(":memory:", "test", gap);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kInternal);
  EXPECT_EQ(db.status().message(),
            ":memory:: migrations must be numbered 1..N in order; entry 2 has version 3");
}

TEST(SqliteStoreTest, GarbageFileIsCorruption) {
  TempDir tmp;
  const std::string path = tmp.Join("garbage.db");
  std::string junk;
  while (junk.size() < 8192) junk += "this is not a sqlite database, just some text. ";
  ASSERT_TRUE(WriteFileAtomic(path, junk).ok());
  Result<SqliteDb> db = SqliteDb::Open(path, "test", kV1);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), Code::kCorruption);
  EXPECT_EQ(db.status().message(), path + ": file is not a database");
}

TEST(SqliteStoreTest, CreatesParentsAndFilesPrivately) {
  TempDir tmp;
  const std::string dir = tmp.Join("a/b");
  const std::string path = dir + "/state.db";
  SqliteDb db = MustOpen(path, kV1);
  ASSERT_TRUE(InsertItem(db, "alpha").ok());
  EXPECT_EQ(ModeOf(path), 0600u);
  // WAL mode: the -wal and -shm files exist while the connection is open, with the db's mode.
  EXPECT_EQ(ModeOf(path + "-wal"), 0600u);
  EXPECT_EQ(ModeOf(path + "-shm"), 0600u);
  EXPECT_EQ(ModeOf(dir), 0700u);
  Result<Statement> mode = db.Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok());
  ASSERT_TRUE(*mode->Step());
  EXPECT_EQ(mode->Text(0), "wal");
  EXPECT_EQ(QueryInt(db, "PRAGMA synchronous"), 2);  // FULL
  EXPECT_EQ(QueryInt(db, "PRAGMA foreign_keys"), 1);
}

TEST(SqliteStoreTest, ForeignKeysAreEnforced) {
  SqliteDb db = MustOpen(":memory:", kV2);
  Status s = db.Exec("INSERT INTO tag VALUES (42, 'x')");
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), ":memory:: FOREIGN KEY constraint failed");
}

TEST(SqliteStoreTest, TransactionRollsBackWhenDestroyed) {
  TempDir tmp;
  SqliteDb db = MustOpen(tmp.Join("state.db"), kV1);
  {
    Result<Transaction> txn = Transaction::Begin(db);
    ASSERT_TRUE(txn.ok()) << txn.status().ToString();
    EXPECT_TRUE(db.InTransaction());
    ASSERT_TRUE(InsertItem(db, "dropped").ok());
  }
  EXPECT_FALSE(db.InTransaction());
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item"), 0);
  {
    Result<Transaction> txn = Transaction::Begin(db, Transaction::Mode::kDeferred);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(InsertItem(db, "kept").ok());
    ASSERT_TRUE(txn->Commit().ok());
    Status again = txn->Commit();
    EXPECT_EQ(again.code(), Code::kInternal);
    EXPECT_EQ(again.message(), "Commit of a finished transaction");
  }
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item WHERE name = 'kept'"), 1);
}

TEST(SqliteStoreTest, CommitFailpointErrorLeavesNothing) {
  SqliteDb db = MustOpen(":memory:", kV1);
  ASSERT_TRUE(failpoint::Configure("sqlite.commit.before:error").ok());
  {
    Result<Transaction> txn = Transaction::Begin(db);
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(InsertItem(db, "lost").ok());
    Status s = txn->Commit();
    EXPECT_EQ(s.code(), Code::kIoError);
    EXPECT_EQ(s.message(), "failpoint sqlite.commit.before");
  }
  ASSERT_TRUE(failpoint::Configure("").ok());
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item"), 0);
}

TEST(SqliteStoreTest, BindStepColumnRoundTripsEveryType) {
  SqliteDb db = MustOpen(":memory:", {});
  ASSERT_TRUE(db.Exec("CREATE TABLE v (i INTEGER, d REAL, t TEXT, b BLOB, n)").ok());
  const std::string text("a\0b\xc3\xa9", 5);
  const std::vector<uint8_t> blob = {0x00, 0x01, 0x00, 0xff, 0x00};
  {
    Result<Statement> ins = db.Prepare("INSERT INTO v VALUES (?1, ?2, ?3, ?4, ?5)");
    ASSERT_TRUE(ins.ok()) << ins.status().ToString();
    ASSERT_TRUE(ins->Bind(1, std::numeric_limits<int64_t>::min()).ok());
    ASSERT_TRUE(ins->Bind(2, -0.125).ok());
    ASSERT_TRUE(ins->Bind(3, std::string_view(text)).ok());
    ASSERT_TRUE(ins->Bind(4, std::span<const uint8_t>(blob)).ok());
    ASSERT_TRUE(ins->Bind(5, nullptr).ok());
    ASSERT_TRUE(ins->Run().ok());
    EXPECT_EQ(db.LastInsertRowId(), 1);
    EXPECT_EQ(db.Changes(), 1);
    // The same statement again, after Reset, with empty text and an empty blob.
    ins->Reset();
    ASSERT_TRUE(ins->Bind(1, std::numeric_limits<int64_t>::max()).ok());
    ASSERT_TRUE(ins->Bind(2, 1e300).ok());
    ASSERT_TRUE(ins->Bind(3, std::string_view()).ok());
    ASSERT_TRUE(ins->Bind(4, std::span<const uint8_t>()).ok());
    ASSERT_TRUE(ins->Bind(5, true).ok());
    ASSERT_TRUE(ins->Run().ok());
    EXPECT_EQ(db.LastInsertRowId(), 2);
  }
  Result<Statement> sel =
      db.Prepare("SELECT i, d, t, b, n, typeof(t), typeof(b), typeof(n) FROM v ORDER BY rowid");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->ColumnCount(), 8);
  ASSERT_TRUE(*sel->Step());
  EXPECT_EQ(sel->Int64(0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(sel->Double(1), -0.125);
  EXPECT_EQ(sel->Text(2), text);
  EXPECT_EQ(sel->Blob(3), blob);
  EXPECT_TRUE(sel->IsNull(4));
  EXPECT_FALSE(sel->IsNull(3));
  EXPECT_EQ(sel->Int64(4), 0);
  EXPECT_EQ(sel->Text(7), "null");
  ASSERT_TRUE(*sel->Step());
  EXPECT_EQ(sel->Int64(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(sel->Double(1), 1e300);
  EXPECT_EQ(sel->Text(2), "");
  EXPECT_TRUE(sel->Blob(3).empty());
  EXPECT_EQ(sel->Text(5), "text");  // empty, not NULL
  EXPECT_EQ(sel->Text(6), "blob");
  EXPECT_EQ(sel->Int64(4), 1);
  EXPECT_FALSE(*sel->Step());
}

TEST(SqliteStoreTest, ErrorsCarryPathAndSqliteMessage) {
  TempDir tmp;
  const std::string path = tmp.Join("state.db");
  SqliteDb db = MustOpen(path, kV1);
  Result<Statement> bad = db.Prepare("SELEC 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInternal);
  EXPECT_EQ(bad.status().message(), path + ": near \"SELEC\": syntax error");

  Result<Statement> two = db.Prepare("SELECT 1; SELECT 2");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(two.status().message(),
            path + ": Prepare takes one statement, got more in 'SELECT 1; SELECT 2'");

  ASSERT_TRUE(InsertItem(db, "alpha").ok());
  Status dup = InsertItem(db, "alpha");
  EXPECT_EQ(dup.code(), Code::kFailedPrecondition);
  EXPECT_EQ(dup.message(), path + ": UNIQUE constraint failed: item.name");

  Result<Statement> st = db.Prepare("SELECT ?1");
  ASSERT_TRUE(st.ok());
  Status range = st->Bind(2, 1);
  EXPECT_EQ(range.code(), Code::kInvalidArgument);
  EXPECT_EQ(range.message(), path + ": bind parameter 2: column index out of range");
}

TEST(SqliteStoreTest, StatementsAreCachedAndOutliveAMove) {
  SqliteDb db = MustOpen(":memory:", kV1);
  const std::string sql = "SELECT count(*) FROM item WHERE name <> ?1";
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(InsertItem(db, "n" + std::to_string(i)).ok());
    Result<Statement> st = db.Prepare(sql);
    ASSERT_TRUE(st.ok());
    ASSERT_TRUE(st->Bind(1, "n0").ok());
    ASSERT_TRUE(*st->Step());
    EXPECT_EQ(st->Int64(0), i);  // a cached statement comes back reset, its bindings cleared
  }
  // Two live statements with the same SQL are independent.
  Result<Statement> a = db.Prepare("SELECT name FROM item ORDER BY name");
  Result<Statement> b = db.Prepare("SELECT name FROM item ORDER BY name");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(*a->Step());
  ASSERT_TRUE(*a->Step());
  ASSERT_TRUE(*b->Step());
  EXPECT_EQ(a->Text(0), "n1");
  EXPECT_EQ(b->Text(0), "n0");
  // Moving the database leaves its statements working.
  SqliteDb moved = std::move(db);
  ASSERT_TRUE(*a->Step());
  EXPECT_EQ(a->Text(0), "n2");
  EXPECT_EQ(QueryInt(moved, "SELECT count(*) FROM item"), 3);
}

TEST(SqliteStoreTest, ConcurrentWritersFromFourProcesses) {
  TempDir tmp;
  const std::string path = tmp.Join("shared.db");
  // Created and closed before the fork: children must not inherit an open connection.
  { SqliteDb db = MustOpen(path, kV1); }
  constexpr int kProcs = 4;
  constexpr int kRows = 200;
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcs; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      // SQLite's busy handler is not fair: under load one writer may wait several seconds while
      // the others take turns, so the children wait longer than the default 5 s.
      Result<SqliteDb> db =
          SqliteDb::Open(path, "test", kV1, OpenOptions{.busy_timeout_ms = 60000});
      if (!db.ok()) ::_exit(10);
      for (int r = 0; r < kRows; ++r) {
        Result<Transaction> txn = Transaction::Begin(*db, Transaction::Mode::kImmediate);
        if (!txn.ok()) {
          std::fprintf(stderr, "writer %d: %s\n", p, txn.status().ToString().c_str());
          ::_exit(11);
        }
        if (!InsertItem(*db, "p" + std::to_string(p) + "-" + std::to_string(r)).ok()) ::_exit(12);
        if (!txn->Commit().ok()) ::_exit(13);
      }
      ::_exit(0);
    }
    ASSERT_GT(pid, 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  SqliteDb db = MustOpen(path, kV1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item"), kProcs * kRows);
  EXPECT_EQ(QueryInt(db, "SELECT count(DISTINCT substr(name, 1, 2)) FROM item"), kProcs);
}

// Two commands started together on a fresh machine both open a state file that does not exist
// yet. Turning it to WAL answered SQLITE_BUSY at once in about 3% of such races (SQLite does not
// call its busy handler there): every open must succeed. The two children start on one event
// (the parent closing a pipe), over many fresh files.
TEST(SqliteStoreTest, TwoProcessesCreatingOneFileAtOnceBothOpenIt) {
  TempDir tmp;
  constexpr int kRounds = 150;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = tmp.Join("fresh" + std::to_string(round) + ".db");
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> pids;
    for (int p = 0; p < 2; ++p) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(go[1]);
        char byte;
        (void)::read(go[0], &byte, 1);  // returns 0 when the parent closes its end
        Result<SqliteDb> db = SqliteDb::Open(path, "test", kV1);
        if (!db.ok()) {
          std::fprintf(stderr, "round %d child %d: %s\n", round, p, db.status().ToString().c_str());
          ::_exit(10);
        }
        ::_exit(0);
      }
      ASSERT_GT(pid, 0);
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "round " << round << ": child status " << status;
    }
  }
}

TEST(SqliteStoreTest, LockHeldPastTimeoutIsUnavailable) {
  TempDir tmp;
  const std::string path = tmp.Join("locked.db");
  SqliteDb holder = MustOpen(path, kV1);
  Result<Transaction> held = Transaction::Begin(holder);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(InsertItem(holder, "pending").ok());

  SqliteDb other = MustOpen(path, kV1, OpenOptions{.busy_timeout_ms = 0});
  Result<Transaction> blocked = Transaction::Begin(other);
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.status().code(), Code::kUnavailable);
  EXPECT_EQ(blocked.status().message(), path + ": database is locked");
  // Readers still see the last committed state while the writer holds its lock.
  EXPECT_EQ(QueryInt(other, "SELECT count(*) FROM item"), 0);

  ASSERT_TRUE(held->Commit().ok());
  Result<Transaction> now = Transaction::Begin(other);
  EXPECT_TRUE(now.ok()) << now.status().ToString();
}

TEST(SqliteStoreTest, KillBeforeCommitLosesOnlyThatTransaction) {
  TempDir tmp;
  const std::string path = tmp.Join("crash.db");
  for (const char* point : {"sqlite.commit.before", "sqlite.commit.after"}) {
    int status = InChild([&] {
      Result<SqliteDb> db = SqliteDb::Open(path, "test", kV1);
      if (!db.ok()) return 10;
      Result<Transaction> txn = Transaction::Begin(*db);
      if (!txn.ok() || !InsertItem(*db, point).ok()) return 11;
      if (!failpoint::Configure(std::string(point) + ":kill").ok()) return 12;
      (void)txn->Commit();
      return 0;  // not reached: the point kills the process
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << point << ": status " << status;
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }
  SqliteDb db = MustOpen(path, kV1);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item WHERE name = 'sqlite.commit.before'"), 0);
  EXPECT_EQ(QueryInt(db, "SELECT count(*) FROM item WHERE name = 'sqlite.commit.after'"), 1);
}

}  // namespace
}  // namespace cutover
