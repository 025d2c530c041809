// ResponseCache: hits and misses, eviction, TTL, damaged and locked files, read-only mode, and
// several threads and processes sharing one file.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/cache/response_cache.h"
#include "runtime/cache/sha256.h"
#include "test_support.h"

namespace lmrt {
namespace {

class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/lmrt-cache-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty()) (void)std::system(("chmod -R u+rwx '" + path_ + "' && rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
      }
      ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  // Names starting with `prefix`.
  std::vector<std::string> list(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& n : list()) {
      if (n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    return out;
  }

 private:
  std::string path_;
};

CacheKey key_n(int n) { return Sha256::hash("request " + std::to_string(n)); }

CachedResponse response_n(int n, int n_tokens = 8, int n_top = 0) {
  CachedResponse r;
  r.finish_reason = n % 2 == 0 ? "length" : "eos";
  r.prompt_tokens = 3 + n;
  r.completion_tokens = n_tokens;
  for (int i = 0; i < n_tokens; ++i) {
    const std::string piece = " t" + std::to_string(n) + "_" + std::to_string(i);
    r.text += piece;
    r.piece_lengths.push_back(static_cast<uint32_t>(piece.size()));
    r.tokens.push_back(n * 1000 + i);
    if (n_top > 0) {
      CachedTokenLogprob lp{n * 1000 + i, -0.25f * static_cast<float>(i % 7), {}};
      for (int j = 0; j < n_top; ++j) lp.top.push_back({j, -1.0f - static_cast<float>(j)});
      r.logprobs.push_back(lp);
    }
  }
  return r;
}

uint64_t entry_size(const CachedResponse& r) {
  std::string blob;
  EXPECT_TRUE(serialize_cached_response(r, &blob).ok());
  return blob.size() + 32;
}

std::string read_bytes(const std::string& path) { return test::read_file(path); }

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Runs SQL on the file through a separate plain SQLite connection; returns the first column of
// the first row as text ("" when none).
std::string raw_sql(const std::string& path, const std::string& sql) { return lmrt::test::sqlite_query(path, sql); }

// Forks; the child runs `body` and exits with its result. Returns the child's exit code, or -1
// when it died of a signal.
int run_in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Opened {
  std::unique_ptr<ResponseCache> cache;
  std::vector<std::string> warnings;
};

// Opens with the given params, collecting warnings. Asserts success.
void open_ok(const std::string& path, ResponseCacheParams params, Opened* out) {
  auto* warnings = &out->warnings;
  params.on_warning = [warnings](const std::string& w) { warnings->push_back(w); };
  Status s = ResponseCache::open(path, params, &out->cache);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_NE(out->cache, nullptr);
}

// Fills a cache file with `n` entries and closes it (which checkpoints the WAL into the file).
void fill(const std::string& path, int n, int n_tokens = 8) {
  Opened c;
  open_ok(path, {}, &c);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(c.cache->store(key_n(i), response_n(i, n_tokens)).ok());
}

bool has(ResponseCache* cache, int n) {
  CachedResponse r;
  bool hit = false;
  Status s = cache->lookup(key_n(n), &r, &hit);
  EXPECT_TRUE(s.ok()) << s.message();
  return hit;
}

// ---- hit and miss --------------------------------------------------------------------------

TEST(CacheStore, MissThenStoreThenHitWithIdenticalResponse) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  EXPECT_FALSE(c.cache->is_read_only());
  EXPECT_EQ(c.cache->path(), dir.file("cache.db"));
  CachedResponse out;
  bool hit = true;
  ASSERT_TRUE(c.cache->lookup(key_n(1), &out, &hit).ok());
  EXPECT_FALSE(hit);

  const CachedResponse stored = response_n(1, 16, 4);
  ASSERT_TRUE(c.cache->store(key_n(1), stored).ok());
  ASSERT_TRUE(c.cache->lookup(key_n(1), &out, &hit).ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(out, stored);
  ASSERT_TRUE(c.cache->lookup(key_n(2), &out, &hit).ok());
  EXPECT_FALSE(hit);

  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.stores, 1u);
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.bytes, entry_size(stored));
  EXPECT_TRUE(c.warnings.empty());
}

TEST(CacheStore, EntriesSurviveReopenAndSchemaIsVersioned) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 5);
  EXPECT_EQ(raw_sql(path, "PRAGMA user_version"), "3");
  EXPECT_EQ(raw_sql(path, "PRAGMA application_id"), std::to_string(0x6C6D7274));
  EXPECT_EQ(raw_sql(path, "PRAGMA journal_mode"), "wal");
  Opened c;
  open_ok(path, {}, &c);
  for (int i = 0; i < 5; ++i) {
    CachedResponse out;
    bool hit = false;
    ASSERT_TRUE(c.cache->lookup(key_n(i), &out, &hit).ok());
    ASSERT_TRUE(hit) << i;
    EXPECT_EQ(out, response_n(i));
  }
}

TEST(CacheStore, StoringAnExistingKeyReplacesIt) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(1, 4)).ok());
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(2, 9)).ok());
  CachedResponse out;
  bool hit = false;
  ASSERT_TRUE(c.cache->lookup(key_n(1), &out, &hit).ok());
  ASSERT_TRUE(hit);
  EXPECT_EQ(out, response_n(2, 9));
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.bytes, entry_size(response_n(2, 9)));
}

TEST(CacheStore, NonDeterministicRequestsAreNeverStored) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  CacheKeyFields f;
  f.prompt_tokens = {1, 2, 3};
  f.sampler_chain = "temperature(t=0.8) dist";
  f.chain_deterministic = true;
  f.seeded = false;  // random seed
  ASSERT_TRUE(c.cache->store(f, response_n(1)).ok());
  f.seeded = true;
  f.chain_deterministic = false;  // a plugin that is not deterministic given the seed
  ASSERT_TRUE(c.cache->store(f, response_n(1)).ok());
  f.greedy = true;
  ASSERT_TRUE(c.cache->store(f, response_n(1)).ok());
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.stores, 0u);
  CachedResponse out;
  bool hit = true;
  ASSERT_TRUE(c.cache->lookup(f, &out, &hit).ok());
  EXPECT_FALSE(hit);

  // The same request made deterministic is stored and found through its fields.
  f.chain_deterministic = true;
  ASSERT_TRUE(c.cache->store(f, response_n(1)).ok());
  ASSERT_TRUE(c.cache->lookup(f, &out, &hit).ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(out, response_n(1));
}

// ---- eviction --------------------------------------------------------------------------------

TEST(CacheStore, EvictsLeastRecentlyUsedBeyondEntryCap) {
  TempDir dir;
  ResponseCacheParams p;
  p.max_entries = 3;
  Opened c;
  open_ok(dir.file("cache.db"), p, &c);
  for (int i = 1; i <= 3; ++i) ASSERT_TRUE(c.cache->store(key_n(i), response_n(i)).ok());
  EXPECT_TRUE(has(c.cache.get(), 1));  // 1 is now the most recently used; 2 the least
  ASSERT_TRUE(c.cache->store(key_n(4), response_n(4)).ok());
  EXPECT_FALSE(has(c.cache.get(), 2));
  EXPECT_TRUE(has(c.cache.get(), 3));  // order of use now: 1, 4, 3 ... 3 most recent
  ASSERT_TRUE(c.cache->store(key_n(5), response_n(5)).ok());
  // Least recently used was 1 (touched before 4 was stored and 3 was looked up).
  EXPECT_FALSE(has(c.cache.get(), 1));
  EXPECT_TRUE(has(c.cache.get(), 3));
  EXPECT_TRUE(has(c.cache.get(), 4));
  EXPECT_TRUE(has(c.cache.get(), 5));
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 3u);
  EXPECT_EQ(st.evictions, 2u);
}

TEST(CacheStore, EvictsLeastRecentlyUsedBeyondByteCap) {
  TempDir dir;
  // Three small entries fill the cap; a bigger one (more than one small, at most two) must push
  // out the two least recently used small ones and no more.
  const uint64_t small = entry_size(response_n(1, 8));
  // Odd n: all small entries have the same size.
  ASSERT_EQ(small, entry_size(response_n(3, 8)));
  ASSERT_EQ(small, entry_size(response_n(5, 8)));
  int big_tokens = 8;
  while (entry_size(response_n(9, big_tokens)) <= small + small / 2) ++big_tokens;
  const uint64_t big = entry_size(response_n(9, big_tokens));
  ASSERT_GT(big, small);
  ASSERT_LE(big, 2 * small);
  ResponseCacheParams p;
  p.max_bytes = 3 * small;
  p.max_entries = 0;
  Opened c;
  open_ok(dir.file("cache.db"), p, &c);
  for (int i : {1, 3, 5}) ASSERT_TRUE(c.cache->store(key_n(i), response_n(i, 8)).ok());
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.bytes, 3 * small);
  EXPECT_EQ(st.evictions, 0u);

  EXPECT_TRUE(has(c.cache.get(), 1));  // use order now 3, 5, 1
  ASSERT_TRUE(c.cache->store(key_n(9), response_n(9, big_tokens)).ok());
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.evictions, 2u);
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(st.bytes, small + big);
  EXPECT_FALSE(has(c.cache.get(), 3));
  EXPECT_FALSE(has(c.cache.get(), 5));
  EXPECT_TRUE(has(c.cache.get(), 1));
  EXPECT_TRUE(has(c.cache.get(), 9));
}

TEST(CacheStore, AnEntryLargerThanTheByteCapIsNotStored) {
  TempDir dir;
  ResponseCacheParams p;
  p.max_bytes = entry_size(response_n(1, 8)) + 10;
  Opened c;
  open_ok(dir.file("cache.db"), p, &c);
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(1, 8)).ok());
  ASSERT_TRUE(c.cache->store(key_n(2), response_n(2, 100)).ok());
  EXPECT_TRUE(has(c.cache.get(), 1));  // not evicted to make room for something that cannot fit
  EXPECT_FALSE(has(c.cache.get(), 2));
}

// ---- TTL -------------------------------------------------------------------------------------

TEST(CacheStore, EntriesExpireAfterTtl) {
  TempDir dir;
  auto now = std::make_shared<std::atomic<int64_t>>(1'700'000'000'000);
  ResponseCacheParams p;
  p.ttl_seconds = 60;
  p.clock_ms = [now] { return now->load(); };
  Opened c;
  open_ok(dir.file("cache.db"), p, &c);
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(1)).ok());
  *now += 30'000;
  ASSERT_TRUE(c.cache->store(key_n(2), response_n(2)).ok());
  *now += 29'999;  // 1 is 59.999 s old
  EXPECT_TRUE(has(c.cache.get(), 1));
  *now += 1;  // 60 s: expired
  EXPECT_FALSE(has(c.cache.get(), 1));
  EXPECT_TRUE(has(c.cache.get(), 2));
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 1u);  // the expired entry was removed when found
  EXPECT_EQ(st.expirations, 1u);

  // A store removes every expired entry, found or not.
  *now += 30'000;  // 2 is 60 s old
  ASSERT_TRUE(c.cache->store(key_n(3), response_n(3)).ok());
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.expirations, 2u);
  EXPECT_TRUE(has(c.cache.get(), 3));

  // A hit does not extend the lifetime: TTL counts from the store.
  *now += 59'000;
  EXPECT_TRUE(has(c.cache.get(), 3));
  *now += 1'000;
  EXPECT_FALSE(has(c.cache.get(), 3));
}

TEST(CacheStore, WithoutTtlEntriesNeverExpire) {
  TempDir dir;
  auto now = std::make_shared<std::atomic<int64_t>>(0);
  ResponseCacheParams p;
  p.clock_ms = [now] { return now->load(); };
  Opened c;
  open_ok(dir.file("cache.db"), p, &c);
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(1)).ok());
  *now += int64_t{10} * 365 * 24 * 3600 * 1000;
  EXPECT_TRUE(has(c.cache.get(), 1));
}

// ---- clear / vacuum --------------------------------------------------------------------------

TEST(CacheStore, ClearAndVacuum) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.cache->store(key_n(i), response_n(i, 200)).ok());
  ASSERT_TRUE(c.cache->clear().ok());
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
  EXPECT_FALSE(has(c.cache.get(), 3));
  EXPECT_TRUE(c.cache->vacuum().ok());
  ASSERT_TRUE(c.cache->store(key_n(3), response_n(3)).ok());
  EXPECT_TRUE(has(c.cache.get(), 3));
}

// ---- damaged files ---------------------------------------------------------------------------

// The damaged database files set aside (not their -wal companions).
std::vector<std::string> set_aside_files(const TempDir& dir) {
  std::vector<std::string> out;
  for (const std::string& n : dir.list("cache.db.damaged-")) {
    if (n.size() < 4 || n.substr(n.size() - 4) != "-wal") out.push_back(n);
  }
  return out;
}

void expect_set_aside_and_fresh(const TempDir& dir, const std::string& original_bytes, const Opened& c) {
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("damaged"), std::string::npos) << c.warnings[0];
  const std::vector<std::string> aside = set_aside_files(dir);
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_NE(c.warnings[0].find(aside[0]), std::string::npos) << c.warnings[0];
  EXPECT_EQ(read_bytes(dir.file(aside[0])), original_bytes);  // kept exactly as it was
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 0u);
  ASSERT_TRUE(c.cache->store(key_n(7), response_n(7)).ok());
  EXPECT_TRUE(has(c.cache.get(), 7));
}

TEST(CacheStore, DamagedPagesBehindOurHeaderAreSetAsideAndANewCacheStarts) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 20, 100);
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 4096u);
  // Everything after SQLite's 100-byte header (which names lmrt's application id) is garbage.
  for (size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_bytes(path, bytes);
  // A stale WAL beside it must not leak into the new cache (SQLite discards an invalid one itself).
  write_bytes(dir.file("cache.db-wal"), "stale wal");
  Opened c;
  open_ok(path, {}, &c);
  expect_set_aside_and_fresh(dir, bytes, c);
  EXPECT_NE(read_bytes(dir.file("cache.db-wal")), "stale wal");
}

// Issue 19: `--cache FILE` pointed at a model moved the model aside and wrote a database in its place.
TEST(CacheStore, AFileThatIsNotAnLmrtCacheIsNeverMovedOrReplaced) {
  std::string garbage(70000, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 2654435761u) >> 13);
  const std::string model = test::read_file(test::model_path("stories260K.gguf"));
  ASSERT_EQ(model.substr(0, 4), "GGUF");
  std::string sqlite_header_only("SQLite format 3\0", 16);  // the magic without lmrt's application id
  sqlite_header_only += std::string(200, '\x01');
  for (const std::string* bytes : std::initializer_list<const std::string*>{&garbage, &model, &sqlite_header_only}) {
    TempDir dir;
    const std::string path = dir.file("cache.db");
    write_bytes(path, *bytes);
    std::unique_ptr<ResponseCache> cache;
    Status s = ResponseCache::open(path, {}, &cache);
    EXPECT_EQ(s.code(), Code::cache) << s.message();
    EXPECT_NE(s.message().find("is not an lmrt cache"), std::string::npos) << s.message();
    EXPECT_TRUE(read_bytes(path) == *bytes) << "the file was changed";
    EXPECT_TRUE(dir.list("cache.db.damaged-").empty());
  }
}

TEST(CacheStore, APathThatIsNotARegularFileIsRefused) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, dir.file(""), std::string("/dev/null")}) {
    // /dev/null only read-only: should this regress, SQLite must not leave a journal beside it.
    for (bool read_only : {false, true}) {
      if (path == "/dev/null" && !read_only) continue;
      ResponseCacheParams params;
      params.read_only = read_only;
      std::unique_ptr<ResponseCache> cache;
      Status s = ResponseCache::open(path, params, &cache);
      EXPECT_EQ(s.code(), Code::cache) << path;
      EXPECT_NE(s.message().find("is not a regular file"), std::string::npos) << s.message();
    }
  }
  EXPECT_EQ(dir.list().size(), 1u);  // the FIFO alone: nothing set aside or created
}

// Issue 19: an empty file opened read-only was reported as "an old schema".
TEST(CacheStore, AnEmptyFileOpenedReadOnlyIsCalledEmpty) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  write_bytes(path, "");
  ResponseCacheParams params;
  params.read_only = true;
  std::unique_ptr<ResponseCache> cache;
  Status s = ResponseCache::open(path, params, &cache);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is empty (no lmrt cache yet)"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("old schema"), std::string::npos) << s.message();
}

TEST(CacheStore, TruncatedDatabaseIsSetAsideAndANewCacheStarts) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 60, 100);
  ASSERT_FALSE(file_exists(path + "-wal")) << "closing should have checkpointed the WAL";
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 16u * 4096);
  bytes.resize(bytes.size() / 2);
  write_bytes(path, bytes);
  Opened c;
  open_ok(path, {}, &c);
  expect_set_aside_and_fresh(dir, bytes, c);
}

TEST(CacheStore, OverwrittenPagesAreSetAside) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 60, 100);
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 8u * 4096);
  for (size_t i = 4096; i < 3 * 4096; ++i) bytes[i] = static_cast<char>(0xA5 ^ i);
  write_bytes(path, bytes);
  Opened c;
  open_ok(path, {}, &c);
  expect_set_aside_and_fresh(dir, bytes, c);
}

TEST(CacheStore, UnreadableSchemaIsSetAside) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 3);
  raw_sql(path, "DROP TABLE totals");
  const std::string bytes = read_bytes(path);
  Opened c;
  open_ok(path, {}, &c);
  expect_set_aside_and_fresh(dir, bytes, c);
}

TEST(CacheStore, AnotherApplicationsDatabaseIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  raw_sql(path, "CREATE TABLE users(name TEXT); INSERT INTO users VALUES('ada')");
  const std::string before = read_bytes(path);
  std::unique_ptr<ResponseCache> cache;
  Status s = ResponseCache::open(path, {}, &cache);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("another application"), std::string::npos) << s.message();
  EXPECT_EQ(raw_sql(path, "SELECT name FROM users"), "ada");
  EXPECT_TRUE(dir.list("cache.db.damaged-").empty());
}

TEST(CacheStore, ANewerSchemaIsLeftAlone) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 2);
  raw_sql(path, "PRAGMA user_version = 99");
  std::unique_ptr<ResponseCache> cache;
  Status s = ResponseCache::open(path, {}, &cache);
  EXPECT_EQ(s.code(), Code::unsupported) << s.message();
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), "2");
  EXPECT_TRUE(dir.list("cache.db.damaged-").empty());
}

TEST(CacheStore, AnUnreadableEntryIsAMissAndIsRemoved) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  Opened c;
  open_ok(path, {}, &c);
  ASSERT_TRUE(c.cache->store(key_n(1), response_n(1)).ok());
  ASSERT_TRUE(c.cache->store(key_n(2), response_n(2)).ok());
  raw_sql(path, "UPDATE entries SET value = substr(value, 1, 20) WHERE key = x'" + sha256_hex(key_n(1)) + "'");
  EXPECT_FALSE(has(c.cache.get(), 1));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("unreadable"), std::string::npos) << c.warnings[0];
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), "1");
  EXPECT_TRUE(has(c.cache.get(), 2));
}

// A child process that opens `path` with plain SQLite and holds a lock on it until the parent
// closes `release`: with `exclusive`, the whole file (no other connection may even read); without,
// the write lock (an open BEGIN IMMEDIATE transaction). It writes one byte to `ready` once the lock
// is held. Returns the child's pid, negated when it could not take the lock.
pid_t hold_lock(const std::string& path, bool exclusive, int* release_fd) {
  int ready[2], release[2];
  if (::pipe(ready) != 0 || ::pipe(release) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(release[1]);
    sqlite3* db = nullptr;
    int rc = sqlite3_open(path.c_str(), &db);
    if (exclusive) {
      // In exclusive locking mode the first write takes the file's lock and keeps it.
      if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;", 0, 0, 0);
      if (rc == SQLITE_OK) rc = sqlite3_exec(db, "UPDATE totals SET entries = entries WHERE id = 0; COMMIT;", 0, 0, 0);
    } else {
      if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN IMMEDIATE; UPDATE totals SET entries = entries;", 0, 0, 0);
    }
    const char ok = rc == SQLITE_OK ? 'y' : 'n';
    (void)!::write(ready[1], &ok, 1);
    char c;
    (void)!::read(release[0], &c, 1);  // returns when the parent closes its end
    sqlite3_close(db);
    ::_exit(rc == SQLITE_OK ? 0 : 1);
  }
  ::close(ready[1]);
  ::close(release[0]);
  char ok = 'n';
  (void)!::read(ready[0], &ok, 1);
  ::close(ready[0]);
  *release_fd = release[1];
  return ok == 'y' ? pid : -pid;
}

int release_lock(pid_t pid, int release_fd) {
  ::close(release_fd);
  int status = 0;
  ::waitpid(pid < 0 ? -pid : pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CacheStore, AFileLockedByAnotherProcessIsNotTakenForDamage) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 4);
  int release_fd = -1;
  const pid_t holder = hold_lock(path, /*exclusive=*/true, &release_fd);
  ASSERT_GT(holder, 0) << "the child could not lock the file";

  ResponseCacheParams p;
  p.busy_timeout_ms = 200;
  std::unique_ptr<ResponseCache> cache;
  const auto start = std::chrono::steady_clock::now();
  Status s = ResponseCache::open(path, p, &cache);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::cache);
  EXPECT_NE(s.message().find("locked"), std::string::npos) << s.message();
  EXPECT_LT(waited, std::chrono::seconds(3));  // bounded by the timeout, not forever
  EXPECT_TRUE(dir.list("cache.db.damaged-").empty());

  EXPECT_EQ(release_lock(holder, release_fd), 0);
  Opened c;
  open_ok(path, p, &c);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(has(c.cache.get(), i)) << i;
}

TEST(CacheStore, AWriteLockHeldBeyondTheTimeoutFailsStoresWithoutBreakingTheCache) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 2);
  ResponseCacheParams p;
  p.busy_timeout_ms = 150;
  Opened c;
  open_ok(path, p, &c);
  int release_fd = -1;
  const pid_t holder = hold_lock(path, /*exclusive=*/false, &release_fd);
  ASSERT_GT(holder, 0) << "the child could not take the write lock";
  const auto start = std::chrono::steady_clock::now();
  Status ss = c.cache->store(key_n(5), response_n(5));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(ss.code(), Code::cache) << ss.message();
  // Readers are not blocked by a writer in WAL mode: the hit is served; only its recency mark
  // could not be written, which is reported as a warning.
  EXPECT_TRUE(has(c.cache.get(), 0));
  EXPECT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(release_lock(holder, release_fd), 0);
  EXPECT_TRUE(has(c.cache.get(), 1));
  ASSERT_TRUE(c.cache->store(key_n(5), response_n(5)).ok());
  EXPECT_TRUE(has(c.cache.get(), 5));
  EXPECT_EQ(c.warnings.size(), 1u);
}

// ---- read-only -------------------------------------------------------------------------------

TEST(CacheStore, ReadOnlyModeLooksUpButNeverWrites) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 3);
  const std::string before = read_bytes(path);
  ResponseCacheParams p;
  p.read_only = true;
  Opened c;
  open_ok(path, p, &c);
  EXPECT_TRUE(c.cache->is_read_only());
  EXPECT_TRUE(c.warnings.empty());  // asked for, so no warning
  EXPECT_TRUE(has(c.cache.get(), 1));
  EXPECT_TRUE(c.cache->store(key_n(10), response_n(10)).ok());  // silently skipped
  EXPECT_FALSE(has(c.cache.get(), 10));
  EXPECT_FALSE(c.cache->clear().ok());
  EXPECT_FALSE(c.cache->vacuum().ok());
  c.cache.reset();
  EXPECT_EQ(read_bytes(path), before);
}

TEST(CacheStore, ReadOnlyModeDoesNotSetADamagedFileAside) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  write_bytes(path, std::string(5000, 'x'));
  ResponseCacheParams p;
  p.read_only = true;
  std::unique_ptr<ResponseCache> cache;
  EXPECT_FALSE(ResponseCache::open(path, p, &cache).ok());
  EXPECT_EQ(read_bytes(path), std::string(5000, 'x'));
  EXPECT_TRUE(dir.list("cache.db.damaged-").empty());
}

TEST(CacheStore, MissingFileInReadOnlyModeIsAnError) {
  TempDir dir;
  ResponseCacheParams p;
  p.read_only = true;
  std::unique_ptr<ResponseCache> cache;
  EXPECT_FALSE(ResponseCache::open(dir.file("absent.db"), p, &cache).ok());
  EXPECT_FALSE(file_exists(dir.file("absent.db")));
}

// Opens the cache as a user without write permission (a child process that drops root, since
// root writes through chmod) and checks read-only mode. Returns a bit mask of failed checks.
int check_read_only_as_unprivileged_user(const std::string& path) {
  return run_in_child([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 100;
    std::vector<std::string> warnings;
    ResponseCacheParams p;
    p.on_warning = [&](const std::string& w) { warnings.push_back(w); };
    std::unique_ptr<ResponseCache> cache;
    Status s = ResponseCache::open(path, p, &cache);
    if (!s.ok()) return 101;
    int failed = 0;
    if (!cache->is_read_only()) failed |= 1;
    if (warnings.size() != 1 || warnings[0].find("read-only") == std::string::npos) failed |= 2;
    CachedResponse out;
    bool hit = false;
    if (!cache->lookup(key_n(1), &out, &hit).ok() || !hit || !(out == response_n(1))) failed |= 4;
    if (!cache->store(key_n(20), response_n(20)).ok()) failed |= 8;
    if (!cache->lookup(key_n(20), &out, &hit).ok() || hit) failed |= 16;
    return failed;
  });
}

TEST(CacheStore, ReadOnlyFolderGivesReadOnlyMode) {
  TempDir dir;
  const std::string folder = dir.file("ro");
  ASSERT_EQ(::mkdir(folder.c_str(), 0755), 0);
  const std::string path = folder + "/cache.db";
  fill(path, 3);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
  EXPECT_EQ(check_read_only_as_unprivileged_user(path), 0);
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), "3");
}

TEST(CacheStore, ReadOnlyFileGivesReadOnlyMode) {
  TempDir dir;
  const std::string folder = dir.file("rw");
  ASSERT_EQ(::mkdir(folder.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(folder.c_str(), 0777), 0);  // not narrowed by umask
  const std::string path = folder + "/cache.db";
  fill(path, 3);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  EXPECT_EQ(check_read_only_as_unprivileged_user(path), 0);
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), "3");
}

// ---- sharing -------------------------------------------------------------------------------

TEST(CacheStore, ThreadsSharingOneCacheObjectLoseNothing) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const int n = t * 1000 + i;
        if (!c.cache->store(key_n(n), response_n(n)).ok()) ++failures;
        CachedResponse out;
        bool hit = false;
        if (!c.cache->lookup(key_n(n), &out, &hit).ok() || !hit || !(out == response_n(n))) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  ResponseCacheStats st;
  ASSERT_TRUE(c.cache->stats(&st).ok());
  EXPECT_EQ(st.entries, 200u);
  EXPECT_EQ(st.hits, 200u);
}

TEST(CacheStore, ThreadsWithTheirOwnConnectionsLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<ResponseCache> cache;
      ResponseCacheParams p;
      p.busy_timeout_ms = 10000;
      if (!ResponseCache::open(path, p, &cache).ok()) {
        failures += 1000;
        return;
      }
      for (int i = 0; i < 25; ++i) {
        if (!cache->store(key_n(t * 1000 + i), response_n(t * 1000 + i)).ok()) ++failures;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), "100");
}

TEST(CacheStore, FourProcessesWritingOneFileLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  constexpr int kProcesses = 4, kRequests = 50;
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int proc = 0; proc < kProcesses; ++proc) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(start[1]);
      char c;
      (void)!::read(start[0], &c, 1);  // all start together when the parent closes the pipe
      std::unique_ptr<ResponseCache> cache;
      ResponseCacheParams p;
      p.busy_timeout_ms = 20000;
      if (!ResponseCache::open(path, p, &cache).ok()) ::_exit(10);
      int failed = 0;
      for (int i = 0; i < kRequests; ++i) {
        const int n = proc * 1000 + i;
        CachedResponse out;
        bool hit = true;
        if (!cache->lookup(key_n(n), &out, &hit).ok() || hit) ++failed;  // a miss first
        if (!cache->store(key_n(n), response_n(n, 32, 2)).ok()) ++failed;
        if (!cache->lookup(key_n(n), &out, &hit).ok() || !hit || !(out == response_n(n, 32, 2))) ++failed;
        // Read what a neighbour may have written, to mix readers in with the writers.
        (void)cache->lookup(key_n(((proc + 1) % kProcesses) * 1000 + i), &out, &hit);
      }
      ::_exit(failed > 0 ? 20 : 0);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit status " << status;
  }
  EXPECT_EQ(raw_sql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), std::to_string(kProcesses * kRequests));
  EXPECT_EQ(raw_sql(path, "SELECT entries FROM totals"), std::to_string(kProcesses * kRequests));
  Opened c;
  open_ok(path, {}, &c);
  for (int proc = 0; proc < kProcesses; ++proc) {
    for (int i = 0; i < kRequests; ++i) {
      const int n = proc * 1000 + i;
      CachedResponse out;
      bool hit = false;
      ASSERT_TRUE(c.cache->lookup(key_n(n), &out, &hit).ok());
      ASSERT_TRUE(hit) << "entry " << n << " lost";
      EXPECT_EQ(out, response_n(n, 32, 2));
    }
  }
}

TEST(CacheStore, ProcessesOpeningOneDamagedFileAtOnceSetItAsideOnce) {
  TempDir dir;
  const std::string path = dir.file("cache.db");
  fill(path, 3);
  std::string damaged = read_bytes(path);  // lmrt's SQLite header, then garbage
  damaged.replace(100, std::string::npos, std::string(50000, '\x5a'));
  write_bytes(path, damaged);
  constexpr int kProcesses = 4, kRequests = 10;
  int start[2];
  ASSERT_EQ(::pipe(start), 0);
  std::vector<pid_t> children;
  for (int proc = 0; proc < kProcesses; ++proc) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(start[1]);
      char c;
      (void)!::read(start[0], &c, 1);
      std::unique_ptr<ResponseCache> cache;
      ResponseCacheParams p;
      p.busy_timeout_ms = 20000;
      Status s = ResponseCache::open(path, p, &cache);
      if (!s.ok()) {
        std::fprintf(stderr, "child %d: %s\n", proc, s.message().c_str());
        ::_exit(10);
      }
      for (int i = 0; i < kRequests; ++i) {
        if (!cache->store(key_n(proc * 1000 + i), response_n(proc * 1000 + i)).ok()) ::_exit(20);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit status " << status;
  }
  const std::vector<std::string> aside = set_aside_files(dir);
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(read_bytes(dir.file(aside[0])), damaged);
  EXPECT_EQ(raw_sql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw_sql(path, "SELECT count(*) FROM entries"), std::to_string(kProcesses * kRequests));
}

TEST(CacheStore, OpenArgumentsAreChecked) {
  std::unique_ptr<ResponseCache> cache;
  EXPECT_EQ(ResponseCache::open("", {}, &cache).code(), Code::invalid_argument);
  ResponseCacheParams p;
  p.ttl_seconds = -1;
  EXPECT_EQ(ResponseCache::open("/tmp/x.db", p, &cache).code(), Code::invalid_argument);
  EXPECT_FALSE(ResponseCache::open("/nonexistent-folder/for/sure/cache.db", {}, &cache).ok());
}

// ---- replay speed ----------------------------------------------------------------------------

// Prints the median time to look up and deserialise a cached 256-token completion with top-5
// logprobs (what a hit costs before it is streamed). No assertion on time: unit tests must not
// depend on the machine's load.
TEST(CacheStoreBench, ReplayOf256TokenCompletionPrintsMedian) {
  TempDir dir;
  Opened c;
  open_ok(dir.file("cache.db"), {}, &c);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(c.cache->store(key_n(i), response_n(i, 256, 5)).ok());
  const CachedResponse expected = response_n(77, 256, 5);
  std::vector<double> us;
  for (int i = 0; i < 500; ++i) {
    CachedResponse out;
    bool hit = false;
    const auto t0 = std::chrono::steady_clock::now();
    Status s = c.cache->lookup(key_n(77), &out, &hit);
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(s.ok() && hit);
    if (i == 0) {
      ASSERT_EQ(out, expected);
    }
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::string blob;
  ASSERT_TRUE(serialize_cached_response(expected, &blob).ok());
  std::printf("[ replay   ] 256-token completion with top-5 logprobs (%zu-byte entry): median %.1f us, p90 %.1f us\n",
              blob.size(), us[us.size() / 2], us[us.size() * 9 / 10]);
  RecordProperty("replay_median_us", std::to_string(us[us.size() / 2]));
}

}  // namespace
}  // namespace lmrt
