// libFuzzer target: the saved-context-state reader (runtime/generate/state_blob.cpp) on arbitrary
// bytes, for a small geometry (2 layers, 2 KV heads of 4, 512 tokens, F16 or F32 by the first byte).
// With bit 1 of the first byte the input's checksum is recomputed first, so the fuzzer also reaches
// the checks behind it. Every input is a blob or a clean error; an accepted blob lies inside the
// input, its tokens are in the vocabulary, and writing its contents again gives the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/generate/state_blob.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  lmrt::StateGeometry g;
  g.kv_type = data[0] & 1;
  g.n_layer = 2;
  g.n_head_kv = 2;
  g.head_dim = 4;
  g.n_vocab = 512;
  lmrt::ModelFingerprint model{};
  model.fill(0x5a);
  constexpr uint32_t kMaxTokens = 64;
  std::vector<uint8_t> blob(data + 1, data + size);
  if ((data[0] & 2) != 0 && blob.size() >= lmrt::kStateChecksumBytes) lmrt::seal_state_blob(blob.data(), blob.size());

  lmrt::StateBlobView v;
  const lmrt::Status s = lmrt::read_state_blob(blob.data(), blob.size(), model, g, kMaxTokens, &v);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();
    return 0;
  }
  if (v.n_tokens > kMaxTokens || blob.size() != lmrt::state_blob_size(g, v.n_tokens)) __builtin_trap();
  std::vector<int32_t> tokens(v.n_tokens);
  for (uint32_t i = 0; i < v.n_tokens; ++i) {
    tokens[i] = v.token(i);
    if (tokens[i] < 0 || tokens[i] >= 512) __builtin_trap();
  }
  std::vector<uint8_t> again(blob.size());
  uint8_t* p = lmrt::write_state_head(again.data(), model, g, v.saver_n_ctx, tokens.data(), v.n_tokens);
  const size_t kv_bytes = size_t{g.n_layer} * 2 * g.n_head_kv * g.head_run_bytes(v.n_tokens);
  if (v.kv != blob.data() + (p - again.data())) __builtin_trap();
  std::memcpy(p, v.kv, kv_bytes);
  lmrt::seal_state_blob(again.data(), again.size());
  if (again != blob) __builtin_trap();
  return 0;
}
