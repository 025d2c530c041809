// An owned, 64-byte-aligned, zero-initialised buffer from mimalloc. Contexts allocate all of
// their memory through these when they are created.
#pragma once

#include <mimalloc.h>

#include <cstddef>
#include <cstring>
#include <utility>

namespace lmrt {

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer() { mi_free(data_); }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      mi_free(data_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Allocates n elements (replacing any previous contents); false when out of memory.
  [[nodiscard]] bool allocate(size_t n) {
    mi_free(data_);
    data_ = nullptr;
    size_ = 0;
    if (n == 0) return true;
    if (n > SIZE_MAX / sizeof(T)) return false;
    data_ = static_cast<T*>(mi_zalloc_aligned(n * sizeof(T), 64));
    if (data_ == nullptr) return false;
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
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lmrt
