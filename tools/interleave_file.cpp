#include "tools/interleave_file.h"

#include <sys/stat.h>

#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "formats/q4_0x16.h"
#include "runtime/model/gguf_file.h"
#include "runtime/util/same_file.h"
#include "tools/gguf_writer.h"

namespace lmrt {

namespace {

// Embeddings are looked up one row at a time, which Q4_0x16's groups of 16 rows do not allow.
constexpr std::string_view kTokenEmbd = "token_embd.weight";

bool converts(const GgufTensorInfo& t) {
  return t.type == TensorType::q4_0 && t.n_dims == 2 && t.ne[1] % kQ4_0x16Rows == 0 && t.name != kTokenEmbd;
}

}  // namespace

Status interleave_model_file(const std::string& in_path, const std::string& out_path, InterleaveReport* report) {
  if (in_path.empty() || out_path.empty())
    return Error(Code::invalid_argument, "interleave: the input and output paths must not be empty");
  std::unique_ptr<GgufFile> in;
  LMRT_RETURN_IF_ERROR(GgufFile::open(in_path, true, &in));
  LMRT_RETURN_IF_ERROR(check_output_is_not_input(in_path, out_path));

  size_t n_q4_0 = 0, n_convert = 0;
  for (const GgufTensorInfo& t : in->tensors()) {
    if (t.type == TensorType::q4_0x16)
      return Error(Code::invalid_argument, "'" + in_path + "' is already interleaved (tensor '" + std::string(t.name) +
                                               "' is Q4_0x16); interleave the original Q4_0 model instead");
    n_q4_0 += t.type == TensorType::q4_0;
    n_convert += converts(t);
  }
  if (n_convert == 0)
    return Error(Code::invalid_argument,
                 n_q4_0 == 0 ? "'" + in_path + "' has no Q4_0 matrices to interleave (it holds no Q4_0 tensor)"
                             : "'" + in_path + "' has no Q4_0 matrices to interleave (its " + std::to_string(n_q4_0) +
                                   " Q4_0 tensors are token_embd.weight, not 2-D, or have a row count that is not " +
                                   "a multiple of " + std::to_string(kQ4_0x16Rows) + ")");

  GgufWriter w;
  LMRT_RETURN_IF_ERROR(w.set_alignment(in->alignment()));
  for (const GgufKv& kv : in->metadata())
    if (kv.key != kInterleavedKey) w.add_value(std::string(kv.key), kv.value);
  w.add_bool(kInterleavedKey, true);

  InterleaveReport r;
  const std::vector<GgufTensorInfo>& tensors = in->tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo& t = tensors[i];
    const bool conv = converts(t);
    LMRT_RETURN_IF_ERROR(w.add_tensor(std::string(t.name), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                                      conv ? TensorType::q4_0x16 : t.type));
    if (w.tensor_bytes(i) != t.n_bytes)
      return Error(Code::internal, "interleave: tensor '" + std::string(t.name) + "' changed size");
    (conv ? r.tensors_converted : r.tensors_copied) += 1;
    (conv ? r.bytes_converted : r.bytes_copied) += t.n_bytes;
  }

  LMRT_RETURN_IF_ERROR(w.write(out_path, [&](size_t i, uint8_t* data, uint64_t bytes) {
    const GgufTensorInfo& t = tensors[i];
    if (converts(t))
      interleave_q4_0(t.data, t.ne[1], t.ne[0], data);
    else
      std::memcpy(data, t.data, bytes);
    return Status::Ok();
  }));
  struct stat st {};
  if (::stat(out_path.c_str(), &st) == 0) r.output_bytes = static_cast<uint64_t>(st.st_size);
  if (report != nullptr) *report = r;
  return Status::Ok();
}

}  // namespace lmrt
