// Writing a file so that nothing that was there is lost: the way lmrt writes every file it makes
// (models, context states, logits, chat transcripts).
#pragma once

#include <cstddef>
#include <string>

#include "runtime/util/status.h"

namespace lmrt {

// The path must be absent or a regular file (a folder, a device, a FIFO, or a link to one, is never
// replaced). The bytes go to `path`.tmp, created afresh (O_EXCL | O_NOFOLLOW: never through a link,
// never over a file that was there), which commit() renames over `path`; on any failure, or when the
// replacer goes away uncommitted, the temporary file is removed. So `path` is either the whole new file
// or what it was before.
class FileReplacer {
 public:
  FileReplacer() = default;
  FileReplacer(const FileReplacer&) = delete;
  FileReplacer& operator=(const FileReplacer&) = delete;
  ~FileReplacer();

  // Errors: invalid_argument (`path` exists and is not a regular file), io (`path`.tmp already exists,
  // or cannot be created).
  Status open(const std::string& path);
  // Errors: io (the disk is full, a file size limit...).
  Status write(const void* data, size_t n);
  // Closes and renames. Errors: io.
  Status commit();

 private:
  void discard();

  std::string path_, tmp_;
  int fd_ = -1;
};

// The whole of data[0, n) as `path`, through a FileReplacer.
Status replace_file(const std::string& path, const void* data, size_t n);

}  // namespace lmrt
