// Test-side GGUF byte tools, written independently of the reader under test:
// - encoders and GgufBuilder write synthetic GGUF files (any header, every value type, tensors);
// - walk_gguf records where each field of a valid GGUF v2/v3 file lies, so tests can damage
//   exactly one field of a real file.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "runtime/util/mapped_file.h"

namespace lmrt::test::gguf {

// GGUF metadata value type ids.
enum : uint32_t {
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

// ggml tensor type ids.
enum : uint32_t { kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ8_0 = 8, kTQ4_K = 12, kTBF16 = 30 };

template <typename T>
std::string le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
inline std::string str(const std::string& s) { return le<uint64_t>(s.size()) + s; }
// An array value payload: element type, count, then the already-encoded elements.
inline std::string array(uint32_t elem_type, uint64_t count, const std::string& elems) {
  return le<uint32_t>(elem_type) + le<uint64_t>(count) + elems;
}

template <typename T>
void put(std::string& bytes, size_t at, T v) {
  if (at + sizeof(T) > bytes.size()) throw std::out_of_range("put past the end");
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}
template <typename T>
T get(const std::string& bytes, size_t at) {
  if (at + sizeof(T) > bytes.size()) throw std::out_of_range("get past the end");
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// Writes a GGUF file: header, key-values, tensor infos, padding, tensor data. Counts in the header
// and every tensor's offset can be overridden to write damaged files.
class GgufBuilder {
 public:
  GgufBuilder& version(uint32_t v) {
    version_ = v;
    return *this;
  }
  // Alignment used for layout; add a general.alignment key separately when it is not 32.
  GgufBuilder& layout_alignment(uint64_t a) {
    alignment_ = a;
    return *this;
  }
  GgufBuilder& kv(const std::string& key, uint32_t type, const std::string& payload) {
    kvs_ += str(key) + le<uint32_t>(type) + payload;
    ++n_kv_;
    return *this;
  }
  // A tensor whose data is `n_bytes` bytes of a pattern seeded by its index.
  GgufBuilder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t n_bytes) {
    tensors_.push_back({name, std::move(ne), type, n_bytes, ~uint64_t{0}});
    return *this;
  }
  GgufBuilder& tensor_offset(size_t index, uint64_t offset) {
    tensors_.at(index).offset = offset;
    return *this;
  }
  GgufBuilder& n_kv(uint64_t n) {
    n_kv_override_ = n;
    return *this;
  }
  GgufBuilder& n_tensors(uint64_t n) {
    n_tensors_override_ = n;
    return *this;
  }

  // The data offset (relative to the data section) at which tensor `index` is written.
  uint64_t natural_offset(size_t index) const {
    uint64_t off = 0;
    for (size_t k = 0; k < index; ++k) off = pad(off + tensors_[k].n_bytes);
    return off;
  }
  static uint8_t data_byte(size_t tensor_index, uint64_t k) {
    return static_cast<uint8_t>(tensor_index * 31 + k * 7 + 1);
  }

  std::string build() const {
    std::string out = "GGUF" + le<uint32_t>(version_);
    out += le<uint64_t>(n_tensors_override_ ? *n_tensors_override_ : tensors_.size());
    out += le<uint64_t>(n_kv_override_ ? *n_kv_override_ : n_kv_);
    out += kvs_;
    for (size_t k = 0; k < tensors_.size(); ++k) {
      const TensorSpec& t = tensors_[k];
      out += str(t.name) + le<uint32_t>(static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) out += le<uint64_t>(d);
      out += le<uint32_t>(t.type);
      out += le<uint64_t>(t.offset != ~uint64_t{0} ? t.offset : natural_offset(k));
    }
    if (tensors_.empty()) return out;
    out.resize(pad(out.size()), '\0');
    const size_t data_start = out.size();
    for (size_t k = 0; k < tensors_.size(); ++k) {
      out.resize(data_start + natural_offset(k), '\0');
      for (uint64_t b = 0; b < tensors_[k].n_bytes; ++b) out.push_back(static_cast<char>(data_byte(k, b)));
    }
    out.resize(pad(out.size()), '\0');
    return out;
  }

 private:
  struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    uint64_t n_bytes;
    uint64_t offset;
  };
  uint64_t pad(uint64_t x) const { return (x + alignment_ - 1) / alignment_ * alignment_; }

  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  std::string kvs_;
  uint64_t n_kv_ = 0;
  std::vector<TensorSpec> tensors_;
  std::optional<uint64_t> n_kv_override_, n_tensors_override_;
};

// Where the fields of a valid GGUF v2/v3 file are (byte offsets into the file).
struct GgufLayout {
  struct Kv {
    std::string key;
    size_t key_len_at = 0, type_at = 0, value_at = 0;
    uint32_t type = 0;
    // Arrays only:
    uint32_t elem_type = 0;
    uint64_t count = 0;
    size_t elem_type_at = 0, count_at = 0, first_elem_at = 0;
  };
  struct Tensor {
    std::string name;
    size_t name_len_at = 0, n_dims_at = 0, dims_at = 0, type_at = 0, offset_at = 0;
    uint32_t n_dims = 0, type = 0;
    uint64_t offset = 0;
  };
  uint64_t n_tensors = 0, n_kv = 0;
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;
  size_t table_end = 0;  // end of the tensor infos
  uint64_t alignment = 32;
  size_t data_offset = 0;

  const Kv& kv(const std::string& key) const {
    for (const Kv& k : kvs)
      if (k.key == key) return k;
    throw std::out_of_range("no key " + key);
  }
  const Tensor& tensor(const std::string& name) const {
    for (const Tensor& t : tensors)
      if (t.name == name) return t;
    throw std::out_of_range("no tensor " + name);
  }
};

// Walks a valid file; throws on anything unexpected (it is only given known-good files).
inline GgufLayout walk_gguf(const std::string& b) {
  GgufLayout L;
  size_t p = 8;
  auto u32 = [&] {
    uint32_t v = get<uint32_t>(b, p);
    p += 4;
    return v;
  };
  auto u64 = [&] {
    uint64_t v = get<uint64_t>(b, p);
    p += 8;
    return v;
  };
  auto text = [&] {
    const uint64_t n = u64();
    if (n > b.size() - p) throw std::out_of_range("string past the end");
    std::string s = b.substr(p, n);
    p += n;
    return s;
  };
  auto skip_value = [&](auto&& self, uint32_t type) -> void {
    static const size_t kScalar[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == kString) {
      (void)text();
    } else if (type == kArray) {
      const uint32_t et = u32();
      const uint64_t n = u64();
      for (uint64_t k = 0; k < n; ++k) self(self, et);
    } else if (type <= kF64) {
      p += kScalar[type];
    } else {
      throw std::runtime_error("bad type");
    }
  };
  if (b.compare(0, 4, "GGUF") != 0) throw std::runtime_error("not GGUF");
  L.n_tensors = u64();
  L.n_kv = u64();
  for (uint64_t k = 0; k < L.n_kv; ++k) {
    GgufLayout::Kv kv;
    kv.key_len_at = p;
    kv.key = text();
    kv.type_at = p;
    kv.type = u32();
    kv.value_at = p;
    if (kv.type == kArray) {
      kv.elem_type_at = p;
      kv.elem_type = u32();
      kv.count_at = p;
      kv.count = u64();
      kv.first_elem_at = p;
      p = kv.value_at;
    }
    if (kv.key == "general.alignment") L.alignment = get<uint32_t>(b, p);
    skip_value(skip_value, kv.type);
    L.kvs.push_back(kv);
  }
  for (uint64_t t = 0; t < L.n_tensors; ++t) {
    GgufLayout::Tensor ti;
    ti.name_len_at = p;
    ti.name = text();
    ti.n_dims_at = p;
    ti.n_dims = u32();
    ti.dims_at = p;
    p += 8 * ti.n_dims;
    ti.type_at = p;
    ti.type = u32();
    ti.offset_at = p;
    ti.offset = u64();
    L.tensors.push_back(ti);
  }
  L.table_end = p;
  L.data_offset = (p + L.alignment - 1) / L.alignment * L.alignment;
  return L;
}

inline Status parse_bytes(const std::string& bytes, std::unique_ptr<GgufFile>* out) {
  return GgufFile::parse(MappedFile::from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), out);
}

}  // namespace lmrt::test::gguf
