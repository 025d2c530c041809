// The benchmark prompt of ../shared/peers/README.md, as llama.cpp's peer bench builds it: tok[0] = BOS,
// tok[i] = 259 + uint32((i + seed) * 2654435761) % (n_vocab - 259) (sequence s of a batch uses seed s).
#pragma once

#include <cstdint>
#include <vector>

inline std::vector<int32_t> bench_prompt(uint32_t p, uint32_t n_vocab, int32_t bos, uint32_t seed = 0) {
  std::vector<int32_t> t(p);
  t[0] = bos;
  for (uint32_t i = 1; i < p; ++i) {
    const uint32_t h = (i + seed) * 2654435761u;
    t[i] = static_cast<int32_t>(259 + h % (n_vocab - 259));
  }
  return t;
}
