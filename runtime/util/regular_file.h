// Reading a whole file a caller names (a saved context state, a saved conversation): only a regular file,
// opened without blocking (opening a FIFO for reading waits for a writer forever), refused before
// anything is allocated for it when it is larger than the caller can use. Header-only, like the other
// small pieces the CLI shares with the library.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/util/status.h"

namespace lmrt {

// Code::io "WHAT 'PATH': strerror(errno)".
inline Status io_error(const std::string& what, const std::string& path) {
  return Error(Code::io, what + " '" + path + "': " + std::strerror(errno));
}

// Opens `path` for reading without blocking and checks that it is a regular file: *fd (the caller closes it)
// and its *size. Errors: io ("cannot open 'PATH': ...", "cannot stat ...", "'PATH' is not a regular file").
inline Status open_regular_file(const std::string& path, int* fd, uint64_t* size) {
  *fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (*fd < 0) return io_error("cannot open", path);
  struct stat st {};
  Status s = Status::Ok();
  if (::fstat(*fd, &st) != 0)
    s = io_error("cannot stat", path);
  else if (!S_ISREG(st.st_mode))
    s = Error(Code::io, "'" + path + "' is not a regular file");
  if (!s.ok()) {
    ::close(*fd);
    *fd = -1;
    return s;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return s;
}

// Errors: as open_regular_file, io ("cannot read 'PATH' completely"), bad_format ("'PATH' (N bytes) is
// larger than LIMIT_NAME" when it has more than max_bytes).
inline Status read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& limit_name,
                                std::string* out) {
  int fd = -1;
  uint64_t size = 0;
  LMRT_RETURN_IF_ERROR(open_regular_file(path, &fd, &size));
  if (size > max_bytes) {
    ::close(fd);
    return Error(Code::bad_format, "'" + path + "' (" + std::to_string(size) + " bytes) is larger than " + limit_name);
  }
  std::string text(static_cast<size_t>(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != text.size()) return Error(Code::io, "cannot read '" + path + "' completely");
  *out = std::move(text);
  return Status::Ok();
}

}  // namespace lmrt
