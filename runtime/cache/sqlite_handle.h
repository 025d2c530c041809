// Small RAII owners for a SQLite connection and a prepared statement, and the conversion of
// SQLite result codes into lmrt Status values.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>

#include "runtime/util/status.h"

namespace lmrt::sqlite {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Resets and unbinds a reused statement when the scope ends, so its read transaction and bound
// blobs never outlive one use.
class StmtUse {
 public:
  explicit StmtUse(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StmtUse() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StmtUse(const StmtUse&) = delete;
  StmtUse& operator=(const StmtUse&) = delete;
  sqlite3_stmt* get() const { return stmt_; }

 private:
  sqlite3_stmt* stmt_;
};

// The primary result code (extended codes stripped).
inline int primary(int rc) { return rc & 0xff; }

// "what: <sqlite message> (code N)" as a Status with Code::cache.
Status error(sqlite3* db, int rc, const std::string& what);

Status prepare(sqlite3* db, const char* sql, Stmt* out, int* rc_out = nullptr);

// Runs SQL that returns no rows we need (one or more statements).
Status exec(sqlite3* db, const char* sql, int* rc_out = nullptr);

// Runs a statement returning one integer (e.g. "PRAGMA user_version").
Status query_int(sqlite3* db, const char* sql, int64_t* out, int* rc_out = nullptr);

// Runs a statement returning one text value (e.g. "PRAGMA journal_mode=WAL").
Status query_text(sqlite3* db, const char* sql, std::string* out, int* rc_out = nullptr);

// A "file:" URI for a file-system path, percent-encoding the characters URIs reserve, with the
// given query (e.g. "mode=ro").
std::string file_uri(const std::string& path, const std::string& query);

}  // namespace lmrt::sqlite
