#include "tools/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "runtime/util/fp16.h"
#include "tools/gguf_writer.h"

namespace lmrt {

namespace {

// llama / sentencepiece token types.
constexpr int32_t kTokNormal = 1, kTokUnknown = 2, kTokControl = 3, kTokUnused = 5, kTokByte = 6;

struct Vocab {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
};

// Reads a llama2.c tokenizer.bin (int32 max_len, then per token: f32 score, int32 length, bytes) and
// undoes llama2.c's export: '▁' became ' ', BOS/EOS were renamed.
Status load_vocab(const std::string& path, uint32_t n_vocab, Vocab* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(Code::io, "cannot open tokenizer " + path);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t off = 4;
  const auto bad = [&](const std::string& why) { return Error(Code::bad_format, "tokenizer " + path + ": " + why); };
  if (data.size() < 4) return bad("too short");
  while (off < data.size() && out->pieces.size() < n_vocab) {
    if (data.size() - off < 8) return bad("truncated entry");
    float score;
    int32_t len;
    std::memcpy(&score, data.data() + off, 4);
    std::memcpy(&len, data.data() + off + 4, 4);
    off += 8;
    if (len < 0 || static_cast<size_t>(len) > data.size() - off) return bad("bad piece length");
    std::string s = data.substr(off, static_cast<size_t>(len));
    off += static_cast<size_t>(len);
    const size_t i = out->pieces.size();
    int32_t type = kTokNormal;
    if (i == 0) {
      s = "<unk>";
      type = kTokUnknown;
    } else if (i == 1 || i == 2) {
      s = i == 1 ? "<s>" : "</s>";
      type = kTokControl;
    } else if (i < 3 + 256) {
      type = kTokByte;
    } else {
      std::string r;
      for (char c : s) r += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      s = std::move(r);
    }
    out->pieces.push_back(std::move(s));
    out->scores.push_back(score);
    out->types.push_back(type);
  }
  if (out->pieces.size() < 3 + 256) return bad("fewer than 259 tokens");
  for (size_t i = out->pieces.size(); i < n_vocab; ++i) {
    out->pieces.push_back("<unused" + std::to_string(i) + ">");
    out->scores.push_back(0.0f);
    out->types.push_back(kTokUnused);
  }
  return Status::Ok();
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Approximately N(0, 1): the sum of four 16-bit uniforms, centred and scaled to unit variance.
float gaussian(uint64_t& state) {
  const uint64_t r = splitmix64(state);
  const float sum = static_cast<float>((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48));
  return (sum / 65536.0f - 2.0f) * 1.7320508f;
}

// Fills one row of `type` from n floats with the type's quantizer (write_synthetic_model refuses a type
// that has none).
void encode_row(const float* x, size_t n, TensorType type, uint8_t* out) {
  tensor_type_traits(type).quantize_row(x, out, n);
}

struct TensorPlan {
  std::string name;
  uint64_t n_in;
  uint64_t n_out;  // 0: a 1-D norm vector
};

}  // namespace

Status synthetic_shape(const std::string& name, SyntheticShape* out) {
  if (name == "tinyllama-1.1b") {
    *out = {2048, 22, 32, 4, 5632, 32000, 2048};
  } else if (name == "110m") {
    *out = {768, 12, 12, 12, 2048, 32000, 1024};
  } else {
    return Error(Code::invalid_argument, "unknown synthetic model '" + name + "' (known: tinyllama-1.1b, 110m)");
  }
  return Status::Ok();
}

Status check_synthetic_shape(const SyntheticShape& s) {
  const auto bad = [](const std::string& why) { return Error(Code::invalid_argument, "synthetic shape: " + why); };
  if (s.dim == 0 || s.layers == 0 || s.heads == 0 || s.kv_heads == 0 || s.ffn == 0 || s.ctx == 0)
    return bad("every dimension must be positive");
  if (s.dim % 32 != 0 || s.ffn % 32 != 0) return bad("dim and ffn must be multiples of 32");
  if (s.dim % s.heads != 0) return bad("dim must be a multiple of heads");
  if (s.heads % s.kv_heads != 0) return bad("heads must be a multiple of kv_heads");
  if ((s.dim / s.heads) % 2 != 0) return bad("the head size must be even");
  if (s.vocab < 259 || s.vocab > (1u << 24)) return bad("vocab must be in 259..16777216");
  if (s.dim > 65536 || s.ffn > 262144 || s.layers > 1024) return bad("dimensions beyond the supported limits");
  return Status::Ok();
}

Status write_synthetic_model(const std::string& path, const SyntheticShape& s, const SyntheticOptions& opt) {
  LMRT_RETURN_IF_ERROR(check_synthetic_shape(s));
  const TensorType wt = opt.weight_type;
  if (tensor_type_traits(wt).quantize_row == nullptr)
    return Error(Code::invalid_argument, std::string(tensor_type_traits(opt.weight_type).name) +
                                             " synthetic weights are not supported (lmrt has no quantizer for it)");
  Vocab vocab;
  try {
    LMRT_RETURN_IF_ERROR(load_vocab(opt.tokenizer_path, s.vocab, &vocab));
  } catch (const std::bad_alloc&) {
    return Error(Code::out_of_memory, "cannot load the tokenizer");
  }
  const uint32_t hd = s.dim / s.heads, kvd = hd * s.kv_heads;

  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", "synthetic");
  w.add_string("general.description", "synthetic random weights seed=" + std::to_string(opt.seed));
  w.add_u32("general.file_type", wt == TensorType::q4_0   ? 2
                                 : wt == TensorType::q8_0 ? 7
                                 : wt == TensorType::f16  ? 1
                                                          : 0);
  w.add_u32("general.quantization_version", 2);
  w.add_u32("general.alignment", GgufWriter::kAlignment);
  w.add_u32("llama.vocab_size", s.vocab);
  w.add_u32("llama.context_length", s.ctx);
  w.add_u32("llama.embedding_length", s.dim);
  w.add_u32("llama.block_count", s.layers);
  w.add_u32("llama.feed_forward_length", s.ffn);
  w.add_u32("llama.rope.dimension_count", hd);
  w.add_u32("llama.attention.head_count", s.heads);
  w.add_u32("llama.attention.head_count_kv", s.kv_heads);
  w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_f32("llama.rope.freq_base", 10000.0f);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_string_array("tokenizer.ggml.tokens", vocab.pieces);
  w.add_f32_array("tokenizer.ggml.scores", vocab.scores);
  w.add_i32_array("tokenizer.ggml.token_type", vocab.types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  w.add_bool("tokenizer.ggml.add_eos_token", false);

  std::vector<TensorPlan> plan;
  plan.push_back({"token_embd.weight", s.dim, s.vocab});
  for (uint32_t i = 0; i < s.layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    plan.push_back({p + "attn_norm.weight", s.dim, 0});
    plan.push_back({p + "attn_q.weight", s.dim, s.dim});
    plan.push_back({p + "attn_k.weight", s.dim, kvd});
    plan.push_back({p + "attn_v.weight", s.dim, kvd});
    plan.push_back({p + "attn_output.weight", s.dim, s.dim});
    plan.push_back({p + "ffn_norm.weight", s.dim, 0});
    plan.push_back({p + "ffn_gate.weight", s.dim, s.ffn});
    plan.push_back({p + "ffn_up.weight", s.dim, s.ffn});
    plan.push_back({p + "ffn_down.weight", s.ffn, s.dim});
  }
  plan.push_back({"output_norm.weight", s.dim, 0});
  plan.push_back({"output.weight", s.dim, s.vocab});
  for (const TensorPlan& t : plan) {
    if (t.n_out == 0)
      LMRT_RETURN_IF_ERROR(w.add_tensor(t.name, {t.n_in}, TensorType::f32));
    else
      LMRT_RETURN_IF_ERROR(w.add_tensor(t.name, {t.n_in, t.n_out}, wt));
  }

  std::vector<float> row;
  try {
    row.resize(std::max(s.dim, s.ffn));
  } catch (const std::bad_alloc&) {
    return Error(Code::out_of_memory, "cannot allocate a row buffer");
  }
  return w.write(path, [&](size_t index, uint8_t* data, uint64_t bytes) -> Status {
    const TensorPlan& t = plan[index];
    if (t.n_out == 0) {
      for (uint64_t i = 0; i < t.n_in; ++i) row[i] = 1.0f;
      std::memcpy(data, row.data(), bytes);
      return Status::Ok();
    }
    // Each tensor has its own stream, so it does not depend on the order tensors are written in.
    uint64_t state = opt.seed * 0x9E3779B97F4A7C15ull ^ name_hash(t.name);
    const uint64_t row_bytes = bytes / t.n_out;
    for (uint64_t r = 0; r < t.n_out; ++r) {
      for (uint64_t i = 0; i < t.n_in; ++i) row[i] = gaussian(state) * opt.std;
      encode_row(row.data(), t.n_in, wt, data + r * row_bytes);
    }
    return Status::Ok();
  });
}

}  // namespace lmrt
