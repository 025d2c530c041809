#include "tools/quantize_rules.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <numeric>

namespace lmrt {

namespace {

using FT = QuantFileType;
using TT = TensorType;

struct FileTypeInfo {
  FT type;
  const char* name;
  TT base;
};

constexpr FileTypeInfo kFileTypes[] = {
    {FT::q4_0, "Q4_0", TT::q4_0},       {FT::q4_1, "Q4_1", TT::q4_1},     {FT::q5_0, "Q5_0", TT::q5_0},
    {FT::q5_1, "Q5_1", TT::q5_1},       {FT::q8_0, "Q8_0", TT::q8_0},     {FT::q2_k, "Q2_K", TT::q2_k},
    {FT::q3_k_s, "Q3_K_S", TT::q3_k},   {FT::q3_k_m, "Q3_K_M", TT::q3_k}, {FT::q3_k_l, "Q3_K_L", TT::q3_k},
    {FT::q4_k_s, "Q4_K_S", TT::q4_k},   {FT::q4_k_m, "Q4_K_M", TT::q4_k}, {FT::q5_k_s, "Q5_K_S", TT::q5_k},
    {FT::q5_k_m, "Q5_K_M", TT::q5_k},   {FT::q6_k, "Q6_K", TT::q6_k},     {FT::iq4_nl, "IQ4_NL", TT::iq4_nl},
    {FT::iq4_xs, "IQ4_XS", TT::iq4_xs},
};

const FileTypeInfo* info(FT type) {
  for (const FileTypeInfo& i : kFileTypes)
    if (i.type == type) return &i;
  return nullptr;
}

// llama.cpp's broad tensor categories (tensor_get_category).
enum class Category {
  output,
  token_embd,
  attn_qkv,
  attn_kv_b,
  attn_v,
  attn_k,
  attn_q,
  attn_output,
  ffn_up,
  ffn_gate,
  ffn_down,
  other
};

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

Category category_of(std::string_view name) {
  if (name == "output.weight") return Category::output;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Category::token_embd;
  if (contains(name, "attn_qkv.weight")) return Category::attn_qkv;
  if (contains(name, "attn_kv_b.weight")) return Category::attn_kv_b;
  if (contains(name, "attn_v.weight")) return Category::attn_v;
  if (contains(name, "attn_k.weight")) return Category::attn_k;
  if (contains(name, "attn_q.weight")) return Category::attn_q;
  if (contains(name, "attn_output.weight")) return Category::attn_output;
  if (contains(name, "ffn_up")) return Category::ffn_up;
  if (contains(name, "ffn_gate")) return Category::ffn_gate;
  if (contains(name, "ffn_down")) return Category::ffn_down;
  return Category::other;
}

// The value projections (and fused ones containing them) are the most sensitive to quantization.
bool is_attn_v_like(Category c) { return c == Category::attn_v || c == Category::attn_qkv || c == Category::attn_kv_b; }

// llama.cpp quantizes only matrices named *weight, and not the small or special ones below.
bool allows_quantization(const QuantTensor& t) {
  if (t.n_dims < 2) return false;
  const std::string_view name = t.name;
  if (name.size() < 6 || name.substr(name.size() - 6) != "weight") return false;
  static constexpr std::string_view kKeep[] = {"_norm.weight",
                                               "ffn_gate_inp.weight",
                                               "ffn_gate_tid2eid.weight",
                                               "altup",
                                               "laurel",
                                               "per_layer_model_proj",
                                               "ssm_conv1d",
                                               "shortconv.conv.weight",
                                               "indexer.k_proj.weight",
                                               "indexer.q_proj.weight",
                                               "time_mix_first.weight",
                                               "time_mix_w0.weight",
                                               "time_mix_w1.weight",
                                               "time_mix_w2.weight",
                                               "time_mix_v0.weight",
                                               "time_mix_v1.weight",
                                               "time_mix_v2.weight",
                                               "time_mix_a0.weight",
                                               "time_mix_a1.weight",
                                               "time_mix_a2.weight",
                                               "time_mix_g1.weight",
                                               "time_mix_g2.weight",
                                               "time_mix_decay_w1.weight",
                                               "time_mix_decay_w2.weight",
                                               "time_mix_lerp_fused.weight",
                                               "attn_rel_b.weight",
                                               ".position_embd",
                                               "sam.pos_embd",
                                               "sam.neck.",
                                               "sam.net_",
                                               ".rel_pos",
                                               ".patch_embd",
                                               ".patch_merger",
                                               "a.rvq.codebook",
                                               "mm.a.code_embd"};
  for (std::string_view k : kKeep)
    if (contains(name, k)) return false;
  return name != "position_embd.weight" && name != "token_types.weight";
}

// The layers of a stack that get more bits: the first and last eighth, and every third in between.
bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

int layer_of(std::string_view name) {
  int layer = -1;
  std::sscanf(std::string(name).c_str(), "blk.%d.", &layer);
  return layer;
}

// Where a row is not whole blocks of the chosen type: the nearest type with blocks of 32, else F16.
TT shape_fallback(const QuantTensor& t, TT target) {
  if (t.row_length % tensor_type_traits(target).block_size == 0) return target;
  TT fallback = target;
  switch (target) {
    case TT::iq4_xs:
      fallback = TT::iq4_nl;
      break;
    case TT::q2_k:
    case TT::q3_k:
      fallback = TT::q4_0;
      break;
    case TT::q4_k:
      fallback = TT::q5_0;
      break;
    case TT::q5_k:
      fallback = TT::q5_1;
      break;
    case TT::q6_k:
      fallback = TT::q8_0;
      break;
    default:
      break;
  }
  return t.row_length % tensor_type_traits(fallback).block_size == 0 ? fallback : TT::f16;
}

struct RuleState {
  FT ft;
  const QuantModelShape& shape;
  bool tied_embeddings = true;
  int n_attn_v = 0, i_attn_v = 0, i_ffn_down = 0;

  int n_gqa() const { return shape.n_head_kv != 0 ? static_cast<int>(shape.n_head / shape.n_head_kv) : 0; }
  bool falcon() const { return shape.arch == "falcon"; }
  bool is_70b() const { return shape.arch == "llama" && shape.n_layer == 80 && shape.n_head != shape.n_head_kv; }

  // llama_tensor_get_type_impl for the file types above, without an importance matrix.
  TT mixed_type(const QuantTensor& t, Category cat, TT type) {
    const int n_expert = static_cast<int>(shape.n_expert);
    if (cat == Category::output || (tied_embeddings && cat == Category::token_embd)) {
      if (falcon() || t.row_length % tensor_type_traits(type).block_size != 0) return TT::q8_0;
      return type != TT::q8_0 ? TT::q6_k : type;
    }
    if (cat == Category::token_embd) return type;
    if (is_attn_v_like(cat)) {
      if (ft == FT::q2_k)
        type = n_gqa() >= 4 ? TT::q4_k : TT::q3_k;
      else if (ft == FT::q3_k_m)
        type = i_attn_v < 2 ? TT::q5_k : TT::q4_k;
      else if (ft == FT::q3_k_l)
        type = TT::q5_k;
      else if ((ft == FT::iq4_nl || ft == FT::iq4_xs) && n_gqa() >= 4)
        type = TT::q5_k;
      else if ((ft == FT::q4_k_m || ft == FT::q5_k_m) && use_more_bits(i_attn_v, n_attn_v))
        type = TT::q6_k;
      else if (ft == FT::q4_k_s && i_attn_v < 4)
        type = TT::q5_k;
      // 70B's attn_v is 8x smaller than attn_q (8 heads share it): more bits cost little.
      if (is_70b() && (type == TT::q3_k || type == TT::q4_k)) type = TT::q5_k;
      if (n_expert == 8) type = TT::q8_0;
      ++i_attn_v;
      return type;
    }
    if (cat == Category::attn_k) return n_expert == 8 ? TT::q8_0 : type;
    if (cat == Category::ffn_down) {
      // Experts' tensors are not consecutive: their layer comes from the name.
      const int i_layer = n_expert > 1 ? layer_of(t.name) : i_ffn_down;
      const int n_layer = static_cast<int>(shape.n_layer);
      if (ft == FT::q2_k)
        type = TT::q3_k;
      else if (ft == FT::q3_k_m)
        type = i_layer < n_layer / 16 ? TT::q5_k : !falcon() || use_more_bits(i_layer, n_layer) ? TT::q4_k : TT::q3_k;
      else if (ft == FT::q3_k_l)
        type = falcon() ? TT::q4_k : TT::q5_k;
      else if (ft == FT::q4_k_m) {
        if (falcon())
          type = i_layer < n_layer / 16 ? TT::q6_k : use_more_bits(i_layer, n_layer) ? TT::q5_k : TT::q4_k;
        else if (use_more_bits(i_layer, n_layer))
          type = TT::q6_k;
      } else if (i_layer < n_layer / 8 && (ft == FT::iq4_nl || ft == FT::iq4_xs))
        type = TT::q5_k;
      else if (ft == FT::q5_k_m && use_more_bits(i_layer, n_layer))
        type = TT::q6_k;
      else if (ft == FT::q4_k_s && !falcon() && i_layer < n_layer / 8)
        type = TT::q5_k;
      ++i_ffn_down;
      return type;
    }
    if (cat == Category::attn_output) {
      if (falcon()) return ft == FT::q3_k_l ? TT::q4_k : type;
      if (n_expert == 8) {
        const bool more = ft == FT::q2_k || ft == FT::q3_k_s || ft == FT::q3_k_m || ft == FT::iq4_nl ||
                          ft == FT::q4_k_s || ft == FT::q4_k_m || ft == FT::iq4_xs;
        return more ? TT::q5_k : type;
      }
      if (ft == FT::q2_k) return TT::q3_k;
      if (ft == FT::q3_k_m) return TT::q4_k;
      if (ft == FT::q3_k_l) return TT::q5_k;
      return type;
    }
    return type;
  }
};

}  // namespace

bool quant_file_type_from_name(std::string_view name, QuantFileType* out) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const FileTypeInfo& i : kFileTypes) {
    if (upper == i.name) {
      *out = i.type;
      return true;
    }
  }
  return false;
}

const char* quant_file_type_name(QuantFileType type) {
  const FileTypeInfo* i = info(type);
  return i != nullptr ? i->name : "?";
}

std::string quant_file_type_names() {
  std::string s;
  for (const FileTypeInfo& i : kFileTypes) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

TensorType quant_file_type_base(QuantFileType type) {
  const FileTypeInfo* i = info(type);
  return i != nullptr ? i->base : TT::f32;
}

Status quant_model_shape(const GgufFile& file, QuantModelShape* out) {
  QuantModelShape s;
  const std::optional<std::string_view> arch = file.get_string("general.architecture");
  if (!arch) return Error(Code::bad_format, "the model has no general.architecture");
  s.arch = std::string(*arch);
  const auto u32 = [&](const char* suffix) -> uint32_t {
    const std::optional<int64_t> v = file.get_int(s.arch + suffix);
    return v && *v > 0 && *v <= UINT32_MAX ? static_cast<uint32_t>(*v) : 0;
  };
  s.n_layer = u32(".block_count");
  if (s.n_layer == 0) return Error(Code::bad_format, "the model has no " + s.arch + ".block_count");
  s.n_head = u32(".attention.head_count");
  s.n_head_kv = file.find(s.arch + ".attention.head_count_kv") != nullptr ? u32(".attention.head_count_kv") : s.n_head;
  s.n_expert = u32(".expert_count");
  *out = s;
  return Status::Ok();
}

std::vector<size_t> llama_tensor_order(const std::vector<QuantTensor>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  return order;
}

std::vector<TensorType> plan_tensor_types(QuantFileType file_type, const QuantModelShape& shape,
                                          const std::vector<QuantTensor>& tensors) {
  RuleState st{file_type, shape};
  for (const QuantTensor& t : tensors) {
    const Category c = category_of(t.name);
    st.n_attn_v += is_attn_v_like(c);
    if (c == Category::output) st.tied_embeddings = false;
  }
  const TT base = quant_file_type_base(file_type);
  std::vector<TensorType> types(tensors.size());
  for (size_t i : llama_tensor_order(tensors)) {
    const QuantTensor& t = tensors[i];
    types[i] = allows_quantization(t) ? shape_fallback(t, st.mixed_type(t, category_of(t.name), base)) : t.type;
  }
  return types;
}

}  // namespace lmrt
