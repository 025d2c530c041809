#include "tools/quantize_file.h"

#include <sys/stat.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "formats/dequantize.h"
#include "formats/quantize.h"
#include "runtime/model/gguf_file.h"
#include "runtime/util/same_file.h"
#include "runtime/util/thread_pool.h"
#include "tools/gguf_writer.h"

namespace lmrt {

namespace {

constexpr const char* kFileTypeKey = "general.file_type";
constexpr const char* kQuantVersionKey = "general.quantization_version";
constexpr uint32_t kQuantizationVersion = 2;  // ggml's GGML_QNT_VERSION

// Keys llama.cpp drops from a quantized file (it writes one file, not splits) or sets itself.
bool dropped_key(std::string_view key) {
  return key == kFileTypeKey || key == kQuantVersionKey || key == "split.no" || key == "split.count" ||
         key == "split.tensors.count";
}

bool all_finite(const float* x, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

bool float_source(TensorType t) {
  return t == TensorType::f32 || t == TensorType::f16 || t == TensorType::bf16 || t == TensorType::q8_0;
}

}  // namespace

Status quantize_model_file(const std::string& in_path, const std::string& out_path, const QuantizeFileOptions& options,
                           QuantizeFileReport* report) {
  if (in_path.empty() || out_path.empty())
    return Error(Code::invalid_argument, "quantize: the input and output paths must not be empty");
  if (options.n_threads == 0) return Error(Code::invalid_argument, "quantize: the thread count must be at least 1");
  std::unique_ptr<GgufFile> in;
  LMRT_RETURN_IF_ERROR(GgufFile::open(in_path, true, &in));
  LMRT_RETURN_IF_ERROR(check_output_is_not_input(in_path, out_path));

  QuantModelShape shape;
  LMRT_RETURN_IF_ERROR(quant_model_shape(*in, &shape));
  const std::vector<GgufTensorInfo>& src = in->tensors();
  std::vector<QuantTensor> tensors(src.size());
  for (size_t i = 0; i < src.size(); ++i)
    tensors[i] = {std::string(src[i].name), src[i].n_dims, src[i].ne[0], src[i].type};
  const std::vector<TensorType> types = plan_tensor_types(options.file_type, shape, tensors);
  const std::vector<size_t> order = llama_tensor_order(tensors);

  GgufWriter w;
  LMRT_RETURN_IF_ERROR(w.set_alignment(in->alignment()));
  for (const GgufKv& kv : in->metadata())
    if (!dropped_key(kv.key)) w.add_value(std::string(kv.key), kv.value);
  w.add_u32(kQuantVersionKey, kQuantizationVersion);
  w.add_u32(kFileTypeKey, static_cast<uint32_t>(options.file_type));

  QuantizeFileReport r;
  uint64_t max_row = 0;
  for (size_t i : order) {
    const GgufTensorInfo& t = src[i];
    const bool convert = types[i] != t.type;
    if (convert && !float_source(t.type))
      return Error(Code::unsupported, "tensor '" + tensors[i].name + "' is " + tensor_type_traits(t.type).name +
                                          ": quantize from the F32, F16, BF16 or Q8_0 model (quantizing quantized " +
                                          "weights again compounds the error)");
    if (convert && quantize_fn_for(types[i]) == nullptr)
      return Error(Code::internal, std::string("quantize: no quantizer for ") + tensor_type_traits(types[i]).name);
    LMRT_RETURN_IF_ERROR(
        w.add_tensor(tensors[i].name, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), types[i]));
    (convert ? r.tensors_quantized : r.tensors_copied) += 1;
    r.input_bytes += t.n_bytes;
    if (convert && t.ne[0] > max_row) max_row = t.ne[0];
    ++r.type_counts[tensor_type_traits(types[i]).name];
  }

  // One float row per thread, allocated here so that the workers allocate nothing.
  ThreadPool pool(options.n_threads);
  std::vector<std::vector<float>> scratch;
  try {
    scratch.assign(pool.size(), std::vector<float>(max_row));
  } catch (const std::bad_alloc&) {
    return Error(Code::out_of_memory, "quantize: cannot allocate row buffers");
  }

  uint64_t done = 0;
  LMRT_RETURN_IF_ERROR(w.write(out_path, [&](size_t k, uint8_t* data, uint64_t bytes) {
    const GgufTensorInfo& t = src[order[k]];
    const TensorType to = types[order[k]];
    if (to == t.type) {
      std::memcpy(data, t.data, bytes);
    } else {
      const uint64_t n = t.ne[0], n_rows = t.n_rows();
      const uint64_t src_row = t.n_bytes / n_rows, dst_row = bytes / n_rows;
      const QuantizeRowFn quantize = quantize_fn_for(to);
      // Rows are handed out in chunks of ~16K weights (llama.cpp's chunk size) so that threads balance.
      const uint64_t grain = n >= 16384 ? 1 : (16384 + n - 1) / n;
      std::atomic<uint64_t> next{0}, bad_row{n_rows}, rows_done{0};
      pool.run([&](size_t thread, size_t) {
        float* row = scratch[thread].data();
        for (;;) {
          const uint64_t begin = next.fetch_add(grain, std::memory_order_relaxed);
          if (begin >= n_rows) break;
          const uint64_t end = begin + grain < n_rows ? begin + grain : n_rows;
          for (uint64_t i = begin; i < end; ++i) {
            dequantize_row(t.type, t.data + i * src_row, row, n);
            if (!all_finite(row, n)) {
              for (uint64_t seen = bad_row.load(); i < seen && !bad_row.compare_exchange_weak(seen, i);) {
              }
              continue;
            }
            quantize(row, data + i * dst_row, n);
          }
          // A large tensor moves the bar too; thread 0 is the caller, where the callback must run.
          const uint64_t rows = rows_done.fetch_add(end - begin) + (end - begin);
          if (thread == 0 && options.progress) options.progress(done + rows * src_row, r.input_bytes);
        }
      });
      // llama.cpp refuses these too (its quantized-data validation): scales would be NaN or infinite.
      if (bad_row.load() < n_rows)
        return Error(Code::bad_format, "tensor '" + std::string(t.name) + "' row " + std::to_string(bad_row.load()) +
                                           " holds a NaN or infinite value; it cannot be quantized");
    }
    done += t.n_bytes;
    if (options.progress) options.progress(done, r.input_bytes);
    return Status::Ok();
  }));
  struct stat st {};
  if (::stat(out_path.c_str(), &st) == 0) r.output_bytes = static_cast<uint64_t>(st.st_size);
  if (report != nullptr) *report = std::move(r);
  return Status::Ok();
}

}  // namespace lmrt
