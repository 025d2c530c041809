#include "runtime/util/file_replacer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/util/regular_file.h"

namespace lmrt {

FileReplacer::~FileReplacer() { discard(); }

void FileReplacer::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
  fd_ = -1;
}

Status FileReplacer::open(const std::string& path) {
  discard();
  // The rename may replace only a regular file: never /dev/full, a folder, a FIFO, or what a link points
  // at that is not a regular file.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)))
    return Error(Code::invalid_argument,
                 "the output '" + path + "' exists and is not a regular file; it is never replaced");
  path_ = path;
  tmp_ = path + ".tmp";
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd_ >= 0) return Status::Ok();
  if (errno == EEXIST)
    return Error(Code::io, "the temporary file '" + tmp_ +
                               "' already exists (left by an interrupted write?); remove it or choose another output");
  return io_error("cannot create", tmp_);
}

Status FileReplacer::write(const void* data, size_t n) {
  if (fd_ < 0) return Error(Code::internal, "FileReplacer::write before open");
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      Status s = io_error("cannot write", tmp_);
      discard();
      return s;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status FileReplacer::commit() {
  if (fd_ < 0) return Error(Code::internal, "FileReplacer::commit before open");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    Status s = io_error("cannot close", tmp_);
    ::unlink(tmp_.c_str());
    return s;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    Status s = io_error("cannot rename to", path_);
    ::unlink(tmp_.c_str());
    return s;
  }
  return Status::Ok();
}

Status replace_file(const std::string& path, const void* data, size_t n) {
  FileReplacer f;
  LMRT_RETURN_IF_ERROR(f.open(path));
  LMRT_RETURN_IF_ERROR(f.write(data, n));
  return f.commit();
}

}  // namespace lmrt
