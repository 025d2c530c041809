// The KV cache: one arena allocated when a context is created, holding for every layer the keys
// and values of n_ctx positions (n_ctx x n_layer x 2 x kv_dim entries of F16 or F32).
//
// Layout: [layer][key | value][kv head][position][head_dim]. Decode attention reads one head's keys
// (then values) for every position; head-major planes make that one sequential stream, which the
// hardware prefetchers follow. With positions outermost the same read is a stride of a whole row
// (kv_dim entries, KiBs), which they do not, and every row became a demand miss.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/util/aligned_buffer.h"
#include "runtime/util/status.h"

namespace lmrt {

enum class KvType { f16, f32 };

// "f16" / "f32".
const char* kv_type_name(KvType type);

class KvArena {
 public:
  // Errors: invalid_argument (zero sizes), out_of_memory.
  static Status create(uint32_t n_layer, uint32_t n_head_kv, uint32_t head_dim, uint32_t n_ctx, KvType type,
                       std::unique_ptr<KvArena>* out);

  KvType type() const { return type_; }
  uint32_t n_ctx() const { return n_ctx_; }
  uint32_t n_head_kv() const { return n_head_kv_; }
  uint32_t head_dim() const { return head_dim_; }
  uint32_t kv_dim() const { return n_head_kv_ * head_dim_; }
  size_t bytes() const { return storage_.size(); }
  size_t entry_bytes() const { return type_ == KvType::f16 ? 2 : 4; }

  // Start of KV head `head`'s key / value at (`layer`, `pos`): head_dim entries of type(). The same
  // head's entries at pos + 1 follow directly (positions are head_dim entries apart).
  uint8_t* key(uint32_t layer, uint32_t head, uint32_t pos) { return entry(layer, 0, head, pos); }
  uint8_t* value(uint32_t layer, uint32_t head, uint32_t pos) { return entry(layer, 1, head, pos); }
  const uint8_t* key(uint32_t layer, uint32_t head, uint32_t pos) const {
    return const_cast<KvArena*>(this)->entry(layer, 0, head, pos);
  }
  const uint8_t* value(uint32_t layer, uint32_t head, uint32_t pos) const {
    return const_cast<KvArena*>(this)->entry(layer, 1, head, pos);
  }

  // Converts n floats to fp16 bits exactly as f32_to_fp16 does (a kernel table's to_f16).
  using ToF16 = void (*)(const float* x, uint16_t* y, size_t n);
  // Stores a float key and value row (kv_dim floats each, heads one after another) at (layer, pos),
  // converting to the arena's type: through `to_f16` when given, else one value at a time.
  void store(uint32_t layer, uint32_t pos, const float* k, const float* v, ToF16 to_f16 = nullptr) {
    store_heads(layer, pos, 0, n_head_kv_, k, v, to_f16);
  }
  // store() for KV heads [head0, head1) only (k and v still hold every head), so threads that own
  // different heads can store their own.
  void store_heads(uint32_t layer, uint32_t pos, uint32_t head0, uint32_t head1, const float* k, const float* v,
                   ToF16 to_f16 = nullptr);
  // Reads the key and value rows at (layer, pos) back as kv_dim floats each (the inverse of store).
  void load(uint32_t layer, uint32_t pos, float* k, float* v) const;

 private:
  KvArena() = default;
  uint8_t* entry(uint32_t layer, uint32_t which, uint32_t head, uint32_t pos) {
    const size_t head_plane = static_cast<size_t>(n_ctx_) * head_dim_ * entry_bytes();
    return storage_.data() + ((static_cast<size_t>(layer) * 2 + which) * n_head_kv_ + head) * head_plane +
           static_cast<size_t>(pos) * head_dim_ * entry_bytes();
  }

  KvType type_ = KvType::f16;
  uint32_t n_layer_ = 0;
  uint32_t n_head_kv_ = 0;
  uint32_t head_dim_ = 0;
  uint32_t n_ctx_ = 0;
  AlignedBuffer<uint8_t> storage_;
};

}  // namespace lmrt
