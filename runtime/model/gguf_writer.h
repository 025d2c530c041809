// GGUF v3 writer: collects metadata and tensor declarations, then writes the header, the tensor
// table and each tensor's data (produced on demand, one tensor at a time, so a large model never has
// to sit in memory whole). Data offsets are aligned to alignment() (32 unless set_alignment says
// otherwise; a file that declares general.alignment must set the same value here).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "formats/tensor_type.h"
#include "runtime/util/status.h"

namespace lmrt {

class GgufWriter {
 public:
  static constexpr uint32_t kAlignment = 32;

  void add_string(const std::string& key, const std::string& value);
  void add_u32(const std::string& key, uint32_t value);
  void add_f32(const std::string& key, float value);
  void add_bool(const std::string& key, bool value);
  void add_string_array(const std::string& key, const std::vector<std::string>& values);
  void add_f32_array(const std::string& key, const std::vector<float>& values);
  void add_i32_array(const std::string& key, const std::vector<int32_t>& values);
  // Any value as GgufFile reads it, arrays (and arrays of arrays) included, encoded in its own type.
  void add_value(const std::string& key, const GgufValue& value);

  // Alignment of the data section and of every tensor's data. Errors: invalid_argument unless a
  // power of two from 8 to 65536 (what the reader accepts).
  Status set_alignment(uint64_t alignment);
  uint64_t alignment() const { return alignment_; }

  // Declares a tensor of shape ne (ne[0] contiguous, a multiple of the type's block size).
  // Errors: invalid_argument (empty shape, more than 4 dims, row not whole blocks).
  Status add_tensor(const std::string& name, const std::vector<uint64_t>& ne, TensorType type);

  // Bytes of tensor i's data.
  uint64_t tensor_bytes(size_t i) const { return tensors_[i].bytes; }
  size_t n_tensors() const { return tensors_.size(); }

  // Fills `data` (tensor_bytes(index) bytes) with tensor `index`'s contents.
  using FillFn = std::function<Status(size_t index, uint8_t* data, uint64_t bytes)>;

  // Writes the file (through `path`.tmp, renamed on success and removed on failure). Errors: io,
  // whatever fill returns, out_of_memory, invalid_argument (`path` or `path`.tmp exists and is not a
  // regular file).
  Status write(const std::string& path, const FillFn& fill) const;

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    TensorType type;
    uint64_t bytes;
  };
  void put_key(const std::string& key, GgufValueType type);
  void put_value(const GgufValue& value, GgufValueType type);

  std::string kv_;  // serialized key/value pairs
  uint64_t n_kv_ = 0;
  uint64_t alignment_ = kAlignment;
  std::vector<Tensor> tensors_;
};

}  // namespace lmrt
