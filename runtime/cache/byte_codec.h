// Little-endian byte writer and bounds-checked reader for the cache's binary encodings (the key
// encoding and the stored response). Fixed byte order so a cache file moves between machines.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace lmrt::cache_codec {

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    u32(bits);
  }
  void raw(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  // A byte string as a 64-bit length followed by its bytes.
  void bytes64(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  // A byte string as a 32-bit length followed by its bytes (caller guarantees it fits).
  void bytes32(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }

  std::string& str() { return out_; }
  void reserve(size_t n) { out_.reserve(n); }

 private:
  std::string out_;
};

// Every read checks the remaining size first and returns false instead of reading past the end.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }
  size_t pos() const { return pos_; }

  bool u8(uint8_t* v) {
    if (remaining() < 1) return false;
    *v = data_[pos_++];
    return true;
  }
  bool u16(uint16_t* v) {
    if (remaining() < 2) return false;
    *v = static_cast<uint16_t>(data_[pos_] | (data_[pos_ + 1] << 8));
    pos_ += 2;
    return true;
  }
  bool u32(uint32_t* v) {
    if (remaining() < 4) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= uint32_t{data_[pos_ + i]} << (8 * i);
    pos_ += 4;
    *v = r;
    return true;
  }
  bool u64(uint64_t* v) {
    if (remaining() < 8) return false;
    uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= uint64_t{data_[pos_ + i]} << (8 * i);
    pos_ += 8;
    *v = r;
    return true;
  }
  bool i32(int32_t* v) {
    uint32_t u;
    if (!u32(&u)) return false;
    *v = static_cast<int32_t>(u);
    return true;
  }
  bool f32(float* v) {
    uint32_t u;
    if (!u32(&u)) return false;
    std::memcpy(v, &u, sizeof u);
    return true;
  }
  // A 32-bit length and that many bytes.
  bool bytes32(std::string* out) {
    uint32_t n;
    if (!u32(&n) || n > remaining()) return false;
    out->assign(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace lmrt::cache_codec
