// An owned anonymous mapping, 2 MiB-aligned and advised for transparent huge pages: the home of the weights
// rewritten at load (runtime/model/weight_repack.h). Decode streams them once per token, and some hosts
// read hundreds of MiB of 4 KiB pages far slower than the same bytes on huge pages (BENCHMARKS.md, "Where
// the repacked weights live").
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace lmrt {

class HugePageBuffer {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;

  HugePageBuffer() = default;
  ~HugePageBuffer() { release(); }
  HugePageBuffer(HugePageBuffer&& o) noexcept
      : map_(std::exchange(o.map_, nullptr)),
        map_bytes_(std::exchange(o.map_bytes_, 0)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  HugePageBuffer& operator=(HugePageBuffer&& o) noexcept {
    if (this != &o) {
      release();
      map_ = std::exchange(o.map_, nullptr);
      map_bytes_ = std::exchange(o.map_bytes_, 0);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  // n zeroed bytes (replacing any previous contents); false when the mapping cannot be made. Pages are
  // committed on first write, as the loader fills them.
  [[nodiscard]] bool allocate(size_t n) {
    release();
    if (n == 0) return true;
    if (n > SIZE_MAX - 2 * kHugePage) return false;
    const size_t bytes = (n + kHugePage - 1) / kHugePage * kHugePage + kHugePage;  // room to align the start
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    map_ = p;
    map_bytes_ = bytes;
    const uintptr_t start = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    data_ = reinterpret_cast<uint8_t*>(start);
    size_ = n;
#ifdef MADV_HUGEPAGE
    // Advice only: where transparent huge pages are off the buffer is still usable, on 4 KiB pages.
    (void)::madvise(data_, (n + kHugePage - 1) / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
    return true;
  }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release() {
    if (map_ != nullptr) ::munmap(map_, map_bytes_);
    map_ = nullptr;
    map_bytes_ = 0;
    data_ = nullptr;
    size_ = 0;
  }

  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace lmrt
