#include "runtime/cache/cache_schema.h"

#include <string>

#include "runtime/cache/sqlite_handle.h"

namespace lmrt::cache_schema {

namespace {

// Migration i brings a file from user_version i to i + 1. Append only; never edit a shipped step.
// entries.size counts key + value bytes (the part the byte cap limits). last_used is a logical
// clock: each store or hit sets it to one more than the largest value in the file, so ordering by
// it is least-recently-used order across every process sharing the file. created_at is the
// store time in Unix milliseconds, for the TTL. totals is kept exact by triggers so stats and
// the caps never scan the table.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE entries(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE CHECK (length(key) = 32),
  value BLOB NOT NULL,
  size INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  last_used INTEGER NOT NULL
);
CREATE INDEX entries_by_last_used ON entries(last_used);
CREATE INDEX entries_by_created_at ON entries(created_at);
CREATE TABLE totals(
  id INTEGER PRIMARY KEY CHECK (id = 0),
  entries INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
INSERT INTO totals(id, entries, bytes) VALUES (0, 0, 0);
CREATE TRIGGER entries_after_insert AFTER INSERT ON entries BEGIN
  UPDATE totals SET entries = entries + 1, bytes = bytes + NEW.size WHERE id = 0;
END;
CREATE TRIGGER entries_after_delete AFTER DELETE ON entries BEGIN
  UPDATE totals SET entries = entries - 1, bytes = bytes - OLD.size WHERE id = 0;
END;
CREATE TRIGGER entries_after_resize AFTER UPDATE OF size ON entries BEGIN
  UPDATE totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 0;
END;
)sql",
    // Version 2: the token counts of the prompt-prefix states stored in entries, per model and KV
    // geometry (scope), so a prompt is matched against the few lengths that exist. A count whose
    // entry was evicted stays until the next clear: looking it up is a miss.
    R"sql(
CREATE TABLE prefix_lengths(
  scope BLOB NOT NULL CHECK (length(scope) = 32),
  n_tokens INTEGER NOT NULL,
  PRIMARY KEY (scope, n_tokens)
) WITHOUT ROWID;
)sql",
    // Version 3: response keys now include the KV type (key encoding 2), so no stored response
    // (a value starting "LMRC", runtime/cache/cached_response.cpp) can be found again: free the
    // space they hold under the byte cap. Prompt-prefix states are keyed apart and stay.
    R"sql(
DELETE FROM entries WHERE substr(value, 1, 4) = CAST('LMRC' AS BLOB);
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kCurrentVersion);

}  // namespace

Status inspect(sqlite3* db, Verdict* verdict, int64_t* version, int* sqlite_rc) {
  *sqlite_rc = SQLITE_OK;
  // One statement, so the three values come from one snapshot even while another process is
  // creating the schema.
  sqlite::Stmt stmt;
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db,
                                       "SELECT (SELECT application_id FROM pragma_application_id()), "
                                       "(SELECT user_version FROM pragma_user_version()), "
                                       "(SELECT count(*) FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%')",
                                       &stmt, sqlite_rc));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) {
    *sqlite_rc = rc;
    return sqlite::error(db, rc, "reading the cache schema version");
  }
  const int64_t app_id = sqlite3_column_int64(stmt.get(), 0);
  *version = sqlite3_column_int64(stmt.get(), 1);
  const int64_t n_tables = sqlite3_column_int64(stmt.get(), 2);
  if (app_id != 0 && app_id != kApplicationId) {
    *verdict = Verdict::foreign;
  } else if (app_id == 0) {
    // Not marked as ours: an empty file is a new cache, anything with tables is someone else's.
    *verdict = (*version == 0 && n_tables == 0) ? Verdict::needs_migration : Verdict::foreign;
  } else if (*version > kCurrentVersion) {
    *verdict = Verdict::newer;
  } else if (*version < 1) {
    *verdict = Verdict::damaged;  // marked as ours but never given a schema
  } else if (*version < kCurrentVersion) {
    *verdict = Verdict::needs_migration;
  } else {
    *verdict = Verdict::ok;
  }
  return Status::Ok();
}

Status migrate(sqlite3* db, Verdict* verdict, int* sqlite_rc) {
  LMRT_RETURN_IF_ERROR(sqlite::exec(db, "BEGIN IMMEDIATE", sqlite_rc));
  int64_t version = 0;
  Status s = inspect(db, verdict, &version, sqlite_rc);
  if (s.ok() && *verdict == Verdict::needs_migration) {
    for (int64_t v = version; v < kCurrentVersion && s.ok(); ++v) {
      s = sqlite::exec(db, kMigrations[v], sqlite_rc);
      if (s.ok()) {
        const std::string set_version = "PRAGMA user_version = " + std::to_string(v + 1);
        s = sqlite::exec(db, set_version.c_str(), sqlite_rc);
      }
    }
    if (s.ok()) s = sqlite::exec(db, ("PRAGMA application_id = " + std::to_string(kApplicationId)).c_str(), sqlite_rc);
    if (s.ok()) *verdict = Verdict::ok;
  }
  if (s.ok()) {
    s = sqlite::exec(db, "COMMIT", sqlite_rc);
    if (s.ok()) return s;
  }
  int ignored = SQLITE_OK;
  (void)sqlite::exec(db, "ROLLBACK", &ignored);
  return s;
}

}  // namespace lmrt::cache_schema
