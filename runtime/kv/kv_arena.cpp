#include "runtime/kv/kv_arena.h"

#include <cstring>

#include "runtime/util/checked_math.h"
#include "runtime/util/fp16.h"

namespace lmrt {

const char* kv_type_name(KvType type) { return type == KvType::f32 ? "f32" : "f16"; }

Status KvArena::create(uint32_t n_layer, uint32_t n_head_kv, uint32_t head_dim, uint32_t n_ctx, KvType type,
                       std::unique_ptr<KvArena>* out) {
  if (n_layer == 0 || n_head_kv == 0 || head_dim == 0 || n_ctx == 0)
    return Error(Code::invalid_argument, "KV arena sizes must be positive");
  std::unique_ptr<KvArena> a(new KvArena());
  a->type_ = type;
  a->n_layer_ = n_layer;
  a->n_head_kv_ = n_head_kv;
  a->head_dim_ = head_dim;
  a->n_ctx_ = n_ctx;
  uint64_t bytes = 0;
  if (!checked_mul(uint64_t{n_ctx} * n_layer * 2, uint64_t{n_head_kv} * head_dim * a->entry_bytes(), &bytes) ||
      !a->storage_.allocate(bytes))
    return Error(Code::out_of_memory, "cannot allocate a KV arena of " + std::to_string(n_ctx) + " tokens (" +
                                          std::to_string(bytes >> 20) + " MiB)");
  *out = std::move(a);
  return Status::Ok();
}

void KvArena::store_heads(uint32_t layer, uint32_t pos, uint32_t head0, uint32_t head1, const float* k, const float* v,
                          ToF16 to_f16) {
  for (uint32_t h = head0; h < head1; ++h) {
    const float* kh = k + static_cast<size_t>(h) * head_dim_;
    const float* vh = v + static_cast<size_t>(h) * head_dim_;
    if (type_ == KvType::f32) {
      std::memcpy(key(layer, h, pos), kh, head_dim_ * sizeof(float));
      std::memcpy(value(layer, h, pos), vh, head_dim_ * sizeof(float));
      continue;
    }
    auto* kd = reinterpret_cast<uint16_t*>(key(layer, h, pos));
    auto* vd = reinterpret_cast<uint16_t*>(value(layer, h, pos));
    if (to_f16 != nullptr) {
      to_f16(kh, kd, head_dim_);
      to_f16(vh, vd, head_dim_);
      continue;
    }
    for (uint32_t i = 0; i < head_dim_; ++i) {
      kd[i] = f32_to_fp16(kh[i]);
      vd[i] = f32_to_fp16(vh[i]);
    }
  }
}

void KvArena::load(uint32_t layer, uint32_t pos, float* k, float* v) const {
  for (uint32_t h = 0; h < n_head_kv_; ++h) {
    float* kh = k + static_cast<size_t>(h) * head_dim_;
    float* vh = v + static_cast<size_t>(h) * head_dim_;
    if (type_ == KvType::f32) {
      std::memcpy(kh, key(layer, h, pos), head_dim_ * sizeof(float));
      std::memcpy(vh, value(layer, h, pos), head_dim_ * sizeof(float));
      continue;
    }
    const auto* kd = reinterpret_cast<const uint16_t*>(key(layer, h, pos));
    const auto* vd = reinterpret_cast<const uint16_t*>(value(layer, h, pos));
    for (uint32_t i = 0; i < head_dim_; ++i) {
      kh[i] = fp16_to_f32(kd[i]);
      vh[i] = fp16_to_f32(vd[i]);
    }
  }
}

}  // namespace lmrt
