// The block layouts of ggml's quantized weight types, byte for byte as GGUF files store them (llama.cpp's
// ggml-common.h), and the Q8_K activation block the K-quants are multiplied with. fp16 fields are raw
// IEEE half bits (runtime/util/fp16.h converts them).
#pragma once

#include <cstdint>

namespace lmrt {

// Elements per super-block of the K-quants and IQ4_XS.
inline constexpr int kQK = 256;

// Q4_0: 32 weights as 4-bit unsigned nibbles with an fp16 scale; value = (q - 8) * d.
// qs[j] low nibble is element j, high nibble element j + 16.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: value = q * d + m, nibbles as Q4_0.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: value = (q - 16) * d with q = nibble | (bit j of qh) << 4 (element j: low nibble of qs[j];
// element j + 16: high nibble of qs[j] and bit j + 16 of qh, qh read as a little-endian uint32).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: value = q * d + m, q as Q5_0.
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ5_1) == 24);

// Q8_0: 32 int8 weights with an fp16 scale; value = q * d.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q2_K: 16 groups of 16; scales[g] low nibble scales, high nibble mins (times d and dmin); 2-bit quants
// value = d * (scales[g] & 15) * q - dmin * (scales[g] >> 4).
struct BlockQ2_K {
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 groups of 16, 6-bit signed scales packed in 12 bytes (offset 32), 2 low bits in qs and the
// third in hmask (a set bit means no -4 offset).
struct BlockQ3_K {
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 groups of 32 with 6-bit scales and mins packed in 12 bytes; value = d * sc * q - dmin * m.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: Q4_K with a fifth bit per weight in qh.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 groups of 16 with int8 scales; 4 low bits in ql, 2 high in qh; value = d * sc * (q - 32).
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// IQ4_NL: 32 weights as 4-bit indices into kIq4nlValues (nibble order as Q4_0); value = d * table[q].
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// IQ4_XS: IQ4_NL's table over super-blocks of 8 groups of 32, each with a 6-bit scale (low 4 bits in
// scales_l, high 2 in scales_h) offset by 32; value = d * (scale - 32) * table[q].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// The non-linear 4-bit grid of IQ4_NL and IQ4_XS. Not `inline`: a per-ISA object must define no weak
// symbol another object shares (tests/isa/no_shared_weak_symbols.sh), so each file keeps its own copy.
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Q8_K: the activation format of the K-quants and IQ4_XS: 256 int8 values x = qs * d (float scale),
// with the sums of each 16 consecutive qs precomputed (bsums) for the mins and offsets.
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace lmrt
