// A small, bounded GGUF header walker: it skips every value except the one string it looks for.
#include "gguf_metadata.h"

#include <cstdint>
#include <cstring>
#include <fstream>

namespace server {
namespace {

enum GgufType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

constexpr uint64_t kMaxStringBytes = 64ull << 20;  // a chat template is a few KiB; refuse absurd lengths
constexpr uint64_t kMaxKeys = 1u << 20;

class Reader {
 public:
  explicit Reader(const std::string& path) : in_(path, std::ios::binary) {}
  bool ok() const { return static_cast<bool>(in_); }

  template <typename T>
  bool read(T* v) {
    in_.read(reinterpret_cast<char*>(v), sizeof(T));
    return static_cast<bool>(in_);
  }
  bool skip(uint64_t n) {
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    return static_cast<bool>(in_);
  }
  bool read_string(std::string* s) {
    uint64_t len = 0;
    if (!read(&len) || len > kMaxStringBytes) return false;
    s->resize(len);
    in_.read(s->data(), static_cast<std::streamsize>(len));
    return static_cast<bool>(in_);
  }
  bool skip_string() {
    uint64_t len = 0;
    return read(&len) && len <= kMaxStringBytes && skip(len);
  }
  bool skip_value(uint32_t type, int depth) {
    switch (type) {
      case kU8:
      case kI8:
      case kBool:
        return skip(1);
      case kU16:
      case kI16:
        return skip(2);
      case kU32:
      case kI32:
      case kF32:
        return skip(4);
      case kU64:
      case kI64:
      case kF64:
        return skip(8);
      case kString:
        return skip_string();
      case kArray: {
        uint32_t elem = 0;
        uint64_t count = 0;
        if (depth > 4 || !read(&elem) || !read(&count)) return false;
        const int width = elem == kU8 || elem == kI8 || elem == kBool    ? 1
                          : elem == kU16 || elem == kI16                 ? 2
                          : elem == kU32 || elem == kI32 || elem == kF32 ? 4
                          : elem == kU64 || elem == kI64 || elem == kF64 ? 8
                                                                         : 0;
        if (width != 0) return count <= (1ull << 40) && skip(count * static_cast<uint64_t>(width));
        for (uint64_t i = 0; i < count; ++i)
          if (!skip_value(elem, depth + 1)) return false;
        return true;
      }
      default:
        return false;
    }
  }

 private:
  std::ifstream in_;
};

}  // namespace

std::optional<std::string> read_gguf_string(const std::string& path, const std::string& key) {
  try {
    Reader r(path);
    char magic[4];
    uint32_t version = 0;
    uint64_t n_tensors = 0, n_kv = 0;
    if (!r.ok() || !r.read(&magic) || std::memcmp(magic, "GGUF", 4) != 0) return std::nullopt;
    if (!r.read(&version) || (version != 2 && version != 3)) return std::nullopt;
    if (!r.read(&n_tensors) || !r.read(&n_kv) || n_kv > kMaxKeys) return std::nullopt;
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string name;
      uint32_t type = 0;
      if (!r.read_string(&name) || !r.read(&type)) return std::nullopt;
      if (name == key) {
        if (type != kString) return std::nullopt;
        std::string value;
        if (!r.read_string(&value)) return std::nullopt;
        return value;
      }
      if (!r.skip_value(type, 0)) return std::nullopt;
    }
  } catch (...) {
  }
  return std::nullopt;
}

}  // namespace server
