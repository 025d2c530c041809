#include "runtime/cache/damaged_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "runtime/cache/cache_schema.h"

namespace lmrt {

std::string parent_folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status FolderLock::lock(const std::string& folder, bool exclusive) {
  release();
  fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return Error(Code::io, "cannot open folder " + folder + ": " + std::strerror(errno));
  // Held only while a file is opened or a few renames are made; give up after a bounded wait.
  for (int attempt = 0; attempt < 5000; ++attempt) {
    if (::flock(fd_, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return Status::Ok();
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int err = errno;
  release();
  return Error(Code::io, "cannot lock folder " + folder + ": " + std::strerror(err));
}

void FolderLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  fd_ = -1;
}

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string timestamp_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

}  // namespace

bool has_own_cache_header(const std::string& path) {
  // https://www.sqlite.org/fileformat.html: the 16-byte magic, then the application id big-endian
  // at offset 68 of the 100-byte header.
  unsigned char head[72];
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const ssize_t n = regular ? ::pread(fd, head, sizeof head, 0) : -1;
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof head) || std::memcmp(head, "SQLite format 3", 16) != 0) return false;
  const uint32_t app_id =
      (uint32_t{head[68]} << 24) | (uint32_t{head[69]} << 16) | (uint32_t{head[70]} << 8) | head[71];
  return app_id == static_cast<uint32_t>(cache_schema::kApplicationId);
}

FileIdentity identify_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, true};
}

Status set_aside_damaged_file(const std::string& path, const FileIdentity& examined, std::string* moved_to,
                              bool* replaced_meanwhile) {
  *replaced_meanwhile = false;
  FolderLock lock;
  LMRT_RETURN_IF_ERROR(lock.lock(parent_folder(path), true));
  if (!(identify_file(path) == examined)) {
    *replaced_meanwhile = true;
    return Status::Ok();
  }
  const std::string base = path + ".damaged-" + timestamp_now();
  std::string target = base;
  for (int n = 2; exists(target); ++n) target = base + "-" + std::to_string(n);
  if (::rename(path.c_str(), target.c_str()) != 0) {
    return Error(Code::io, "cannot rename damaged cache " + path + " to " + target + ": " + std::strerror(errno));
  }
  // The companions belong to the damaged file; left in place they would be replayed into the new one.
  for (const char* suffix : {"-wal", "-journal"}) {
    const std::string from = path + suffix;
    if (exists(from) && ::rename(from.c_str(), (target + suffix).c_str()) != 0) {
      return Error(Code::io, "cannot rename " + from + ": " + std::strerror(errno));
    }
  }
  const std::string shm = path + "-shm";
  if (::unlink(shm.c_str()) != 0 && errno != ENOENT) {
    return Error(Code::io, "cannot remove " + shm + ": " + std::strerror(errno));
  }
  *moved_to = target;
  return Status::Ok();
}

}  // namespace lmrt
