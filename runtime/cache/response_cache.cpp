#include "runtime/cache/response_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "runtime/cache/cache_schema.h"
#include "runtime/cache/damaged_file.h"

namespace lmrt {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Each retry follows a change of the file by another process (set aside, replaced); a few suffice.
constexpr int kMaxOpenAttempts = 8;

bool is_busy(int rc) { return sqlite::primary(rc) == SQLITE_BUSY || sqlite::primary(rc) == SQLITE_LOCKED; }

void bind_key(sqlite3_stmt* stmt, int index, const CacheKey& key) {
  sqlite3_bind_blob(stmt, index, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
}

}  // namespace

ResponseCache::ResponseCache(std::string path, ResponseCacheParams params)
    : path_(std::move(path)), params_(std::move(params)) {}

ResponseCache::~ResponseCache() {
  st_ = Statements{};  // statements before the connection
  db_.reset();
}

int64_t ResponseCache::now_ms() const {
  if (params_.clock_ms) return params_.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ResponseCache::warn(const std::string& message) const {
  if (params_.on_warning) params_.on_warning(message);
}

Status ResponseCache::prepare_statements(int* rc) {
  sqlite3* db = db_.get();
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "BEGIN IMMEDIATE", &st_.begin, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "COMMIT", &st_.commit, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "ROLLBACK", &st_.rollback, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "SELECT value, created_at FROM entries WHERE key = ?1", &st_.select, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(
      db, "UPDATE entries SET last_used = (SELECT coalesce(max(last_used), 0) + 1 FROM entries) WHERE key = ?1",
      &st_.touch, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "DELETE FROM entries WHERE key = ?1", &st_.remove, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db,
                                       "INSERT INTO entries(key, value, size, created_at, last_used) "
                                       "VALUES (?1, ?2, ?3, ?4, (SELECT coalesce(max(last_used), 0) + 1 FROM entries)) "
                                       "ON CONFLICT(key) DO UPDATE SET value = excluded.value, size = excluded.size, "
                                       "created_at = excluded.created_at, last_used = excluded.last_used",
                                       &st_.upsert, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "DELETE FROM entries WHERE created_at <= ?1", &st_.purge_expired, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "SELECT entries, bytes FROM totals WHERE id = 0", &st_.totals, rc));
  LMRT_RETURN_IF_ERROR(
      sqlite::prepare(db, "SELECT last_used, size FROM entries ORDER BY last_used ASC", &st_.lru_scan, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "DELETE FROM entries WHERE last_used <= ?1", &st_.evict_upto, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "DELETE FROM entries", &st_.clear, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "DELETE FROM prefix_lengths", &st_.clear_prefixes, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db,
                                       "SELECT n_tokens FROM prefix_lengths WHERE scope = ?1 AND n_tokens <= ?2 "
                                       "ORDER BY n_tokens DESC LIMIT 64",
                                       &st_.prefix_lengths, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "SELECT 1 FROM entries WHERE key = ?1", &st_.exists, rc));
  LMRT_RETURN_IF_ERROR(sqlite::prepare(db, "INSERT OR IGNORE INTO prefix_lengths(scope, n_tokens) VALUES (?1, ?2)",
                                       &st_.add_prefix, rc));
  return Status::Ok();
}

void ResponseCache::drop_connection() {
  st_ = Statements{};
  // Without the checkpoint SQLite runs when the last connection to a WAL database closes: this connection
  // failed or found its file replaced, and another process may have set that file aside (renamed it) and
  // started a new one. SQLite finds the -wal and -shm by path, so the checkpoint would copy the new file's
  // log into the old one and mark it done in the new file's index.
  if (db_ != nullptr) sqlite3_db_config(db_.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  db_.reset();
}

Status ResponseCache::open_connection(bool read_only, bool immutable, Problem* problem) {
  drop_connection();
  *problem = Problem::other;
  int rc = SQLITE_OK;
  // Maps the SQLite code behind a failure to what open() does about it.
  auto fail = [&](Status s) {
    switch (sqlite::primary(rc)) {
      case SQLITE_CORRUPT:
      case SQLITE_NOTADB:
        *problem = Problem::damaged;
        break;
      case SQLITE_BUSY:
      case SQLITE_LOCKED:
        *problem = Problem::locked;
        s = Error(Code::cache, "cache file " + path_ + " is locked by another process (waited " +
                                   std::to_string(params_.busy_timeout_ms) + " ms): " + s.message());
        break;
      case SQLITE_READONLY:
      case SQLITE_CANTOPEN:
      case SQLITE_PERM:
      case SQLITE_AUTH:
        *problem = Problem::read_only;
        break;
      default:
        *problem = Problem::other;
    }
    return s;
  };

  sqlite3* raw = nullptr;
  const int flags = SQLITE_OPEN_NOMUTEX |
                    (read_only ? SQLITE_OPEN_READONLY | SQLITE_OPEN_URI : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  const std::string name = read_only ? sqlite::file_uri(path_, immutable ? "mode=ro&immutable=1" : "mode=ro") : path_;
  rc = sqlite3_open_v2(name.c_str(), &raw, flags, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) return fail(sqlite::error(raw, rc, "opening cache file " + path_));
  sqlite3* db = db_.get();
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, params_.busy_timeout_ms);
  // SQLite opens a write-protected file read-only without complaint.
  read_only_ = read_only || sqlite3_db_readonly(db, "main") == 1;

  if (!read_only_) {
    // Several processes may switch a new file to WAL at once; the loser sees BUSY, possibly without
    // the busy handler being consulted, so retry within the timeout.
    const auto deadline = SteadyClock::now() + std::chrono::milliseconds(params_.busy_timeout_ms);
    std::string mode;
    for (;;) {
      Status s = sqlite::query_text(db, "PRAGMA journal_mode = WAL", &mode, &rc);
      if (s.ok()) break;
      if (!is_busy(rc) || SteadyClock::now() >= deadline) return fail(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // NORMAL is safe in WAL mode: a power cut may lose the last commits, never consistency.
    Status s = sqlite::exec(db, "PRAGMA synchronous = NORMAL; PRAGMA journal_size_limit = 8388608", &rc);
    if (!s.ok()) return fail(s);
  }

  cache_schema::Verdict verdict;
  int64_t version = 0;
  Status s = cache_schema::inspect(db, &verdict, &version, &rc);
  if (!s.ok()) return fail(s);
  if (verdict == cache_schema::Verdict::needs_migration && !read_only_) {
    s = cache_schema::migrate(db, &verdict, &rc);
    if (!s.ok()) return fail(s);
  }
  switch (verdict) {
    case cache_schema::Verdict::ok:
      break;
    case cache_schema::Verdict::foreign:
      *problem = Problem::other;
      return Error(Code::cache,
                   path_ + " is another application's SQLite database, not an lmrt cache; leaving it alone");
    case cache_schema::Verdict::newer:
      *problem = Problem::other;
      return Error(Code::unsupported, "cache file " + path_ + " has schema version " + std::to_string(version) +
                                          ", newer than this lmrt reads (" +
                                          std::to_string(cache_schema::kCurrentVersion) + ")");
    case cache_schema::Verdict::needs_migration:
      *problem = Problem::other;
      if (version == 0)  // an empty file or one SQLite sees as empty: not a cache yet
        return Error(Code::cache, "cache file " + path_ +
                                      " is empty (no lmrt cache yet) and is opened read-only, so "
                                      "it cannot be set up");
      return Error(Code::cache, "cache file " + path_ + " has an old schema (version " + std::to_string(version) +
                                    ") and is read-only, so it cannot be upgraded");
    case cache_schema::Verdict::damaged:
      *problem = Problem::damaged;
      return Error(Code::cache, "cache file " + path_ + " is marked as an lmrt cache but has no schema");
  }

  if (params_.check_on_open) {
    std::string result;
    s = sqlite::query_text(db, "PRAGMA quick_check(1)", &result, &rc);
    if (!s.ok()) return fail(s);
    if (result != "ok") {
      *problem = Problem::damaged;
      return Error(Code::cache, "cache file " + path_ + " fails its integrity check: " + result);
    }
  }

  s = prepare_statements(&rc);
  if (!s.ok()) {
    // A missing table or column in a file that claims our schema version is damage.
    if (sqlite::primary(rc) == SQLITE_ERROR) {
      *problem = Problem::damaged;
      return s;
    }
    return fail(s);
  }
  sqlite::StmtUse use(st_.totals.get());
  rc = sqlite3_step(use.get());
  if (rc == SQLITE_DONE) {
    *problem = Problem::damaged;
    return Error(Code::cache, "cache file " + path_ + " has lost its totals row");
  }
  if (rc != SQLITE_ROW) return fail(sqlite::error(db, rc, "reading cache totals"));
  *problem = Problem::none;
  return Status::Ok();
}

Status ResponseCache::open(const std::string& path, const ResponseCacheParams& params,
                           std::unique_ptr<ResponseCache>* out) {
  if (path.empty()) return Error(Code::invalid_argument, "cache path is empty");
  if (params.busy_timeout_ms < 0) return Error(Code::invalid_argument, "cache busy_timeout_ms is negative");
  if (params.ttl_seconds < 0) return Error(Code::invalid_argument, "cache ttl_seconds is negative");
  // A device, FIFO or folder is never a cache: SQLite would read /dev/null as an empty database.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Error(Code::cache, path + " is not a regular file, so it cannot be a response cache");
  std::unique_ptr<ResponseCache> cache(new (std::nothrow) ResponseCache(path, params));
  if (cache == nullptr) return Error(Code::out_of_memory, "allocating the response cache");

  Status last;
  for (int attempt = 0; attempt < kMaxOpenAttempts; ++attempt) {
    // Shared with other processes opening the file, exclusive to one setting it aside (FolderLock). A folder
    // this process cannot open or lock is opened without it: whatever fails then is reported as it is.
    FolderLock opening;
    (void)opening.lock(parent_folder(path), false);
    // Without write access to the file and its folder (for -wal and -shm) only reading can work.
    const FileIdentity examined = identify_file(path);
    std::string read_only_reason;
    bool read_only = params.read_only;
    if (!read_only && ::access(parent_folder(path).c_str(), W_OK) != 0) {
      read_only = true;
      read_only_reason = "its folder is not writable";
    } else if (!read_only && examined.exists && ::access(path.c_str(), W_OK) != 0) {
      read_only = true;
      read_only_reason = "the file is not writable";
    }
    Problem problem = Problem::none;
    Status s = cache->open_connection(read_only, false, &problem);
    if (!s.ok() && !read_only && problem == Problem::read_only && examined.exists) {
      read_only = true;
      read_only_reason = "it cannot be written (" + s.message() + ")";
      s = cache->open_connection(true, false, &problem);
    }
    if (!s.ok() && read_only && problem == Problem::read_only && examined.exists) {
      // A WAL file in a folder nobody may write: no -shm can be created, so read it as immutable.
      s = cache->open_connection(true, true, &problem);
    }
    if (s.ok() && examined.exists && !(identify_file(path) == examined)) {
      // Set aside or replaced while this connection opened it. SQLite finds the -wal and -shm by path, so a
      // connection on the old file would read the new file's log and checkpoint it into the old one. Open
      // the new file instead.
      last = Error(Code::cache, "cache file " + path + " was replaced while it was being opened");
      cache->drop_connection();
      continue;
    }
    if (s.ok()) {
      if (cache->read_only_ && !params.read_only) {
        if (read_only_reason.empty()) read_only_reason = "the file is write-protected";
        cache->warn("response cache " + path + " is read-only because " + read_only_reason +
                    "; lookups work, results are not stored");
      }
      *out = std::move(cache);
      return Status::Ok();
    }
    last = s;
    cache->drop_connection();
    // Another process set the file aside or replaced it while we looked: whatever we saw (even
    // "read-only", which SQLite reports for a file moved under it) was about the old file.
    if (!(identify_file(path) == examined)) continue;
    if (problem != Problem::damaged) return s;
    const bool own_header = has_own_cache_header(path);
    if (!(identify_file(path) == examined)) continue;  // set aside by another process as we read its header
    if (!own_header) {
      return Error(Code::cache, path + " is not an lmrt cache (" + s.message() +
                                    "); leaving it alone: give the path of a cache file or a new one");
    }
    if (read_only || cache->read_only_) {
      return Error(Code::cache, s.message() + "; the cache is read-only so the file cannot be set aside");
    }
    std::string moved_to;
    bool replaced = false;
    opening.release();
    Status moved = set_aside_damaged_file(path, examined, &moved_to, &replaced);
    if (!moved.ok()) return Error(moved.code(), s.message() + "; setting it aside failed: " + moved.message());
    if (!replaced) {
      cache->warn("response cache " + path + " is damaged (" + s.message() + "); kept as " + moved_to +
                  ", starting an empty cache");
    }
  }
  return Error(Code::cache,
               "cache file " + path + " kept changing while it was being opened; last error: " + last.message());
}

Status ResponseCache::step_done(sqlite3_stmt* stmt, const char* what) {
  const int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) return sqlite::error(db_.get(), rc, std::string("response cache ") + what);
  return Status::Ok();
}

template <typename Body>
Status ResponseCache::write_transaction(const char* what, Body&& body) {
  // busy_timeout already waits inside BEGIN IMMEDIATE; this loop covers the BUSY cases SQLite
  // returns without consulting the handler, bounded by the same timeout.
  const auto deadline = SteadyClock::now() + std::chrono::milliseconds(params_.busy_timeout_ms);
  for (;;) {
    sqlite::StmtUse begin(st_.begin.get());
    const int rc = sqlite3_step(begin.get());
    if (rc == SQLITE_DONE) break;
    if (!is_busy(rc) || SteadyClock::now() >= deadline) {
      return sqlite::error(db_.get(), rc, std::string("starting a response cache write (") + what + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  Status s = body();
  while (s.ok()) {
    sqlite::StmtUse commit(st_.commit.get());
    const int rc = sqlite3_step(commit.get());
    if (rc == SQLITE_DONE) return Status::Ok();
    if (!is_busy(rc) || SteadyClock::now() >= deadline) {
      s = sqlite::error(db_.get(), rc, std::string("committing a response cache write (") + what + ")");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Some errors (disk full, I/O) already rolled the transaction back.
  if (sqlite3_get_autocommit(db_.get()) == 0) {
    sqlite::StmtUse rollback(st_.rollback.get());
    (void)sqlite3_step(rollback.get());
  }
  return s;
}

Status ResponseCache::touch(const CacheKey& key) {
  return write_transaction("marking an entry used", [&] {
    sqlite::StmtUse use(st_.touch.get());
    bind_key(use.get(), 1, key);
    return step_done(use.get(), "marking an entry used");
  });
}

Status ResponseCache::remove(const CacheKey& key) {
  return write_transaction("removing an entry", [&] {
    sqlite::StmtUse use(st_.remove.get());
    bind_key(use.get(), 1, key);
    return step_done(use.get(), "removing an entry");
  });
}

Status ResponseCache::lookup(const CacheKey& key, CachedResponse* out, bool* hit) {
  return lookup_value(
      key, [&](const uint8_t* data, size_t size) { return deserialize_cached_response(data, size, out); }, hit);
}

Status ResponseCache::lookup_value(const CacheKey& key, const std::function<Status(const uint8_t*, size_t)>& use_value,
                                   bool* hit, bool mark_used) {
  *hit = false;
  std::lock_guard<std::mutex> lock(mu_);
  bool expired = false;
  Status unreadable;
  {
    sqlite::StmtUse use(st_.select.get());
    bind_key(use.get(), 1, key);
    const int rc = sqlite3_step(use.get());
    if (rc == SQLITE_DONE) {
      ++counters_.misses;
      return Status::Ok();
    }
    if (rc != SQLITE_ROW) return sqlite::error(db_.get(), rc, "response cache lookup");
    const int64_t created_at = sqlite3_column_int64(use.get(), 1);
    if (params_.ttl_seconds > 0 && now_ms() - created_at >= params_.ttl_seconds * 1000) {
      expired = true;
    } else {
      const auto* blob = static_cast<const uint8_t*>(sqlite3_column_blob(use.get(), 0));
      const int n = sqlite3_column_bytes(use.get(), 0);
      unreadable = use_value(blob, static_cast<size_t>(n));
    }
  }
  if (expired || !unreadable.ok()) {
    ++counters_.misses;
    if (expired) ++counters_.expirations;
    if (!unreadable.ok()) warn("response cache " + path_ + ": dropping an unreadable entry: " + unreadable.message());
    return read_only_ ? Status::Ok() : remove(key);
  }
  ++counters_.hits;
  *hit = true;
  if (!read_only_ && mark_used) {
    // The result is good either way; a missed recency mark only makes eviction slightly less exact.
    Status s = touch(key);
    if (!s.ok()) warn("response cache " + path_ + ": " + s.message());
  }
  return Status::Ok();
}

Status ResponseCache::evict_over_caps() {
  int64_t entries = 0, bytes = 0;
  {
    sqlite::StmtUse use(st_.totals.get());
    const int rc = sqlite3_step(use.get());
    if (rc != SQLITE_ROW) return sqlite::error(db_.get(), rc, "response cache reading totals");
    entries = sqlite3_column_int64(use.get(), 0);
    bytes = sqlite3_column_int64(use.get(), 1);
  }
  const uint64_t n_entries = entries > 0 ? static_cast<uint64_t>(entries) : 0;
  const uint64_t n_bytes = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
  const uint64_t excess_entries =
      params_.max_entries > 0 && n_entries > params_.max_entries ? n_entries - params_.max_entries : 0;
  const uint64_t excess_bytes = params_.max_bytes > 0 && n_bytes > params_.max_bytes ? n_bytes - params_.max_bytes : 0;
  if (excess_entries == 0 && excess_bytes == 0) return Status::Ok();

  // Walk from the least recently used until both excesses are covered, then delete that prefix.
  int64_t threshold = 0;
  uint64_t counted = 0, freed = 0;
  bool any = false;
  {
    sqlite::StmtUse scan(st_.lru_scan.get());
    while (counted < excess_entries || freed < excess_bytes) {
      const int rc = sqlite3_step(scan.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return sqlite::error(db_.get(), rc, "response cache scanning for eviction");
      threshold = sqlite3_column_int64(scan.get(), 0);
      freed += static_cast<uint64_t>(sqlite3_column_int64(scan.get(), 1));
      ++counted;
      any = true;
    }
  }
  if (!any) return Status::Ok();
  sqlite::StmtUse evict(st_.evict_upto.get());
  sqlite3_bind_int64(evict.get(), 1, threshold);
  LMRT_RETURN_IF_ERROR(step_done(evict.get(), "evicting entries"));
  counters_.evictions += static_cast<uint64_t>(sqlite3_changes(db_.get()));
  return Status::Ok();
}

Status ResponseCache::store(const CacheKey& key, const CachedResponse& response) {
  if (read_only_) return Status::Ok();
  std::string blob;
  LMRT_RETURN_IF_ERROR(serialize_cached_response(response, &blob));
  return store_value(key, blob, nullptr);
}

Status ResponseCache::store_value(const CacheKey& key, std::string_view blob, const std::function<Status()>& also) {
  if (read_only_) return Status::Ok();
  const uint64_t size = blob.size() + key.size();
  if (params_.max_bytes > 0 && size > params_.max_bytes) return Status::Ok();  // could never fit

  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = now_ms();
  uint64_t expired = 0;
  const uint64_t evictions_before = counters_.evictions;
  Status s = write_transaction("storing an entry", [&]() -> Status {
    if (params_.ttl_seconds > 0) {
      sqlite::StmtUse purge(st_.purge_expired.get());
      sqlite3_bind_int64(purge.get(), 1, now - params_.ttl_seconds * 1000);
      LMRT_RETURN_IF_ERROR(step_done(purge.get(), "removing expired entries"));
      expired = static_cast<uint64_t>(sqlite3_changes(db_.get()));
    }
    {
      sqlite::StmtUse upsert(st_.upsert.get());
      bind_key(upsert.get(), 1, key);
      sqlite3_bind_blob64(upsert.get(), 2, blob.data(), blob.size(), SQLITE_STATIC);
      sqlite3_bind_int64(upsert.get(), 3, static_cast<int64_t>(size));
      sqlite3_bind_int64(upsert.get(), 4, now);
      LMRT_RETURN_IF_ERROR(step_done(upsert.get(), "storing an entry"));
    }
    if (also) LMRT_RETURN_IF_ERROR(also());
    return evict_over_caps();
  });
  if (!s.ok()) {
    counters_.evictions = evictions_before;  // rolled back
    return s;
  }
  ++counters_.stores;
  counters_.expirations += expired;
  return Status::Ok();
}

Status ResponseCache::contains(const CacheKey& key, bool* found) {
  *found = false;
  std::lock_guard<std::mutex> lock(mu_);
  sqlite::StmtUse use(st_.exists.get());
  bind_key(use.get(), 1, key);
  const int rc = sqlite3_step(use.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return sqlite::error(db_.get(), rc, "response cache lookup");
  *found = rc == SQLITE_ROW;
  return Status::Ok();
}

Status ResponseCache::prefix_lengths(const CacheKey& scope, uint32_t max_tokens, std::vector<uint32_t>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  sqlite::StmtUse use(st_.prefix_lengths.get());
  bind_key(use.get(), 1, scope);
  sqlite3_bind_int64(use.get(), 2, max_tokens);
  for (;;) {
    const int rc = sqlite3_step(use.get());
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return sqlite::error(db_.get(), rc, "prefix state lookup");
    out->push_back(static_cast<uint32_t>(sqlite3_column_int64(use.get(), 0)));
  }
}

Status ResponseCache::store_prefix(const CacheKey& scope, uint32_t n_tokens, const CacheKey& key,
                                   std::string_view state) {
  return store_value(key, state, [&]() -> Status {
    sqlite::StmtUse add(st_.add_prefix.get());
    bind_key(add.get(), 1, scope);
    sqlite3_bind_int64(add.get(), 2, n_tokens);
    return step_done(add.get(), "recording a prefix state");
  });
}

Status ResponseCache::lookup(const CacheKeyFields& fields, CachedResponse* out, bool* hit) {
  *hit = false;
  CacheKey key;
  if (!make_cache_key(fields, &key).ok()) return Status::Ok();  // not cacheable: bypass
  return lookup(key, out, hit);
}

Status ResponseCache::store(const CacheKeyFields& fields, const CachedResponse& response) {
  CacheKey key;
  if (!make_cache_key(fields, &key).ok()) return Status::Ok();  // not cacheable: never stored
  return store(key, response);
}

Status ResponseCache::stats(ResponseCacheStats* out) {
  std::lock_guard<std::mutex> lock(mu_);
  *out = counters_;
  sqlite::StmtUse use(st_.totals.get());
  const int rc = sqlite3_step(use.get());
  if (rc != SQLITE_ROW) return sqlite::error(db_.get(), rc, "response cache reading totals");
  out->entries = static_cast<uint64_t>(sqlite3_column_int64(use.get(), 0));
  out->bytes = static_cast<uint64_t>(sqlite3_column_int64(use.get(), 1));
  return Status::Ok();
}

Status ResponseCache::clear() {
  if (read_only_) return Error(Code::cache, "response cache " + path_ + " is read-only; cannot clear it");
  std::lock_guard<std::mutex> lock(mu_);
  return write_transaction("clearing", [&]() -> Status {
    sqlite::StmtUse use(st_.clear.get());
    LMRT_RETURN_IF_ERROR(step_done(use.get(), "clearing"));
    sqlite::StmtUse prefixes(st_.clear_prefixes.get());
    return step_done(prefixes.get(), "clearing");
  });
}

Status ResponseCache::vacuum() {
  if (read_only_) return Error(Code::cache, "response cache " + path_ + " is read-only; cannot vacuum it");
  std::lock_guard<std::mutex> lock(mu_);
  return sqlite::exec(db_.get(), "VACUUM");
}

}  // namespace lmrt
