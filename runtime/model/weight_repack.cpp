#include "runtime/model/weight_repack.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "formats/k_quants_x8.h"
#include "formats/q4_0x16.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/thread_pool.h"
#include "simd/kernels.h"

namespace lmrt {

namespace {

bool has_own_kernel(const simd::Kernels& k, TensorType packed) {
  return simd::matmul_for(k, packed).fn != simd::matmul_for(*simd::scalar_kernels(), packed).fn;
}

bool inside(const uint8_t* p, const GgufTensorInfo& t) { return p >= t.data && p < t.data + t.n_bytes; }

// How a standard type is repacked: into which interleaved type, in groups of how many rows, by which rewrite.
struct Repacking {
  TensorType packed;
  uint32_t group_rows;
  uint32_t row_multiple;  // elements a row length must be a multiple of
};

bool repacking_of(TensorType standard, Repacking* out) {
  if (standard == TensorType::q4_0) {
    *out = {TensorType::q4_0x16, kQ4_0x16Rows, 32};
    return true;
  }
  TensorType x8;
  if (!kx8_type_of(standard, &x8)) return false;
  *out = {x8, kKx8Rows, static_cast<uint32_t>(kQK)};
  return true;
}

// Q4_K and Q6_K are repacked wherever the table has an x8 kernel of its own (repacking_for checks): Q4_Kx8 and
// Q6_Kx8 on the x86 tables, whose decode and small batches run faster than the standard-layout tiles (BENCHMARKS.md,
// "Q6_K repacked at load on AVX-512", "AVX2: Q6_K repacked at load" and, on Zen 4, "Zen 4: Q6_Kx8 prefetched into
// L2"). LMRT_REPACK=all adds the rest of the types.
// Q4_0 is repacked where the table's Q4_0x16 decode is the faster one (AVX-512 and AVX2: BENCHMARKS.md, "Q4_0 on
// AVX-512: repacked at load" and "AVX2: Q4_0 and Q4_K repacked at load"; the standard-layout decode transposes
// every block in registers, which costs more than reading it).
bool wanted(const simd::Kernels& k, TensorType standard) {
  if (standard == TensorType::q4_k || standard == TensorType::q6_k) return true;
  if (standard == TensorType::q4_0)
    return k.isa == simd::Isa::avx512 || k.isa == simd::Isa::avx2 || k.isa == simd::Isa::avx2vnni;
  const char* v = std::getenv("LMRT_REPACK");
  return v != nullptr && std::strcmp(v, "all") == 0;
}

// The repacking of a standard type that this table runs: wanted, and served by a kernel of its own.
bool repacking_for(const simd::Kernels& k, TensorType standard, Repacking* out) {
  return repacking_of(standard, out) && wanted(k, standard) && has_own_kernel(k, out->packed);
}

void interleave(TensorType standard, const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst) {
  if (standard == TensorType::q4_0)
    interleave_q4_0(src, n_rows, n_cols, dst);
  else
    interleave_kx8(standard, src, n_rows, n_cols, dst);
}

void interleave_in_place(TensorType standard, uint8_t* data, uint64_t n_rows, uint64_t n_cols) {
  if (standard == TensorType::q4_0)
    interleave_q4_0_in_place(data, n_rows, n_cols);
  else
    interleave_kx8_in_place(standard, data, n_rows, n_cols);
}

// A tensor to rewrite and the views that point into it.
struct Planned {
  const GgufTensorInfo* tensor;
  TensorType packed;
  size_t first_view, n_views;
  size_t offset;  // in the huge-page buffer (a mapped file)
};

constexpr size_t kTensorAlign = 64;
// Threads that rewrite tensors at once. Most of a repack is the kernel clearing the fresh huge pages as they
// are first written, and that work runs on the writing thread, so it divides among them
// (BENCHMARKS.md, "Repacking on several threads").
constexpr unsigned kMaxRepackThreads = 8;

}  // namespace

bool repack_weights_by_default() {
  if (const char* v = std::getenv("LMRT_REPACK"); v != nullptr && std::strcmp(v, "0") == 0) return false;
  const simd::Kernels& k = simd::kernels_for(simd::best_isa());
  for (TensorType t : {TensorType::q4_0, TensorType::q4_k, TensorType::q6_k}) {
    Repacking rp;
    if (repacking_for(k, t, &rp)) return true;
  }
  return false;
}

void repack_weights(GgufFile& g, std::span<WeightView* const> matmul_weights,
                    std::span<const WeightView* const> row_lookups, HugePageBuffer* packed, RepackReport* report) {
  const auto start = std::chrono::steady_clock::now();
  const simd::Kernels& k = simd::kernels_for(simd::best_isa());
  RepackReport r;
  std::vector<Planned> plan;
  std::vector<WeightView*> views;
  size_t packed_bytes = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    Repacking rp;
    if (!repacking_for(k, t.type, &rp)) continue;
    if (t.n_dims != 2 || t.n_rows() % rp.group_rows != 0 || t.row_length() % rp.row_multiple != 0) continue;
    const uint64_t row_bytes = t.n_bytes / t.n_rows(), group_bytes = rp.group_rows * row_bytes;
    const size_t first = views.size();
    bool ok = true;
    for (WeightView* v : matmul_weights) {
      if (v->data == nullptr || !inside(v->data, t)) continue;
      // A view (a part of a fused tensor) must start and end on a group of rows.
      ok &= v->type == t.type && (v->data - t.data) % group_bytes == 0 && v->n_rows % rp.group_rows == 0;
      views.push_back(v);
    }
    for (const WeightView* v : row_lookups) ok &= v->data == nullptr || !inside(v->data, t);
    if (!ok || views.size() == first) {
      views.resize(first);
      continue;
    }
    plan.push_back({&t, rp.packed, first, views.size() - first, packed_bytes});
    packed_bytes += (t.n_bytes + kTensorAlign - 1) / kTensorAlign * kTensorAlign;
  }
  const bool mapped = g.file().is_mapped();
  // A mapped file is never written: its matrices are copied, interleaved, into one buffer on huge pages and
  // their mapped pages given back, so the resident set stays the file's size. A file read into memory is
  // rewritten where it is. Without memory for the buffer nothing is repacked (the kernels read the file's
  // layout).
  if (mapped && !plan.empty() && !packed->allocate(packed_bytes)) plan.clear();
  std::vector<uint8_t*> dst(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const GgufTensorInfo& t = *plan[i].tensor;
    dst[i] = mapped ? packed->data() + plan[i].offset : g.owned_tensor_data(t);
    if (dst[i] == nullptr) {  // the caller's bytes (MappedFile::view): left as they are
      plan.resize(i);
      break;
    }
  }
  std::vector<uint8_t> done(plan.size(), 0);
  auto rewrite = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const GgufTensorInfo& t = *plan[i].tensor;
      try {
        if (mapped) {
          interleave(t.type, t.data, t.n_rows(), t.row_length(), dst[i]);
          g.release_tensor_pages(t);
        } else {
          interleave_in_place(t.type, dst[i], t.n_rows(), t.row_length());
        }
        done[i] = 1;
      } catch (...) {  // std::bad_alloc of the in-place rewrite's one-group copy, made before the tensor is touched
      }
    }
  };
  // One tensor at a time to each thread that asks; a pool that cannot start (std::system_error) leaves the
  // caller to rewrite them all.
  std::optional<ThreadPool> pool;
  try {
    pool.emplace(std::min<size_t>(
        {std::max(1u, std::thread::hardware_concurrency()), kMaxRepackThreads, std::max<size_t>(plan.size(), 1)}));
  } catch (...) {
  }
  if (pool) {
    pool->parallel_for(plan.size(), 1, rewrite);
  } else {
    rewrite(0, plan.size());
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!done[i]) continue;  // left in the file's layout, which the kernels also read
    const Planned& p = plan[i];
    const GgufTensorInfo& t = *p.tensor;
    for (size_t v = p.first_view; v < p.first_view + p.n_views; ++v) {
      views[v]->data = dst[i] + (views[v]->data - t.data);
      views[v]->type = p.packed;
    }
    ++r.tensors;
    r.bytes += t.n_bytes;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report != nullptr) *report = r;
}

}  // namespace lmrt
