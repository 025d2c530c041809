// The persistent response cache: deterministic completions keyed by CacheKey, in one SQLite file
// that any number of threads and processes share.
//
// Thread safety: one ResponseCache may be used by several threads at once (calls are serialised by
// a mutex). Several processes (or several ResponseCache objects) may open the same file: WAL,
// busy_timeout and BEGIN IMMEDIATE writes with a bounded retry keep every committed entry. A
// forked child must open its own ResponseCache (a SQLite connection must not cross fork()).
//
// Failure policy: the cache never makes a generation fail. open() sets a damaged file aside
// (renamed, kept) and starts a fresh one with a warning; when it cannot open any cache it returns
// an error the caller logs before carrying on without a cache. lookup()/store() errors (disk full,
// a file locked beyond the timeout) are returned for logging and otherwise ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cache/cache_key.h"
#include "runtime/cache/cached_response.h"
#include "runtime/cache/sqlite_handle.h"
#include "runtime/util/status.h"

namespace lmrt {

struct ResponseCacheParams {
  uint64_t max_bytes = 256ull << 20;  // cap on key + value bytes of all entries; 0 = no cap
  uint64_t max_entries = 100000;      // 0 = no cap
  int64_t ttl_seconds = 0;            // an entry expires this long after it was stored; 0 = never
  bool read_only = false;             // lookups only; the file is opened read-only
  int busy_timeout_ms = 5000;         // how long one operation waits for another process's lock
  bool check_on_open = true;          // run PRAGMA quick_check at open (reads the whole file)
  // Prompt-prefix states (prefix_state_cache.h): a request whose prompt has at least this many tokens
  // stores the state of its prompt; 0 = off (none stored, none looked up).
  uint32_t prefix_min_tokens = 0;
  // Wall-clock time in Unix milliseconds, for created_at and the TTL. Empty: the system clock.
  std::function<int64_t()> clock_ms;
  // Receives each warning (damaged file set aside, read-only fallback). Empty: warnings dropped.
  std::function<void(const std::string&)> on_warning;
};

struct ResponseCacheStats {
  // This object's activity since open.
  uint64_t hits = 0;
  uint64_t misses = 0;  // including expired and unreadable entries
  uint64_t stores = 0;
  uint64_t evictions = 0;    // entries removed by the caps
  uint64_t expirations = 0;  // entries removed by the TTL
  // The whole file, now.
  uint64_t entries = 0;
  uint64_t bytes = 0;  // key + value bytes (the file is larger by SQLite's page overhead)
};

class ResponseCache {
 public:
  // Opens or creates the cache at `path`. Read-only file or folder: read-only mode with a warning
  // (a WAL file in a folder nobody may write is read as immutable: it sees no later changes).
  // Damaged file: set aside as "<path>.damaged-<timestamp>", fresh cache, warning.
  // Errors (Code::cache, Code::unsupported, Code::io): no usable cache (locked by another process
  // beyond the timeout, another application's database, a newer lmrt's schema, cannot create).
  static Status open(const std::string& path, const ResponseCacheParams& params, std::unique_ptr<ResponseCache>* out);

  ~ResponseCache();
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  // *hit is false on a miss, an expired entry or an unreadable entry (which is removed, with a
  // warning). A hit marks the entry most recently used; when that mark cannot be written (another
  // process holds the write lock beyond the timeout) the hit is still returned, with a warning.
  Status lookup(const CacheKey& key, CachedResponse* out, bool* hit);
  // Stores (or replaces) one entry in one transaction, removes expired entries and evicts least
  // recently used ones beyond the caps. Skipped silently in read-only mode and for an entry larger
  // than max_bytes on its own.
  Status store(const CacheKey& key, const CachedResponse& response);
  // The same from the request's fields. A request that is not cacheable (is_cacheable() false) is
  // never looked up nor stored: lookup reports a miss without counting it, store does nothing.
  Status lookup(const CacheKeyFields& fields, CachedResponse* out, bool* hit);
  Status store(const CacheKeyFields& fields, const CachedResponse& response);
  Status stats(ResponseCacheStats* out);

  // Any value under a key (the entries table: the same caps, TTL and recency as responses).
  // lookup_value hands the stored bytes to `use_value`, whose error makes the entry unreadable
  // (removed, with a warning, and reported as a miss).
  // mark_used false leaves the entry's recency as it is: marking rewrites the whole row in SQLite,
  // which for a large value (a prefix state of MiBs) costs more than the lookup itself.
  Status lookup_value(const CacheKey& key, const std::function<Status(const uint8_t*, size_t)>& use_value, bool* hit,
                      bool mark_used = true);
  // Whether an entry is stored under key (without reading it or marking it used).
  Status contains(const CacheKey& key, bool* found);
  // Stores a value; `also` (may be empty) runs inside the same transaction.
  Status store_value(const CacheKey& key, std::string_view value, const std::function<Status()>& also);
  // Prompt-prefix states: the token counts recorded under `scope` (a model and KV geometry), at most
  // max_tokens, longest first (at most 64). A recorded count whose entry was evicted since is a miss.
  Status prefix_lengths(const CacheKey& scope, uint32_t max_tokens, std::vector<uint32_t>* out);
  // Stores a prefix state under `key` and records n_tokens under `scope`, in one transaction.
  Status store_prefix(const CacheKey& scope, uint32_t n_tokens, const CacheKey& key, std::string_view state);
  uint32_t prefix_min_tokens() const { return params_.prefix_min_tokens; }
  // Removes every entry. Errors in read-only mode.
  Status clear();
  // Rebuilds the file to return free pages to the file system. Errors in read-only mode.
  Status vacuum();

  bool is_read_only() const { return read_only_; }
  const std::string& path() const { return path_; }

 private:
  ResponseCache(std::string path, ResponseCacheParams params);

  enum class Problem { none, damaged, locked, read_only, other };

  Status open_connection(bool read_only, bool immutable, Problem* problem);
  // Closes the connection of a failed open without checkpointing (see the definition).
  void drop_connection();
  Status prepare_statements(int* rc);
  int64_t now_ms() const;
  void warn(const std::string& message) const;
  // Runs `body` inside BEGIN IMMEDIATE ... COMMIT, retrying BEGIN while another writer holds the
  // lock, for at most about busy_timeout_ms. Rolls back when body fails.
  template <typename Body>
  Status write_transaction(const char* what, Body&& body);
  Status step_done(sqlite3_stmt* stmt, const char* what);
  Status evict_over_caps();
  Status touch(const CacheKey& key);
  Status remove(const CacheKey& key);

  std::string path_;
  ResponseCacheParams params_;
  bool read_only_ = false;
  std::mutex mu_;
  sqlite::Db db_;
  struct Statements {
    sqlite::Stmt begin, commit, rollback;
    sqlite::Stmt select, touch, remove, upsert, purge_expired, totals, lru_scan, evict_upto, clear;
    sqlite::Stmt clear_prefixes, prefix_lengths, add_prefix, exists;
  } st_;
  ResponseCacheStats counters_;
};

}  // namespace lmrt
