#include "tools/gguf_writer.h"

#include <cstring>
#include <string_view>

#include "runtime/util/file_replacer.h"

namespace lmrt {

namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

void put_str(std::string& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  out += s;
}

}  // namespace

void GgufWriter::put_key(const std::string& key, GgufValueType type) {
  put_str(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(type));
  ++n_kv_;
}

// Encodes `v` as a value of `type`: an array's items are written in the array's element type.
void GgufWriter::put_value(const GgufValue& v, GgufValueType type) {
  switch (type) {
    case GgufValueType::u8:
      put<uint8_t>(kv_, static_cast<uint8_t>(v.u));
      return;
    case GgufValueType::i8:
      put<int8_t>(kv_, static_cast<int8_t>(v.i));
      return;
    case GgufValueType::u16:
      put<uint16_t>(kv_, static_cast<uint16_t>(v.u));
      return;
    case GgufValueType::i16:
      put<int16_t>(kv_, static_cast<int16_t>(v.i));
      return;
    case GgufValueType::u32:
      put<uint32_t>(kv_, static_cast<uint32_t>(v.u));
      return;
    case GgufValueType::i32:
      put<int32_t>(kv_, static_cast<int32_t>(v.i));
      return;
    case GgufValueType::f32:
      put<float>(kv_, static_cast<float>(v.f));  // exact: the reader widened a float
      return;
    case GgufValueType::boolean:
      put<uint8_t>(kv_, v.u != 0 ? 1 : 0);
      return;
    case GgufValueType::string:
      put_str(kv_, v.str);
      return;
    case GgufValueType::array:
      put<uint32_t>(kv_, static_cast<uint32_t>(v.elem_type));
      put<uint64_t>(kv_, v.size());
      for (uint64_t k = 0; k < v.size(); ++k) put_value(v.item(k), v.elem_type);
      return;
    case GgufValueType::u64:
      put<uint64_t>(kv_, v.u);
      return;
    case GgufValueType::i64:
      put<int64_t>(kv_, v.i);
      return;
    case GgufValueType::f64:
      put<double>(kv_, v.f);
      return;
  }
}

void GgufWriter::add_value(const std::string& key, const GgufValue& value) {
  put_key(key, value.type);
  put_value(value, value.type);
}

Status GgufWriter::set_alignment(uint64_t alignment) {
  if (alignment < 8 || alignment > 65536 || (alignment & (alignment - 1)) != 0)
    return Error(Code::invalid_argument,
                 "alignment " + std::to_string(alignment) + " is not a power of two from 8 to 65536");
  alignment_ = alignment;
  return Status::Ok();
}

void GgufWriter::add_string(const std::string& key, const std::string& value) {
  put_key(key, GgufValueType::string);
  put_str(kv_, value);
}

void GgufWriter::add_u32(const std::string& key, uint32_t value) {
  put_key(key, GgufValueType::u32);
  put<uint32_t>(kv_, value);
}

void GgufWriter::add_f32(const std::string& key, float value) {
  put_key(key, GgufValueType::f32);
  put<float>(kv_, value);
}

void GgufWriter::add_bool(const std::string& key, bool value) {
  put_key(key, GgufValueType::boolean);
  put<uint8_t>(kv_, value ? 1 : 0);
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& values) {
  put_key(key, GgufValueType::array);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::string));
  put<uint64_t>(kv_, values.size());
  for (const std::string& s : values) put_str(kv_, s);
}

void GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& values) {
  put_key(key, GgufValueType::array);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::f32));
  put<uint64_t>(kv_, values.size());
  for (float v : values) put<float>(kv_, v);
}

void GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& values) {
  put_key(key, GgufValueType::array);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::i32));
  put<uint64_t>(kv_, values.size());
  for (int32_t v : values) put<int32_t>(kv_, v);
}

Status GgufWriter::add_tensor(const std::string& name, const std::vector<uint64_t>& ne, TensorType type) {
  if (ne.empty() || ne.size() > 4)
    return Error(Code::invalid_argument, "tensor " + name + " must have 1 to 4 dimensions");
  const TensorTypeTraits tr = tensor_type_traits(type);
  if (ne[0] == 0 || ne[0] % tr.block_size != 0)
    return Error(Code::invalid_argument, "tensor " + name + ": row length " + std::to_string(ne[0]) +
                                             " is not a positive multiple of " + std::to_string(tr.block_size));
  uint64_t elems = 1;
  for (uint64_t d : ne) elems *= d;
  tensors_.push_back({name, ne, type, elems / tr.block_size * tr.block_bytes});
  return Status::Ok();
}

Status GgufWriter::write(const std::string& path, const FillFn& fill) const {
  std::string head;
  head += "GGUF";
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, n_kv_);
  head += kv_;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_str(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(head, d);
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, offset);
    offset += (t.bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  head.append((alignment_ - head.size() % alignment_) % alignment_, '\0');

  FileReplacer out;
  LMRT_RETURN_IF_ERROR(out.open(path));
  LMRT_RETURN_IF_ERROR(out.write(head.data(), head.size()));
  std::vector<uint8_t> buf;
  const std::vector<char> zeros(alignment_, 0);
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const uint64_t bytes = tensors_[i].bytes;
    try {
      buf.resize(bytes);
    } catch (const std::bad_alloc&) {
      return Error(Code::out_of_memory, "cannot buffer tensor " + tensors_[i].name);
    }
    LMRT_RETURN_IF_ERROR(fill(i, buf.data(), bytes));
    LMRT_RETURN_IF_ERROR(out.write(buf.data(), bytes));
    LMRT_RETURN_IF_ERROR(out.write(zeros.data(), (alignment_ - bytes % alignment_) % alignment_));
  }
  return out.commit();
}

}  // namespace lmrt
