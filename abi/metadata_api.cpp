// Read access to a model's GGUF metadata (lmrt_model_meta_*).
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/model/gguf_file.h"

using lmrt::Code;
using lmrt::GgufValue;
using lmrt::GgufValueType;
using lmrt::Status;
using namespace lmrt::abi;

namespace {

// Copies a string value the header's way: NUL-terminated when it fits, *len = its length.
Status copy_string(std::string_view s, char* buf, size_t size, size_t* len) {
  if (buf == nullptr && size != 0) return lmrt::Error(Code::invalid_argument, "buf is NULL but size is not 0");
  if (len != nullptr) *len = s.size();
  if (s.size() >= size)
    return lmrt::Error(Code::buffer_too_small, "the value has " + std::to_string(s.size()) +
                                                   " bytes but the buffer holds " + std::to_string(size) +
                                                   " (one is for the NUL)");
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  return Status::Ok();
}

Status find_value(const lmrt_model* model, const char* key, const GgufValue** out) {
  if (key == nullptr) return lmrt::Error(Code::invalid_argument, "key is NULL");
  *out = model->llama->gguf().find(key);
  if (*out == nullptr)
    return lmrt::Error(Code::invalid_argument, std::string("the model has no metadata key '") + key + "'");
  return Status::Ok();
}

Status wrong_type(const char* key, const GgufValue& v, const char* wanted) {
  std::string is = lmrt::gguf_value_type_name(v.type);
  if (v.type == GgufValueType::array) is += std::string(" of ") + lmrt::gguf_value_type_name(v.elem_type);
  return lmrt::Error(Code::invalid_argument, std::string("metadata key '") + key + "' holds " + is + ", not " + wanted);
}

bool is_float(GgufValueType t) { return t == GgufValueType::f32 || t == GgufValueType::f64; }
bool is_integer(GgufValueType t) { return t != GgufValueType::string && t != GgufValueType::array && !is_float(t); }

Status read_int(const char* key, const GgufValue& v, int64_t* value) {
  if (!is_integer(v.type)) return wrong_type(key, v, "an integer");
  if (v.type == GgufValueType::u64 && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return lmrt::Error(Code::invalid_argument,
                       std::string("metadata key '") + key + "' = " + std::to_string(v.u) + " does not fit int64");
  *value = v.as_int().value_or(0);
  return Status::Ok();
}

Status element(const char* key, const GgufValue& v, size_t index, GgufValue* out) {
  if (v.type != GgufValueType::array) return wrong_type(key, v, "an array");
  if (index >= v.size())
    return lmrt::Error(Code::invalid_argument, "index " + std::to_string(index) + " is out of range: '" + key +
                                                   "' has " + std::to_string(v.size()) + " elements");
  *out = v.item(index);
  return Status::Ok();
}

// Runs a metadata accessor with the model's error reporting.
template <typename Body>
lmrt_status on_model(const lmrt_model* model, Body&& body) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(body, [&](const std::string& m) { model->set_error(m); });
}

}  // namespace

extern "C" {

lmrt_status lmrt_model_meta_count(const lmrt_model* model, size_t* count) {
  return on_model(model, [&]() -> Status {
    if (count == nullptr) return lmrt::Error(Code::invalid_argument, "count is NULL");
    *count = model->llama->gguf().metadata().size();
    return Status::Ok();
  });
}

lmrt_status lmrt_model_meta_key(const lmrt_model* model, size_t index, char* buf, size_t size, size_t* len) {
  return on_model(model, [&]() -> Status {
    const auto& kvs = model->llama->gguf().metadata();
    if (index >= kvs.size())
      return lmrt::Error(Code::invalid_argument, "index " + std::to_string(index) + " is out of range: the model has " +
                                                     std::to_string(kvs.size()) + " metadata keys");
    return copy_string(kvs[index].key, buf, size, len);
  });
}

lmrt_status lmrt_model_meta_type(const lmrt_model* model, const char* key, int32_t* type, int32_t* elem_type) {
  return on_model(model, [&]() -> Status {
    if (key == nullptr || type == nullptr) return lmrt::Error(Code::invalid_argument, "key or type is NULL");
    const GgufValue* v = model->llama->gguf().find(key);
    *type = v == nullptr ? LMRT_META_NONE : static_cast<int32_t>(v->type);
    if (elem_type != nullptr)
      *elem_type =
          v != nullptr && v->type == GgufValueType::array ? static_cast<int32_t>(v->elem_type) : LMRT_META_NONE;
    return Status::Ok();
  });
}

lmrt_status lmrt_model_meta_str(const lmrt_model* model, const char* key, char* buf, size_t size, size_t* len) {
  return on_model(model, [&]() -> Status {
    const GgufValue* v = nullptr;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (v->type != GgufValueType::string) return wrong_type(key, *v, "a string");
    return copy_string(v->str, buf, size, len);
  });
}

lmrt_status lmrt_model_meta_int(const lmrt_model* model, const char* key, int64_t* value) {
  return on_model(model, [&]() -> Status {
    if (value == nullptr) return lmrt::Error(Code::invalid_argument, "value is NULL");
    const GgufValue* v = nullptr;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    return read_int(key, *v, value);
  });
}

lmrt_status lmrt_model_meta_float(const lmrt_model* model, const char* key, double* value) {
  return on_model(model, [&]() -> Status {
    if (value == nullptr) return lmrt::Error(Code::invalid_argument, "value is NULL");
    const GgufValue* v = nullptr;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (!is_float(v->type)) return wrong_type(key, *v, "a float");
    *value = v->f;
    return Status::Ok();
  });
}

lmrt_status lmrt_model_meta_array_len(const lmrt_model* model, const char* key, size_t* len) {
  return on_model(model, [&]() -> Status {
    if (len == nullptr) return lmrt::Error(Code::invalid_argument, "len is NULL");
    const GgufValue* v = nullptr;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (v->type != GgufValueType::array) return wrong_type(key, *v, "an array");
    *len = v->size();
    return Status::Ok();
  });
}

lmrt_status lmrt_model_meta_array_str(const lmrt_model* model, const char* key, size_t index, char* buf, size_t size,
                                      size_t* len) {
  return on_model(model, [&]() -> Status {
    const GgufValue* v = nullptr;
    GgufValue e;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (v->type == GgufValueType::array && v->elem_type != GgufValueType::string)
      return wrong_type(key, *v, "an array of strings");
    LMRT_RETURN_IF_ERROR(element(key, *v, index, &e));
    return copy_string(e.str, buf, size, len);
  });
}

lmrt_status lmrt_model_meta_array_int(const lmrt_model* model, const char* key, size_t index, int64_t* value) {
  return on_model(model, [&]() -> Status {
    if (value == nullptr) return lmrt::Error(Code::invalid_argument, "value is NULL");
    const GgufValue* v = nullptr;
    GgufValue e;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (v->type == GgufValueType::array && !is_integer(v->elem_type))
      return wrong_type(key, *v, "an array of integers");
    LMRT_RETURN_IF_ERROR(element(key, *v, index, &e));
    return read_int(key, e, value);
  });
}

lmrt_status lmrt_model_meta_array_float(const lmrt_model* model, const char* key, size_t index, double* value) {
  return on_model(model, [&]() -> Status {
    if (value == nullptr) return lmrt::Error(Code::invalid_argument, "value is NULL");
    const GgufValue* v = nullptr;
    GgufValue e;
    LMRT_RETURN_IF_ERROR(find_value(model, key, &v));
    if (v->type == GgufValueType::array && !is_float(v->elem_type)) return wrong_type(key, *v, "an array of floats");
    LMRT_RETURN_IF_ERROR(element(key, *v, index, &e));
    *value = e.f;
    return Status::Ok();
  });
}

}  // extern "C"
