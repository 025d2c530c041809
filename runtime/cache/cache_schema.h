// The response cache's SQLite schema and its migrations, versioned with PRAGMA user_version and
// marked as lmrt's with PRAGMA application_id.
#pragma once

#include <sqlite3.h>

#include <cstdint>

#include "runtime/util/status.h"

namespace lmrt::cache_schema {

constexpr int64_t kApplicationId = 0x6C6D7274;  // "lmrt"
constexpr int64_t kCurrentVersion = 3;

// What reading a cache file's schema found.
enum class Verdict {
  ok,               // current schema, ready
  needs_migration,  // an older (or empty) lmrt cache the caller may migrate
  foreign,          // another application's database: never touch it
  newer,            // written by a newer lmrt: leave it alone
  damaged,          // claims to be ours but its schema is unreadable
};

// Reads application_id, user_version and the table list. *sqlite_rc gets the failing SQLite code
// (NOTADB, CORRUPT, BUSY...) when the status is not ok.
Status inspect(sqlite3* db, Verdict* verdict, int64_t* version, int* sqlite_rc);

// Brings the schema to kCurrentVersion in one BEGIN IMMEDIATE transaction; re-inspects inside it,
// so several processes migrating one new file at once apply each step exactly once.
Status migrate(sqlite3* db, Verdict* verdict, int* sqlite_rc);

}  // namespace lmrt::cache_schema
