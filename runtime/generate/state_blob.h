// The bytes of a saved context state (context_state.h), apart from any context: the layout, its
// writer and its checked reader, so that the format can be fuzzed on its own.
//
// Version 1 (integers little-endian):
//   "LMRTSTAT" | u32 version | 32-byte model fingerprint | u32 kv_type (0 F16, 1 F32) | u32 n_layer |
//   u32 n_head_kv | u32 head_dim | u32 n_vocab | u32 n_ctx of the saver | u32 n_tokens |
//   i32 tokens[n_tokens] | KV rows | SHA-256 of everything before it.
// KV rows: for each layer, keys then values, for each KV head, positions [0, n_tokens) of head_dim
// entries in the arena's own entry bytes (so only little-endian hosts exchange blobs; lmrt runs on
// no other). Only the held positions are written, never the whole arena.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/util/status.h"

namespace lmrt {

using ModelFingerprint = std::array<uint8_t, 32>;

// What a blob must match to be loaded: the model and the KV arena's shape.
struct StateGeometry {
  uint32_t kv_type = 0;  // 0 F16, 1 F32
  uint32_t n_layer = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t n_vocab = 0;

  size_t entry_bytes() const { return kv_type == 1 ? 4 : 2; }
  // Bytes of one (layer, key|value, head) run of n positions.
  size_t head_run_bytes(uint32_t n) const { return size_t{n} * head_dim * entry_bytes(); }
};

// A checked blob: its tokens and KV rows point into the blob's bytes.
struct StateBlobView {
  uint32_t saver_n_ctx = 0;
  uint32_t n_tokens = 0;
  const uint8_t* tokens = nullptr;  // n_tokens little-endian i32, each in [0, n_vocab)
  const uint8_t* kv = nullptr;      // n_layer x 2 x n_head_kv runs of head_run_bytes(n_tokens)

  int32_t token(uint32_t i) const;
};

constexpr size_t kStateHeaderBytes = 8 + 4 + 32 + 7 * 4;
constexpr size_t kStateChecksumBytes = 32;

size_t state_blob_size(const StateGeometry& g, uint32_t n_tokens);

// Writes the header and tokens at buf (which holds state_blob_size(g, n) bytes) and returns where
// the KV rows go; the caller writes them, then calls seal_state_blob.
uint8_t* write_state_head(uint8_t* buf, const ModelFingerprint& model, const StateGeometry& g, uint32_t saver_n_ctx,
                          const int32_t* tokens, uint32_t n_tokens);
// Appends the checksum of the size - kStateChecksumBytes bytes before it.
void seal_state_blob(uint8_t* buf, size_t size);

// Checks everything about a blob before anything is loaded from it. Errors: bad_format (not a state,
// truncated or extended, checksum mismatch, tokens outside the vocabulary), unsupported (a newer
// version), invalid_argument (another model, KV type or geometry), context_full (more than
// max_tokens tokens).
Status read_state_blob(const uint8_t* data, size_t size, const ModelFingerprint& model, const StateGeometry& g,
                       uint32_t max_tokens, StateBlobView* out);

// Whether bytes begin like a state blob (the magic), for callers that must not replace other files.
bool looks_like_state_blob(const uint8_t* data, size_t size);

}  // namespace lmrt
