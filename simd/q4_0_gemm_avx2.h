// The Q4_0 prefill GEMM of kernels_avx2.cpp, over the mapped GGUF rows (no copy of the file): for 8 rows and a
// slab of kSlabBlocks blocks, the blocks are transposed once so that 32-bit lane r of a register holds 4
// nibbles (q + 8) of row r. A token then costs, per block of 8 rows, 8 maddubs against its activation dwords
// broadcast, summed in 16 bits (8 * 2 * 15 * 128 fits), one madd, the -8 * sum(x) offset, one convert and
// one FMA with the rows' scales times the activation's, for all 8 rows at once and without horizontal sums.
//
// Include only inside the anonymous namespace of kernels_avx2.cpp, after transpose_avx2.h.
#pragma once

namespace q4_0_gemm {

constexpr size_t kRows = 8;
constexpr size_t kSlabBlocks = 32;
constexpr size_t kToks = 4;
// Fewer tokens than this take QuantTiles: the transposition would cost more than it saves.
constexpr size_t kMinToks = 4;

// Register j pairs with activation dword j: raw dword j (< 4) of a block holds elements 4j..4j+3 in its low
// nibbles and 16+4j..16+4j+3 in its high nibbles.
struct Slab {
  __m256i q[kSlabBlocks][8];
  __m256 d[kSlabBlocks];
};

using AliasedI32 = int32_t __attribute__((may_alias));

void repack(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs, Slab& s) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  for (size_t b = 0; b < nbs; ++b) {
    const size_t off = (b0 + b) * sizeof(BlockQ4_0);
    __m256i t[4];
    transpose_dwords8(rows, off + 2, t);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      _mm256_store_si256(&s.q[b][j], _mm256_and_si256(t[j], nib));
      _mm256_store_si256(&s.q[b][4 + j], _mm256_and_si256(_mm256_srli_epi32(t[j], 4), nib));
    }
    alignas(16) uint16_t d[kRows];
#pragma GCC unroll 8
    for (size_t r = 0; r < kRows; ++r) __builtin_memcpy(&d[r], rows[r] + off, sizeof(uint16_t));
    _mm256_store_ps(reinterpret_cast<float*>(&s.d[b]),
                    _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d))));
  }
}

// Y[t * ldy + r'] for the slab's first n_rows rows and T tokens whose activation rows start at x (advanced to
// the slab's first block), `x_row_bytes` apart. The first slab stores, later ones add.
template <int T>
void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
          int n_rows) {
  const BlockQ8Act* xt[T];
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    xt[t] = reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes);
    acc[t] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (size_t b = 0; b < nbs; ++b) {
    __m256i s16[T];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_load_si256(&s.q[b][j]);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256i p =
            _mm256_maddubs_epi16(w, _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].qs)[j]));
        s16[t] = j == 0 ? p : _mm256_add_epi16(s16[t], p);
      }
    }
    const __m256 wd = s.d[b];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(s16[t], ones), _mm256_set1_epi32(xt[t][b].minus8_sum));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(wd, _mm256_set1_ps(xt[t][b].d)), acc[t]);
    }
  }
  slab_gemm::store_rows<T>(acc, first, y, ldy, n_rows);
}

// slab_gemm.h's kernel.
struct Kernel {
  static constexpr size_t kRows = q4_0_gemm::kRows, kSlabBlocks = q4_0_gemm::kSlabBlocks, kToks = q4_0_gemm::kToks;
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0), kActBytes = sizeof(BlockQ8Act);
  using Slab = q4_0_gemm::Slab;
  static void repack(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs, Slab& s) {
    q4_0_gemm::repack(rows, b0, nbs, s);
  }
  template <int T>
  static void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
                   int n_rows) {
    q4_0_gemm::tile<T>(s, nbs, x, x_row_bytes, first, y, ldy, n_rows);
  }
};

// The MatmulFn contract (simd/kernels.h) for n_tok >= 2.
inline void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                   size_t r0, size_t r1, float* y, size_t ldy) {
  slab_gemm::run<Kernel>(w, w_row_bytes, x, x_row_bytes, n / kBlock, n_tok, r0, r1, y, ldy);
}

}  // namespace q4_0_gemm
