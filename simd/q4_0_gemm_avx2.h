// Every Q4_0 matmul of kernels_avx2.cpp, over the mapped GGUF rows (no copy of the file), with 8 rows in the 8
// lanes of a register: the blocks are transposed so that 32-bit lane r holds 4 nibbles (q + 8) of row r. A token
// then costs, per block of 8 rows, 8 maddubs against its activation dwords broadcast, summed in 16 bits
// (8 * 2 * 15 * 128 fits), one madd, the -8 * sum(x) offset, one convert and one FMA with the rows' scales times
// the activation's, for all 8 rows at once and without horizontal sums. Built with AVX-VNNI (the avx2vnni table)
// the 8 maddubs, adds and madd are 8 vpdpbusd starting from the offset: the same integer. A batch transposes slabs of
// kSlabBlocks blocks once for all its token tiles (the GEMM); one token transposes each block in registers (decode).
// Both sum each (row, token) as one chain over the blocks in order, so a token gets the same bits alone and in any
// batch.
//
// Include only inside the anonymous namespace of kernels_avx2.cpp, after transpose_avx2.h and vnni256_x86.h.
#pragma once

namespace q4_0_gemm {

constexpr size_t kRows = 8;
constexpr size_t kSlabBlocks = 32;
constexpr size_t kToks = 4;

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
// the slab's first block), `x_row_bytes` apart. The first slab starts each row's sum at zero, later ones carry on
// from what the earlier slabs stored (not a separate sum added at the end): every (row, token) is then one
// chain acc = fma(dot_b, d_w * d_x, acc) over the blocks in order, whatever the slab, the token tile or the
// number of tokens, so a token's bits never depend on the batch it is in (issue 17 point 7).
template <int T>
void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
          int n_rows) {
  const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const BlockQ8Act* xt[T];
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    xt[t] = reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes);
    acc[t] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + t * ldy, rows);
  }
  for (size_t b = 0; b < nbs; ++b) {
    __m256i sum[T];
#if defined(LMRT_VNNI256)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) sum[t] = _mm256_set1_epi32(xt[t][b].minus8_sum);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_load_si256(&s.q[b][j]);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t)
        sum[t] = dpbusd256(sum[t], w, _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].qs)[j]));
    }
#else
    __m256i s16[T];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i w = _mm256_load_si256(&s.q[b][j]);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256i p =
            _mm256_maddubs_epi16(w, _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].qs)[j]));
        s16[t] = j == 0 ? p : _mm256_add_epi16(s16[t], p);
        keep_chain(s16[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      sum[t] =
          _mm256_add_epi32(_mm256_madd_epi16(s16[t], _mm256_set1_epi16(1)), _mm256_set1_epi32(xt[t][b].minus8_sum));
#endif
    const __m256 wd = s.d[b];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[t]), _mm256_mul_ps(wd, _mm256_set1_ps(xt[t][b].d)), acc[t]);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm256_maskstore_ps(y + t * ldy, rows, acc[t]);
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

// ---- One token (decode) ----
//
// The GEMM's arithmetic without the slab: each block of a group's 8 rows is transposed in registers and used at
// once, and each row sums exactly as tile<1> does (the same integer per block, the same FMA chain in block order),
// so a decode step and a batch give every token the same bits. S groups far apart are read at once (one stream per
// group; one sequential stream reads far below a core's bandwidth), each prefetching the group that follows it.

template <int S>
void decode_groups(const uint8_t* w, size_t w_row_bytes, const BlockQ8Act* x, size_t nb, const size_t (&r)[S],
                   size_t r1, float* y) {
  constexpr size_t kPfStep = kRows * sizeof(BlockQ4_0);  // the next group's bytes per block, at this group's pace
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const uint8_t* rows[S][kRows];
  const uint8_t* pf[S];
  __m256 acc[S];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) {
    slab_gemm::group_rows<kRows>(w, w_row_bytes, r[s], r1, rows[s]);
    pf[s] = w + (r[s] + kRows) * w_row_bytes;
    acc[s] = _mm256_setzero_ps();
  }
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ8Act& xb = x[b];
    const auto* xq = reinterpret_cast<const AliasedI32*>(xb.qs);
    const __m256 dx = _mm256_set1_ps(xb.d);
    const __m256i m8 = _mm256_set1_epi32(xb.minus8_sum);
    const size_t off = b * sizeof(BlockQ4_0);
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      prefetch_span<kPfStep - 1>(pf[s] + b * kPfStep);
      __m256i t[4];
      transpose_dwords8(rows[s], off + 2, t);
#if defined(LMRT_VNNI256)
      __m256i sum = m8;
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) sum = dpbusd256(sum, _mm256_and_si256(t[j], nib), _mm256_set1_epi32(xq[j]));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        sum = dpbusd256(sum, _mm256_and_si256(_mm256_srli_epi32(t[j], 4), nib), _mm256_set1_epi32(xq[4 + j]));
#else
      __m256i s16 = _mm256_maddubs_epi16(_mm256_and_si256(t[0], nib), _mm256_set1_epi32(xq[0]));
#pragma GCC unroll 4
      for (int j = 1; j < 4; ++j)
        s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(_mm256_and_si256(t[j], nib), _mm256_set1_epi32(xq[j])));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        s16 = _mm256_add_epi16(
            s16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi32(t[j], 4), nib), _mm256_set1_epi32(xq[4 + j])));
      const __m256i sum = _mm256_add_epi32(_mm256_madd_epi16(s16, _mm256_set1_epi16(1)), m8);
#endif
      alignas(16) uint16_t d[kRows];
#pragma GCC unroll 8
      for (size_t i = 0; i < kRows; ++i) __builtin_memcpy(&d[i], rows[s][i] + off, sizeof(uint16_t));
      const __m256 wd = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d)));
      acc[s] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(wd, dx), acc[s]);
    }
  }
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) {
    const int n_rows = static_cast<int>(r1 - r[s] < kRows ? r1 - r[s] : kRows);
    const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + r[s], m, acc[s]);
  }
}

constexpr int kDecodeStreams = 4;

inline void decode(const uint8_t* w, size_t w_row_bytes, const BlockQ8Act* x, size_t nb, size_t r0, size_t r1,
                   float* y) {
  tiling::group_streams<kDecodeStreams, kRows>(
      r0, r1, [&](const size_t(&r)[kDecodeStreams]) { decode_groups<kDecodeStreams>(w, w_row_bytes, x, nb, r, r1, y); },
      [&](const size_t(&r)[1]) { decode_groups<1>(w, w_row_bytes, x, nb, r, r1, y); });
}

// ---- Q4_0x16 batches (formats/q4_0x16.h) ----
//
// Line c of a unit holds raw dword c of the group's 16 rows, rows 0-7 in its first 32 bytes and 8-15 in the
// next, so repacking half h of a slab is the nibble split alone. The tiles are the GEMM's, so a batch gives
// every token the bits of the Q4_0x16 decode kernel (kernels_avx2.cpp), which sums each row as they do.

inline void repack_x16(const uint8_t* group, int h, size_t b0, size_t nbs, Slab& s) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  for (size_t b = 0; b < nbs; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ4_0x16UnitBytes;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 32 + 64 * c + 32 * h));
      _mm256_store_si256(&s.q[b][c], _mm256_and_si256(q, nib));
      _mm256_store_si256(&s.q[b][4 + c], _mm256_and_si256(_mm256_srli_epi32(q, 4), nib));
    }
    _mm256_store_ps(reinterpret_cast<float*>(&s.d[b]),
                    _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + 16 * h))));
  }
}

template <size_t... I>
constexpr auto tile_fns(std::index_sequence<I...>) {
  using TileFn = void (*)(const Slab&, size_t, const uint8_t*, size_t, bool, float*, size_t, int);
  return std::array<TileFn, sizeof...(I)>{&tile<static_cast<int>(I + 1)>...};
}
// kTiles[T - 1] runs T tokens.
constexpr auto kTiles = tile_fns(std::make_index_sequence<kToks>());

// The MatmulFn contract for Q4_0x16 weights and n_tok >= 2 (r0, r1 multiples of 16).
inline void matmul_x16(const void* w, size_t w_row_bytes, const void* xp, size_t x_row_bytes, size_t n, size_t n_tok,
                       size_t r0, size_t r1, float* y, size_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* x = static_cast<const uint8_t*>(xp);
  const size_t nb = n / kBlock;
  // Equal token tiles of at most kToks, as slab_gemm::run.
  const size_t n_tiles = (n_tok + kToks - 1) / kToks, tile_toks = (n_tok + n_tiles - 1) / n_tiles;
  alignas(64) Slab slab;
  for (size_t g = r0 / kQ4_0x16Rows; g < r1 / kQ4_0x16Rows; ++g) {
    const uint8_t* group = wb + g * kQ4_0x16Rows * w_row_bytes;
    for (size_t b0 = 0; b0 < nb; b0 += kSlabBlocks) {
      const size_t nbs = nb - b0 < kSlabBlocks ? nb - b0 : kSlabBlocks;
      // The next slab (of this group or the next) follows in memory: one span into L2.
      const uint8_t* next = group + (b0 + nbs) * kQ4_0x16UnitBytes;
      for (size_t o = 0; o < kSlabBlocks * kQ4_0x16UnitBytes; o += 64) __builtin_prefetch(next + o, 0, 2);
      for (int h = 0; h < 2; ++h) {
        repack_x16(group, h, b0, nbs, slab);
        const size_t r = g * kQ4_0x16Rows + kRows * h;
        for (size_t t = 0; t < n_tok; t += tile_toks) {
          const size_t tn = n_tok - t < tile_toks ? n_tok - t : tile_toks;
          kTiles[tn - 1](slab, nbs, x + t * x_row_bytes + b0 * sizeof(BlockQ8Act), x_row_bytes, b0 == 0,
                         y + t * ldy + r, ldy, static_cast<int>(kRows));
        }
      }
    }
  }
}

// The MatmulFn contract (simd/kernels.h) for every n_tok: one token through decode(), more through the slab GEMM.
// Both give each (row, token) the same bits.
inline void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                   size_t r0, size_t r1, float* y, size_t ldy) {
  if (n_tok == 1) {
    if (r0 < r1)
      decode(static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const BlockQ8Act*>(x), n / kBlock, r0, r1, y);
    return;
  }
  slab_gemm::run<Kernel>(w, w_row_bytes, x, x_row_bytes, n / kBlock, n_tok, r0, r1, y, ldy);
}

}  // namespace q4_0_gemm
