// Setting a damaged cache file aside: it is renamed (kept for inspection), never deleted.
#pragma once

#include <sys/types.h>

#include <string>

#include "runtime/util/status.h"

namespace lmrt {

// The identity of a file on disk, to tell whether another process replaced it meanwhile.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool exists = false;

  bool operator==(const FileIdentity&) const = default;
};

FileIdentity identify_file(const std::string& path);

// An flock on the folder of a cache file, released on destruction. Opening a cache holds it shared while
// it opens and checks the file; set_aside_damaged_file holds it exclusively, so no process is part-way
// through opening a file when another renames it (SQLite finds the -wal and -shm by path: a connection
// opened on the old file would read the new file's log and checkpoint it into the old one).
class FolderLock {
 public:
  FolderLock() = default;
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock() { release(); }
  // Waits a bounded time for the lock. Errors: io when the folder cannot be opened or stays locked.
  Status lock(const std::string& folder, bool exclusive);
  void release();

 private:
  int fd_ = -1;
};

// The folder of `path` ("." for a bare name).
std::string parent_folder(const std::string& path);

// True when the file at `path` starts with an SQLite header that carries lmrt's application id
// (cache_schema::kApplicationId at byte 68): only such a file may be set aside as a damaged cache.
// Anything else (a model, a text file, another program's database) is never moved.
bool has_own_cache_header(const std::string& path);

// Renames `path` to "<path>.damaged-YYYYMMDD-HHMMSS" (with "-N" appended when that name is taken)
// and its "-wal" and "-journal" companions alongside it; removes its "-shm" (derived state).
// Holds an exclusive flock on the folder while doing so, and does nothing when the file there is
// no longer `examined` (another process has already set it aside and made a new one):
// *replaced_meanwhile is then true. Errors: io when the folder cannot be locked or a rename fails.
Status set_aside_damaged_file(const std::string& path, const FileIdentity& examined, std::string* moved_to,
                              bool* replaced_meanwhile);

}  // namespace lmrt
