#include "runtime/cache/sqlite_handle.h"

namespace lmrt::sqlite {

Status error(sqlite3* db, int rc, const std::string& what) {
  std::string msg = what + ": ";
  // The connection's message describes the last failure on it; a null connection has only the code.
  msg += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  msg += " (sqlite code " + std::to_string(rc) + ")";
  return Error(Code::cache, std::move(msg));
}

Status prepare(sqlite3* db, const char* sql, Stmt* out, int* rc_out) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc_out != nullptr) *rc_out = rc;
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return error(db, rc, std::string("preparing \"") + sql + "\"");
  }
  out->reset(stmt);
  return Status::Ok();
}

Status exec(sqlite3* db, const char* sql, int* rc_out) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc_out != nullptr) *rc_out = rc;
  if (rc != SQLITE_OK) return error(db, rc, std::string("running \"") + sql + "\"");
  return Status::Ok();
}

namespace {

template <typename Read>
Status query_one(sqlite3* db, const char* sql, int* rc_out, Read read) {
  Stmt stmt;
  int rc = SQLITE_OK;
  Status s = prepare(db, sql, &stmt, &rc);
  if (rc_out != nullptr) *rc_out = rc;
  if (!s.ok()) return s;
  rc = sqlite3_step(stmt.get());
  if (rc_out != nullptr) *rc_out = rc == SQLITE_ROW ? SQLITE_OK : rc;
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE) return Error(Code::cache, std::string("\"") + sql + "\" returned no row");
    return error(db, rc, std::string("running \"") + sql + "\"");
  }
  read(stmt.get());
  return Status::Ok();
}

}  // namespace

Status query_int(sqlite3* db, const char* sql, int64_t* out, int* rc_out) {
  return query_one(db, sql, rc_out, [out](sqlite3_stmt* s) { *out = sqlite3_column_int64(s, 0); });
}

Status query_text(sqlite3* db, const char* sql, std::string* out, int* rc_out) {
  return query_one(db, sql, rc_out, [out](sqlite3_stmt* s) {
    const unsigned char* text = sqlite3_column_text(s, 0);
    out->assign(text != nullptr ? reinterpret_cast<const char*>(text) : "");
  });
}

std::string file_uri(const std::string& path, const std::string& query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c < 0x20 || c >= 0x7f) {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    } else {
      uri += static_cast<char>(c);
    }
  }
  // A path starting with "//" must not be read as a URI authority.
  if (path.rfind("//", 0) == 0) uri.insert(5, "//localhost");
  if (!query.empty()) uri += "?" + query;
  return uri;
}

}  // namespace lmrt::sqlite
