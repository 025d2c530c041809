// GGUF reader: parses the header, metadata and tensor table of a GGUF v2/v3 file held in a
// MappedFile. Every count, length, dimension and offset is checked against the file size with
// overflow-safe arithmetic before it is used; string views and tensor data point into the mapping.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/tensor_type.h"
#include "runtime/util/mapped_file.h"
#include "runtime/util/status.h"

namespace lmrt {

enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

const char* gguf_value_type_name(GgufValueType type);

// One metadata value. Scalars are widened into the matching field. An array parsed from a file
// whose elements are scalars or strings stays in the mapping and its elements are decoded on access
// (size(), item(k)): a 150k-token vocabulary would otherwise cost ~80 bytes per element as
// GgufValues, tens of MB held for the model's lifetime. Arrays built in memory (by writers and
// tests) and arrays of arrays hold their elements in `items`.
struct GgufValue {
  GgufValueType type = GgufValueType::u8;
  uint64_t u = 0;                               // u8/u16/u32/u64/bool
  int64_t i = 0;                                // i8/i16/i32/i64
  double f = 0;                                 // f32/f64
  std::string_view str;                         // string (points into the file)
  GgufValueType elem_type = GgufValueType::u8;  // array element type
  std::vector<GgufValue> items;                 // array items held in memory (see above)

  // A mapped array: its first element in the file, its length and, for strings, where each
  // element's length prefix starts, relative to `mapped`.
  const uint8_t* mapped = nullptr;
  uint64_t mapped_count = 0;
  std::vector<uint32_t> string_offsets;

  // Number of elements of an array (0 for a scalar).
  uint64_t size() const { return mapped != nullptr ? mapped_count : items.size(); }
  // Element k < size() of an array, decoded from the mapping or copied from items.
  GgufValue item(uint64_t k) const;
  // Element k < size() of an array of strings, without building a GgufValue.
  std::string_view string_item(uint64_t k) const;

  bool is_integer() const;
  // Integer value of any integer or bool type; nullopt otherwise or when it does not fit.
  std::optional<int64_t> as_int() const;
  std::optional<double> as_float() const;  // any numeric type
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string_view name;
  uint32_t n_dims = 0;
  std::array<uint64_t, 4> ne = {1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  TensorType type = TensorType::f32;
  uint64_t offset = 0;  // relative to the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the mapping

  uint64_t row_length() const { return ne[0]; }
  uint64_t n_rows() const { return n_elements / ne[0]; }
};

// Bounds on what a file may make the reader allocate. A value inside an array of arrays costs
// sizeof(GgufValue) (~100 bytes) however few bytes it takes in the file, and a string array 4 bytes a
// string, so a damaged array count in a big file could otherwise ask for many times the file's size.
// Every value counts, mapped ones too. The largest real vocabularies hold under a million values
// (tokens, scores, token types, merges).
struct GgufLimits {
  uint64_t max_metadata_values = uint64_t{1} << 22;
};

class GgufFile {
 public:
  // Opens and parses `path`. Errors: io, bad_format (not GGUF, damaged, legacy format),
  // unsupported (tensor type, big-endian).
  static Status open(const std::string& path, bool use_mmap, std::unique_ptr<GgufFile>* out);
  // Parses a file already in memory; takes ownership.
  static Status parse(std::unique_ptr<MappedFile> file, std::unique_ptr<GgufFile>* out);
  static Status parse(std::unique_ptr<MappedFile> file, const GgufLimits& limits, std::unique_ptr<GgufFile>* out);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const MappedFile& file() const { return *file_; }
  // Writable bytes of tensor t (one of tensors()) when the file was read into memory, for rewriting weights
  // in place at load; nullptr for a mapped file or the caller's bytes (MappedFile::view).
  uint8_t* owned_tensor_data(const GgufTensorInfo& t) { return file_->owned_bytes(t.data, t.n_bytes); }
  // Gives back the mapped pages of tensor t once its bytes have been copied elsewhere (MappedFile::release_pages).
  void release_tensor_pages(const GgufTensorInfo& t) { file_->release_pages(t.data, t.n_bytes); }
  // Tensor t is read a row at a time (MappedFile::advise_sparse).
  void advise_sparse_reads(const GgufTensorInfo& t) { file_->advise_sparse(t.data, t.n_bytes); }
  // Byte offset of the data section and the number of header bytes before it.
  uint64_t data_offset() const { return data_offset_; }

  const GgufValue* find(std::string_view key) const;
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed look-ups; nullopt when the key is missing or of an incompatible type.
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;

 private:
  GgufFile() = default;
  std::unique_ptr<MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace lmrt
