// The KV cache: one arena allocated when a context is created, holding for every layer the keys
// and values of n_ctx positions (n_ctx x n_layer x 2 x kv_dim entries of F16 or F32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/util/aligned_buffer.h"
#include "runtime/util/status.h"

namespace lmrt {

enum class KvType { f16, f32 };

class KvArena {
 public:
  // Errors: invalid_argument (zero sizes), out_of_memory.
  static Status create(uint32_t n_layer, uint32_t kv_dim, uint32_t n_ctx, KvType type, std::unique_ptr<KvArena>* out);

  KvType type() const { return type_; }
  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t kv_dim() const { return kv_dim_; }
  size_t bytes() const { return storage_.size(); }
  size_t entry_bytes() const { return type_ == KvType::f16 ? 2 : 4; }

  // Start of the key / value row of `layer` at position `pos` (kv_dim entries of type()).
  uint8_t* key(uint32_t layer, uint32_t pos) { return row(layer, 0, pos); }
  uint8_t* value(uint32_t layer, uint32_t pos) { return row(layer, 1, pos); }
  const uint8_t* key(uint32_t layer, uint32_t pos) const { return const_cast<KvArena*>(this)->row(layer, 0, pos); }
  const uint8_t* value(uint32_t layer, uint32_t pos) const { return const_cast<KvArena*>(this)->row(layer, 1, pos); }

  // Converts n floats to fp16 bits exactly as f32_to_fp16 does (a kernel table's to_f16).
  using ToF16 = void (*)(const float* x, uint16_t* y, size_t n);
  // Stores a float key and value row at (layer, pos), converting to the arena's type: through `to_f16`
  // when given, else one value at a time.
  void store(uint32_t layer, uint32_t pos, const float* k, const float* v, ToF16 to_f16 = nullptr);

 private:
  KvArena() = default;
  uint8_t* row(uint32_t layer, uint32_t which, uint32_t pos) {
    const size_t plane = static_cast<size_t>(n_ctx_) * kv_dim_ * entry_bytes();
    return storage_.data() + (static_cast<size_t>(layer) * 2 + which) * plane +
           static_cast<size_t>(pos) * kv_dim_ * entry_bytes();
  }

  KvType type_ = KvType::f16;
  uint32_t n_layer_ = 0;
  uint32_t kv_dim_ = 0;
  uint32_t n_ctx_ = 0;
  AlignedBuffer<uint8_t> storage_;
};

}  // namespace lmrt
