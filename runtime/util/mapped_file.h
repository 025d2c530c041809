// A view of a whole file: mmap'ed (private, read-only), or read into memory when mapping is off. Readers see
// the file's bytes. The model may rewrite weights of a file read into memory in place (owned_bytes); a
// mapping is never written, only pages no longer read are given back (release_pages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

class MappedFile {
 public:
  // Opens `path`. With use_mmap the bytes are mapped read-only (MAP_PRIVATE), otherwise read into an owned
  // buffer. Errors: io (cannot open/stat/map/read),
  // invalid_argument (empty path).
  static Status open(const std::string& path, bool use_mmap, std::unique_ptr<MappedFile>* out);
  // Wraps bytes already in memory (tests and in-memory models); the buffer is copied.
  static std::unique_ptr<MappedFile> from_bytes(const uint8_t* data, size_t size);
  // Views bytes the caller keeps alive and unchanged for the MappedFile's lifetime; nothing is copied.
  static std::unique_ptr<MappedFile> view(const uint8_t* data, size_t size);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  // Bytes [p, p + n) of data(), writable, when they are this object's own buffer (read with mapping off, or
  // from_bytes); nullptr for a mapping, a view() of the caller's bytes, or a range outside the file.
  uint8_t* owned_bytes(const uint8_t* p, size_t n);
  // Unmaps the whole pages inside [p, p + n) of a mapping, which the caller will not read again (it copied
  // them): they leave the process's resident set. Reading them later still gives the file's bytes. Does
  // nothing for bytes in memory or a range outside the file.
  void release_pages(const uint8_t* p, size_t n);
  // Tells the kernel that [p, p + n) of a mapping is read a few bytes here and there (an embedding table looked
  // up by row), so that only the pages read become resident. Does nothing for bytes in memory.
  void advise_sparse(const uint8_t* p, size_t n);
  size_t size() const { return size_; }
  bool is_mapped() const { return mapped_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  // The whole pages inside [p, p + n) of a mapping; false for bytes in memory, a range outside the file or
  // one without a whole page.
  bool inner_pages(const uint8_t* p, size_t n, void** begin, size_t* bytes) const;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  bool owns_bytes_ = false;
  std::vector<uint8_t> owned_;
  std::string path_;
};

}  // namespace lmrt
