// Rng: the sampler chain's random number generator, specified bit for bit so that a seed gives the
// same draws on every platform and compiler: xoshiro256** (Blackman & Vigna, 2018) whose 256-bit
// state is filled from the 64-bit seed by four outputs of splitmix64. Floats take the top 24 bits,
// doubles the top 53 bits of one 64-bit output, so both are exact multiples of 2^-24 / 2^-53 in [0, 1).
#pragma once

#include <array>
#include <cstdint>

namespace lmrt {

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }

  // A generator at an exact state, for reference vectors; an all-zero state (the one state
  // xoshiro never leaves) is replaced by the state of seed 0.
  static Rng from_state(const std::array<uint64_t, 4>& state);

  // Restarts the stream as if freshly constructed with `seed`.
  void reseed(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, 1) with 24 random bits.
  float uniform_float() { return static_cast<float>(next_u64() >> 40) * 0x1.0p-24f; }
  // Uniform in [0, 1) with 53 random bits.
  double uniform_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  uint64_t seed() const { return seed_; }
  const std::array<uint64_t, 4>& state() const { return s_; }

  friend bool operator==(const Rng& a, const Rng& b) { return a.s_ == b.s_; }

 private:
  std::array<uint64_t, 4> s_{};
  uint64_t seed_ = 0;
};

// One step of splitmix64 (Steele, Lea & Flood, 2014): advances `state` and returns the next output.
uint64_t splitmix64_next(uint64_t& state);

}  // namespace lmrt
