#include "runtime/model/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "formats/q4_0x16.h"
#include "runtime/util/checked_math.h"

namespace lmrt {

namespace {

constexpr uint32_t kMaxArrayDepth = 4;     // nested arrays deeper than this are refused
constexpr uint64_t kMaxKeyLength = 65536;  // a metadata key or tensor name longer than this is damage
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kMaxAlignment = 65536;
// Vectors sized from counts in the file grow as entries are actually parsed; this caps what a
// count can reserve up front.
constexpr uint64_t kMaxReserve = 4096;

// Bounds-checked little-endian reader over the file bytes. Every read checks the remaining size
// first, so a damaged count can never read past the end.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  const uint8_t* here() const { return data_ + pos_; }
  void seek(uint64_t pos) { pos_ = pos; }
  bool skip(uint64_t n) {
    if (n > remaining()) return false;
    pos_ += n;
    return true;
  }

  template <typename T>
  bool read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  bool read_string(std::string_view* out) {
    uint64_t len = 0;
    if (!read(&len)) return false;
    if (len > remaining()) return false;
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// The smallest number of bytes one element of `type` occupies; bounds array counts before any
// allocation.
uint64_t min_encoded_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
    case GgufValueType::string:  // the 8-byte length
      return 8;
    case GgufValueType::array:  // element type + count
      return 12;
  }
  return 1;
}

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::f64); }

// Decodes one scalar (any type but string and array) from the min_encoded_size(type) bytes at p.
void decode_scalar(GgufValueType type, const uint8_t* p, GgufValue* v) {
  auto load = [p](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::boolean:
      v->u = load(uint8_t{});
      return;
    case GgufValueType::i8:
      v->i = load(int8_t{});
      return;
    case GgufValueType::u16:
      v->u = load(uint16_t{});
      return;
    case GgufValueType::i16:
      v->i = load(int16_t{});
      return;
    case GgufValueType::u32:
      v->u = load(uint32_t{});
      return;
    case GgufValueType::i32:
      v->i = load(int32_t{});
      return;
    case GgufValueType::f32:
      v->f = load(float{});
      return;
    case GgufValueType::u64:
      v->u = load(uint64_t{});
      return;
    case GgufValueType::i64:
      v->i = load(int64_t{});
      return;
    case GgufValueType::f64:
      v->f = load(double{});
      return;
    case GgufValueType::string:
    case GgufValueType::array:
      return;
  }
}

class Parser {
 public:
  Parser(const uint8_t* data, uint64_t size, uint64_t max_values) : cur_(data, size), max_values_(max_values) {}

  Status fail(const std::string& what) const {
    return Error(Code::bad_format, "damaged GGUF file: " + what + " (at byte " + std::to_string(cur_.pos()) + ")");
  }

  Status read_value(GgufValueType type, uint32_t depth, GgufValue* v) {
    if (++n_values_ > max_values_) return fail("metadata holds more than " + std::to_string(max_values_) + " values");
    v->type = type;
    switch (type) {
      case GgufValueType::string:
        if (!cur_.read_string(&v->str)) return fail("string length runs past the end of the file");
        return Status::Ok();
      default: {
        const uint64_t size = min_encoded_size(type);
        if (cur_.remaining() < size) return fail(std::string("truncated ") + gguf_value_type_name(type) + " value");
        decode_scalar(type, cur_.here(), v);
        (void)cur_.skip(size);
        if (type == GgufValueType::boolean && v->u > 1)
          return fail("bool value " + std::to_string(v->u) + " is neither 0 nor 1");
        return Status::Ok();
      }
      case GgufValueType::array: {
        if (depth >= kMaxArrayDepth) return fail("arrays nested deeper than " + std::to_string(kMaxArrayDepth));
        uint32_t et = 0;
        uint64_t n = 0;
        if (!cur_.read(&et)) return fail("truncated array type");
        if (!valid_value_type(et)) return fail("array element type " + std::to_string(et) + " is not a GGUF type");
        if (!cur_.read(&n)) return fail("truncated array length");
        v->elem_type = static_cast<GgufValueType>(et);
        if (n > cur_.remaining() / min_encoded_size(v->elem_type))
          return fail("array of " + std::to_string(n) + " elements is larger than the file");
        bool mapped = false;
        if (v->elem_type != GgufValueType::array) LMRT_RETURN_IF_ERROR(read_mapped_array(n, v, &mapped));
        if (mapped) return Status::Ok();
        v->items.reserve(std::min(n, kMaxReserve));
        for (uint64_t k = 0; k < n; ++k) {
          v->items.emplace_back();
          LMRT_RETURN_IF_ERROR(read_value(v->elem_type, depth + 1, &v->items.back()));
        }
        return Status::Ok();
      }
    }
    return fail("unknown value type");
  }

  Cursor& cursor() { return cur_; }

 private:
  // Checks an array of n scalars or strings where it lies and records where its elements are
  // (GgufValue::mapped). *mapped stays false, with the cursor back at the first element, for a
  // string array too long for 32-bit offsets: the caller then reads it into items.
  Status read_mapped_array(uint64_t n, GgufValue* v, bool* mapped) {
    if (n > max_values_ - n_values_) return fail("metadata holds more than " + std::to_string(max_values_) + " values");
    const uint64_t start = cur_.pos();
    const uint8_t* first = cur_.here();
    switch (v->elem_type) {
      case GgufValueType::string:
        v->string_offsets.reserve(n);  // n <= remaining bytes / 8 (checked by the caller)
        for (uint64_t k = 0; k < n; ++k) {
          if (cur_.pos() - start > UINT32_MAX) {
            v->string_offsets = {};
            cur_.seek(start);
            return Status::Ok();
          }
          v->string_offsets.push_back(static_cast<uint32_t>(cur_.pos() - start));
          std::string_view s;
          if (!cur_.read_string(&s)) return fail("string length runs past the end of the file");
        }
        break;
      case GgufValueType::boolean:
        for (uint64_t k = 0; k < n; ++k) {
          const uint8_t x = first[k];
          if (x > 1) return fail("bool value " + std::to_string(x) + " is neither 0 nor 1");
        }
        if (!cur_.skip(n)) return fail("truncated bool value");
        break;
      default:
        if (!cur_.skip(n * min_encoded_size(v->elem_type)))
          return fail(std::string("truncated ") + gguf_value_type_name(v->elem_type) + " value");
        break;
    }
    n_values_ += n;
    v->mapped = first;
    v->mapped_count = n;
    *mapped = true;
    return Status::Ok();
  }

  Cursor cur_;
  uint64_t max_values_;
  uint64_t n_values_ = 0;
};

// Names what a file is when it is not a GGUF v2/v3 file.
Status identify_non_gguf(const uint8_t* data, uint64_t size, const std::string& path) {
  const std::string where = " ('" + path + "')";
  if (size < 4) return Error(Code::bad_format, "not a GGUF file: only " + std::to_string(size) + " bytes" + where);
  uint32_t magic;
  std::memcpy(&magic, data, 4);
  switch (magic) {
    case 0x67676a74:  // "tjgg"
      return Error(Code::bad_format,
                   std::string("this is a GGJT (pre-GGUF llama.cpp) file, not GGUF; convert it to GGUF v3 with "
                               "llama.cpp's convert tools") +
                       where);
    case 0x67676d66:  // "fmgg"
      return Error(Code::bad_format,
                   "this is a GGMF (pre-GGUF llama.cpp) file, not GGUF; convert it to GGUF v3" + where);
    case 0x67676d6c:  // "lmgg"
      return Error(Code::bad_format, "this is an unversioned GGML file, not GGUF; convert it to GGUF v3" + where);
    default:
      break;
  }
  if (std::memcmp(data, "\177ELF", 4) == 0) return Error(Code::bad_format, "not a GGUF file: an ELF binary" + where);
  if (std::memcmp(data, "PK\x03\x04", 4) == 0)
    return Error(Code::bad_format, "not a GGUF file: a zip archive (a PyTorch checkpoint?)" + where);
  if (size >= 9 && data[8] == '{')
    return Error(Code::bad_format, "not a GGUF file: looks like a safetensors file" + where);
  return Error(Code::bad_format, "not a GGUF file: the first 4 bytes are not \"GGUF\"" + where);
}

// Finds the data section after the tensor table and points every tensor into it, checking that
// each lies inside the file, none overlap and no tail of the file is left unexplained.
Status locate_tensor_data(const uint8_t* data, uint64_t size, uint64_t tensor_table_end, uint64_t alignment,
                          const std::string& where, std::vector<GgufTensorInfo>& tensors, uint64_t* data_offset_out) {
  uint64_t data_offset = 0;
  if (!checked_align_up(tensor_table_end, alignment, &data_offset)) data_offset = size + 1;
  // A file without tensors (a vocabulary) may end without the padding before its empty data section.
  if (tensors.empty()) data_offset = std::min(data_offset, size);
  if (data_offset > size)
    return Error(Code::bad_format,
                 "damaged or truncated GGUF file: the tensor data section starts past the end of the file (" +
                     std::to_string(size) + " bytes)" + where);
  *data_offset_out = data_offset;
  const uint64_t data_size = size - data_offset;
  for (GgufTensorInfo& ti : tensors) {
    uint64_t end = 0;
    if (!checked_add(ti.offset, ti.n_bytes, &end) || end > data_size)
      return Error(Code::bad_format, "damaged or truncated GGUF file: tensor '" + std::string(ti.name) + "' (" +
                                         std::to_string(ti.n_bytes) + " bytes at data offset " +
                                         std::to_string(ti.offset) + ") runs past the end of the file" + where);
    ti.data = data + data_offset + ti.offset;
  }
  if (tensors.empty()) return Status::Ok();

  // Writers lay tensors out one after another; two sharing bytes, or a tail no tensor covers, mean
  // a damaged tensor table or a wrong tensor count.
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(tensors.size());
  for (const GgufTensorInfo& ti : tensors) by_offset.push_back(&ti);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensorInfo& prev = *by_offset[k - 1];
    if (prev.offset + prev.n_bytes > by_offset[k]->offset)
      return Error(Code::bad_format, "damaged GGUF file: the data of tensors '" + std::string(prev.name) + "' and '" +
                                         std::string(by_offset[k]->name) + "' overlap" + where);
  }
  const GgufTensorInfo& last = *by_offset.back();
  uint64_t used = 0;  // cannot overflow: last.offset + n_bytes <= data_size was checked above
  if (!checked_align_up(last.offset + last.n_bytes, alignment, &used)) used = data_size;
  if (data_size > used)
    return Error(Code::bad_format, "damaged GGUF file: " + std::to_string(data_size - used) +
                                       " bytes at the end of the file belong to no tensor (is the tensor count " +
                                       std::to_string(tensors.size()) + " wrong?)" + where);
  return Status::Ok();
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  static const char* const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < 13 ? kNames[i] : "?";
}

GgufValue GgufValue::item(uint64_t k) const {
  if (mapped == nullptr) return items[k];
  GgufValue v;
  v.type = elem_type;
  if (elem_type == GgufValueType::string) {
    v.str = string_item(k);
  } else {
    decode_scalar(elem_type, mapped + k * min_encoded_size(elem_type), &v);
  }
  return v;
}

std::string_view GgufValue::string_item(uint64_t k) const {
  if (mapped == nullptr) return items[k].str;
  const uint8_t* p = mapped + string_offsets[k];
  uint64_t len = 0;
  std::memcpy(&len, p, sizeof len);  // checked by the parser
  return std::string_view(reinterpret_cast<const char*>(p + sizeof len), len);
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::u16:
    case GgufValueType::i16:
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::boolean:
      return true;
    default:
      return false;
  }
}

std::optional<int64_t> GgufValue::as_int() const {
  switch (type) {
    case GgufValueType::u8:
    case GgufValueType::u16:
    case GgufValueType::u32:
    case GgufValueType::boolean:
      return static_cast<int64_t>(u);
    case GgufValueType::u64:
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    case GgufValueType::i8:
    case GgufValueType::i16:
    case GgufValueType::i32:
    case GgufValueType::i64:
      return i;
    default:
      return std::nullopt;
  }
}

std::optional<double> GgufValue::as_float() const {
  if (type == GgufValueType::f32 || type == GgufValueType::f64) return f;
  if (auto x = as_int()) return static_cast<double>(*x);
  return std::nullopt;
}

Status GgufFile::open(const std::string& path, bool use_mmap, std::unique_ptr<GgufFile>* out) {
  std::unique_ptr<MappedFile> file;
  LMRT_RETURN_IF_ERROR(MappedFile::open(path, use_mmap, &file));
  return parse(std::move(file), out);
}

Status GgufFile::parse(std::unique_ptr<MappedFile> file, std::unique_ptr<GgufFile>* out) {
  return parse(std::move(file), GgufLimits{}, out);
}

Status GgufFile::parse(std::unique_ptr<MappedFile> file, const GgufLimits& limits, std::unique_ptr<GgufFile>* out) {
  if (file == nullptr || out == nullptr) return Error(Code::invalid_argument, "GgufFile::parse: null argument");
  const uint8_t* data = file->data();
  const uint64_t size = file->size();
  const std::string where = " ('" + file->path() + "')";
  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) return identify_non_gguf(data, size, file->path());

  Parser p(data, size, limits.max_metadata_values);
  uint32_t magic = 0, version = 0;
  (void)p.cursor().read(&magic);
  if (!p.cursor().read(&version)) return p.fail("truncated header");
  if (version == 1)
    return Error(Code::bad_format,
                 std::string("GGUF version 1 (the 2023 draft with 32-bit counts) is not supported; re-convert the "
                             "model to GGUF v3") +
                     where);
  if (version != 2 && version != 3) {
    // The version is written in the file's byte order, so a big-endian v2/v3 file reads as 2<<24 or 3<<24.
    if ((version & 0xFFFF) == 0 && version != 0)
      return Error(Code::unsupported, "big-endian GGUF files are not supported" + where);
    return Error(Code::bad_format, "unknown GGUF version " + std::to_string(version) + where);
  }

  uint64_t n_tensors = 0, n_kv = 0;
  if (!p.cursor().read(&n_tensors) || !p.cursor().read(&n_kv)) return p.fail("truncated header");
  // Every key-value takes at least 12 bytes (key length + type), every tensor info at least 24.
  if (n_kv > p.cursor().remaining() / 12)
    return p.fail("metadata count " + std::to_string(n_kv) + " is larger than the file");
  if (n_tensors > p.cursor().remaining() / 24)
    return p.fail("tensor count " + std::to_string(n_tensors) + " is larger than the file");

  std::unique_ptr<GgufFile> g(new GgufFile());
  g->version_ = version;
  g->kvs_.reserve(std::min(n_kv, kMaxReserve));
  std::unordered_set<std::string_view> keys;
  for (uint64_t k = 0; k < n_kv; ++k) {
    GgufKv& kv = g->kvs_.emplace_back();
    if (!p.cursor().read_string(&kv.key))
      return p.fail("metadata key " + std::to_string(k) + " runs past the end of the file");
    if (kv.key.empty() || kv.key.size() > kMaxKeyLength)
      return p.fail("metadata key " + std::to_string(k) + " has a bad length (" + std::to_string(kv.key.size()) + ")");
    if (!keys.insert(kv.key).second) return p.fail("duplicate metadata key '" + std::string(kv.key) + "'");
    uint32_t type = 0;
    if (!p.cursor().read(&type)) return p.fail("truncated type of key '" + std::string(kv.key) + "'");
    if (!valid_value_type(type))
      return p.fail("key '" + std::string(kv.key) + "' has value type " + std::to_string(type) + ", not a GGUF type");
    LMRT_RETURN_IF_ERROR(p.read_value(static_cast<GgufValueType>(type), 0, &kv.value));
  }

  if (const GgufValue* a = g->find("general.alignment")) {
    // The GGUF spec asks for a multiple of 8; a power of two also makes the padding arithmetic
    // exact, and tensor data at 8-byte boundaries is naturally aligned for every element type.
    if (!a->is_integer() || a->type == GgufValueType::boolean)
      return Error(Code::bad_format, std::string("damaged GGUF file: general.alignment is a ") +
                                         gguf_value_type_name(a->type) + ", not an integer" + where);
    const bool is_signed = a->type == GgufValueType::i8 || a->type == GgufValueType::i16 ||
                           a->type == GgufValueType::i32 || a->type == GgufValueType::i64;
    const uint64_t al = is_signed ? (a->i < 0 ? 0 : static_cast<uint64_t>(a->i)) : a->u;
    if (al < 8 || al > kMaxAlignment || (al & (al - 1)) != 0)
      return Error(Code::bad_format, "damaged GGUF file: general.alignment " +
                                         (is_signed ? std::to_string(a->i) : std::to_string(a->u)) +
                                         " is not a power of two from 8 to " + std::to_string(kMaxAlignment) + where);
    g->alignment_ = al;
  }

  g->tensors_.reserve(std::min(n_tensors, kMaxReserve));
  std::unordered_set<std::string_view> names;
  for (uint64_t t = 0; t < n_tensors; ++t) {
    GgufTensorInfo& ti = g->tensors_.emplace_back();
    const std::string idx = "tensor " + std::to_string(t);
    if (!p.cursor().read_string(&ti.name)) return p.fail(idx + ": name runs past the end of the file");
    if (ti.name.empty() || ti.name.size() > kMaxKeyLength)
      return p.fail(idx + ": bad name length (" + std::to_string(ti.name.size()) + ")");
    const std::string name = "tensor '" + std::string(ti.name) + "'";
    if (!names.insert(ti.name).second) return p.fail("duplicate " + name);
    if (!p.cursor().read(&ti.n_dims)) return p.fail(name + ": truncated");
    if (ti.n_dims == 0 || ti.n_dims > kMaxDims)
      return p.fail(name + " has " + std::to_string(ti.n_dims) + " dimensions (1 to 4 allowed)");
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < ti.n_dims; ++d) {
      if (!p.cursor().read(&ti.ne[d])) return p.fail(name + ": truncated dimensions");
      if (ti.ne[d] == 0) return p.fail(name + " has a zero dimension");
      if (!checked_mul(n_elements, ti.ne[d], &n_elements)) return p.fail(name + ": element count overflows");
    }
    ti.n_elements = n_elements;
    uint32_t type_id = 0;
    if (!p.cursor().read(&type_id) || !p.cursor().read(&ti.offset)) return p.fail(name + ": truncated");
    if (!tensor_type_from_id(type_id, &ti.type)) {
      const std::string type_name = ggml_type_name(type_id);
      const bool known = type_name.rfind("type ", 0) != 0;
      return Error(Code::unsupported,
                   name + (known ? " has type " + type_name + " (ggml type " : " has unknown type id ") +
                       std::to_string(type_id) + (known ? ")" : "") +
                       ", which lmrt does not read (supported: " + supported_tensor_type_names() + ")" + where);
    }
    const TensorTypeTraits tr = tensor_type_traits(ti.type);
    if (ti.ne[0] % tr.block_size != 0)
      return Error(Code::bad_format, name + ": row length " + std::to_string(ti.ne[0]) + " is not a multiple of " +
                                         tr.name + "'s block size " + std::to_string(tr.block_size) +
                                         " (its blocks would run across rows)" + where);
    if (ti.type == TensorType::q4_0x16 && (ti.n_dims != 2 || ti.ne[1] % kQ4_0x16Rows != 0))
      return Error(Code::bad_format, name + ": a Q4_0x16 tensor must be a matrix whose row count is a multiple of " +
                                         std::to_string(kQ4_0x16Rows) + where);
    if (!checked_mul(n_elements / tr.block_size, tr.block_bytes, &ti.n_bytes))
      return p.fail(name + ": byte size overflows");
    if (ti.offset % g->alignment_ != 0)
      return p.fail(name + ": data offset " + std::to_string(ti.offset) + " is not aligned to " +
                    std::to_string(g->alignment_));
  }

  LMRT_RETURN_IF_ERROR(
      locate_tensor_data(data, size, p.cursor().pos(), g->alignment_, where, g->tensors_, &g->data_offset_));
  g->file_ = std::move(file);
  *out = std::move(g);
  return Status::Ok();
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKv& kv : kvs_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || v->type != GgufValueType::string) return std::nullopt;
  return v->str;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_int() : std::nullopt;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? v->as_float() : std::nullopt;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr || !v->is_integer()) return std::nullopt;
  auto x = v->as_int();
  if (!x) return std::nullopt;
  return *x != 0;
}

}  // namespace lmrt
