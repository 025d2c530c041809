// An owned, 64-byte-aligned, zero-initialised buffer. Contexts allocate all of their memory through these
// when they are created. From 1 MiB (the KV arena, logits, scratch of large batches) it is an anonymous
// mapping advised for transparent huge pages (huge_page_buffer.h): zero pages committed on first write, and
// attention streams the arena through fewer TLB entries. Smaller ones come from the C library.
//
// Not mimalloc: Debian's libmimalloc replaces operator new for the whole process that loads it and aborts
// when an allocation fails (it never throws std::bad_alloc nor calls a new-handler), so a failed allocation
// inside any C ABI call would abort the caller's program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "runtime/util/huge_page_buffer.h"

namespace lmrt {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr size_t kMappedFromBytes = size_t{1} << 20;

  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(small_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : small_(std::exchange(o.small_, nullptr)),
        mapped_(std::move(o.mapped_)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(small_);
      small_ = std::exchange(o.small_, nullptr);
      mapped_ = std::move(o.mapped_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Allocates n elements (replacing any previous contents); false when out of memory.
  [[nodiscard]] bool allocate(size_t n) {
    std::free(small_);
    small_ = nullptr;
    (void)mapped_.allocate(0);
    data_ = nullptr;
    size_ = 0;
    if (n == 0) return true;
    if (n > (SIZE_MAX - 63) / sizeof(T)) return false;
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    if (bytes >= kMappedFromBytes) {
      if (!mapped_.allocate(bytes)) return false;
      data_ = reinterpret_cast<T*>(mapped_.data());
    } else {
      small_ = std::aligned_alloc(64, bytes);
      if (small_ == nullptr) return false;
      std::memset(small_, 0, bytes);
      data_ = static_cast<T*>(small_);
    }
    size_ = n;
    return true;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  void* small_ = nullptr;
  HugePageBuffer mapped_;
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lmrt
