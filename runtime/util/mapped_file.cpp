#include "runtime/util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "runtime/util/regular_file.h"

namespace lmrt {

namespace {

// Closes a file descriptor on scope exit.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Status MappedFile::open(const std::string& path, bool use_mmap, std::unique_ptr<MappedFile>* out) {
  if (path.empty()) return Error(Code::invalid_argument, "model path is empty");
  FdGuard fd{-1};
  uint64_t size = 0;
  LMRT_RETURN_IF_ERROR(open_regular_file(path, &fd.fd, &size));

  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(size);
  if (file->size_ == 0) {
    *out = std::move(file);
    return Status::Ok();
  }
  if (use_mmap) {
    // Read-only: a writable private mapping would be charged in full against the commit limit (a file larger
    // than RAM + swap could not be mapped).
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd.fd, 0);
    if (p == MAP_FAILED) return io_error("cannot mmap", path);
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
  } else {
    // The size comes from the file system, but a huge file must fail cleanly, not throw.
    try {
      file->owned_.resize(file->size_);
    } catch (const std::bad_alloc&) {
      return Error(Code::out_of_memory,
                   "cannot allocate " + std::to_string(file->size_) + " bytes to read '" + path + "' (try mmap)");
    }
    size_t done = 0;
    while (done < file->size_) {
      ssize_t n = ::pread(fd.fd, file->owned_.data() + done, file->size_ - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return io_error("cannot read", path);
      if (n == 0) return Error(Code::io, "file '" + path + "' shrank while it was being read");
      done += static_cast<size_t>(n);
    }
    file->data_ = file->owned_.data();
    file->owns_bytes_ = true;
  }
  *out = std::move(file);
  return Status::Ok();
}

uint8_t* MappedFile::owned_bytes(const uint8_t* p, size_t n) {
  if (!owns_bytes_ || p < data_ || n > size_ || p - data_ > static_cast<ptrdiff_t>(size_ - n)) return nullptr;
  return const_cast<uint8_t*>(p);
}

bool MappedFile::inner_pages(const uint8_t* p, size_t n, void** begin, size_t* bytes) const {
  if (!mapped_ || p < data_ || n > size_ || p - data_ > static_cast<ptrdiff_t>(size_ - n)) return false;
  // Whole pages inside the range only: the pages at its ends may hold a neighbour's bytes still in use.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + n) & ~(page - 1);
  if (e <= b) return false;
  *begin = reinterpret_cast<void*>(b);
  *bytes = e - b;
  return true;
}

void MappedFile::release_pages(const uint8_t* p, size_t n) {
  void* begin = nullptr;
  size_t bytes = 0;
  if (!inner_pages(p, n, &begin, &bytes)) return;
  // No huge mappings here: the range becomes an area of its own, so a fault on a neighbour (whose page
  // cache folio may be 2 MiB and would be mapped whole) cannot map these pages back.
  (void)::madvise(begin, bytes, MADV_NOHUGEPAGE);
  // The mapping is read-only and never written, so nothing is lost: a page read again comes back from the
  // page cache (or the file).
  (void)::madvise(begin, bytes, MADV_DONTNEED);
}

void MappedFile::advise_sparse(const uint8_t* p, size_t n) {
  void* begin = nullptr;
  size_t bytes = 0;
  if (!inner_pages(p, n, &begin, &bytes)) return;
  // A read maps the page read, not the 64 KiB around it or its whole 2 MiB folio.
  (void)::madvise(begin, bytes, MADV_NOHUGEPAGE);
  (void)::madvise(begin, bytes, MADV_RANDOM);
}

std::unique_ptr<MappedFile> MappedFile::from_bytes(const uint8_t* data, size_t size) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->owned_.assign(data, data + size);
  file->data_ = file->owned_.data();
  file->size_ = size;
  file->path_ = "<memory>";
  file->owns_bytes_ = true;
  return file;
}

std::unique_ptr<MappedFile> MappedFile::view(const uint8_t* data, size_t size) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->data_ = data;
  file->size_ = size;
  file->path_ = "<memory>";
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_ && data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace lmrt
