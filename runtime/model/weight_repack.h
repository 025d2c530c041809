// Repacking at load: the Q4_0, Q4_K and Q6_K matrices a model multiplies with are rewritten into the
// interleaved layouts (formats/q4_0x16.h, formats/k_quants_x8.h) that the active kernel table decodes from one
// sequential stream, when that table has kernels of its own for them and they are the faster ones.
#pragma once

#include <cstdint>
#include <span>

#include "runtime/model/gguf_file.h"
#include "runtime/util/huge_page_buffer.h"
#include "runtime/util/status.h"

namespace lmrt {

struct WeightView;

struct RepackReport {
  uint32_t tensors = 0;  // matrices rewritten
  uint64_t bytes = 0;
  double seconds = 0.0;
};

// Whether repacking is wanted: false when LMRT_REPACK=0 (A/B runs), else whether the best kernel table
// (simd::best_isa) repacks some type (its own Q4_0x16 on AVX-512 and AVX2, Q4_Kx8 / Q6_Kx8 kernels).
bool repack_weights_by_default();

// Rewrites every Q4_K and Q6_K tensor (and Q4_0 on AVX-512 and AVX2) of g that is 2-D with a multiple of
// the group's rows (8; 16 for Q4_0x16), that some view in `matmul_weights` points into, every such view on whole
// groups, and that no view in `row_lookups` (token embeddings, read a row at a time) touches; the views of a rewritten
// tensor get the interleaved type and point at its new bytes. A mapped file's tensors are written into `packed`
// (allocated here) and their mapped pages released; a file read into memory is rewritten in place; the caller's
// bytes (MappedFile::view) are left alone. The file header keeps its types.
void repack_weights(GgufFile& g, std::span<WeightView* const> matmul_weights,
                    std::span<const WeightView* const> row_lookups, HugePageBuffer* packed, RepackReport* report);

}  // namespace lmrt
