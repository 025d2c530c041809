#include "runtime/sampling/rng.h"

namespace lmrt {
namespace {

constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

uint64_t splitmix64_next(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

Rng Rng::from_state(const std::array<uint64_t, 4>& state) {
  Rng rng(0);
  if (state[0] | state[1] | state[2] | state[3]) rng.s_ = state;
  return rng;
}

void Rng::reseed(uint64_t seed) {
  seed_ = seed;
  uint64_t sm = seed;
  for (uint64_t& word : s_) word = splitmix64_next(sm);
  // splitmix64's output is a bijection of its counter, so of four distinct counters at most one
  // maps to zero: the state is never all zero.
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

}  // namespace lmrt
