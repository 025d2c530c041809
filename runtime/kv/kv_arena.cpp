#include "runtime/kv/kv_arena.h"

#include <cstring>

#include "runtime/util/checked_math.h"
#include "runtime/util/fp16.h"

namespace lmrt {

Status KvArena::create(uint32_t n_layer, uint32_t kv_dim, uint32_t n_ctx, KvType type, std::unique_ptr<KvArena>* out) {
  if (n_layer == 0 || kv_dim == 0 || n_ctx == 0)
    return Error(Code::invalid_argument, "KV arena sizes must be positive");
  std::unique_ptr<KvArena> a(new KvArena());
  a->type_ = type;
  a->n_layer_ = n_layer;
  a->kv_dim_ = kv_dim;
  a->n_ctx_ = n_ctx;
  uint64_t bytes = 0;
  if (!checked_mul(uint64_t{n_ctx} * n_layer * 2, uint64_t{kv_dim} * a->entry_bytes(), &bytes) ||
      !a->storage_.allocate(bytes))
    return Error(Code::out_of_memory, "cannot allocate a KV arena of " + std::to_string(n_ctx) + " tokens (" +
                                          std::to_string(bytes >> 20) + " MiB)");
  *out = std::move(a);
  return Status::Ok();
}

void KvArena::store(uint32_t layer, uint32_t pos, const float* k, const float* v, ToF16 to_f16) {
  uint8_t* kd = key(layer, pos);
  uint8_t* vd = value(layer, pos);
  if (type_ == KvType::f32) {
    std::memcpy(kd, k, kv_dim_ * sizeof(float));
    std::memcpy(vd, v, kv_dim_ * sizeof(float));
    return;
  }
  auto* kh = reinterpret_cast<uint16_t*>(kd);
  auto* vh = reinterpret_cast<uint16_t*>(vd);
  if (to_f16 != nullptr) {
    to_f16(k, kh, kv_dim_);
    to_f16(v, vh, kv_dim_);
    return;
  }
  for (uint32_t i = 0; i < kv_dim_; ++i) {
    kh[i] = f32_to_fp16(k[i]);
    vh[i] = f32_to_fp16(v[i]);
  }
}

}  // namespace lmrt
