#include "runtime/model/weight_repack.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "formats/k_quants_x8.h"
#include "runtime/model/llama_model.h"
#include "simd/kernels.h"

namespace lmrt {

namespace {

bool has_own_kernel(const simd::Kernels& k, TensorType x8) {
  return simd::matmul_for(k, x8).fn != simd::matmul_for(*simd::scalar_kernels(), x8).fn;
}

bool inside(const uint8_t* p, const GgufTensorInfo& t) { return p >= t.data && p < t.data + t.n_bytes; }

// Q6_K is repacked only with LMRT_REPACK=all: its x8 kernel is slower than the standard AVX-512 Q6_K tile
// so far (BENCHMARKS.md, "Q4_K and Q6_K repacked at load"), Q4_Kx8 is not.
bool wanted(TensorType standard) {
  if (standard == TensorType::q4_k) return true;
  const char* v = std::getenv("LMRT_REPACK");
  return v != nullptr && std::strcmp(v, "all") == 0;
}

}  // namespace

bool repack_k_quants_by_default() {
  if (const char* v = std::getenv("LMRT_REPACK"); v != nullptr && std::strcmp(v, "0") == 0) return false;
  const simd::Kernels& k = simd::kernels_for(simd::best_isa());
  return has_own_kernel(k, TensorType::q4_kx8) || has_own_kernel(k, TensorType::q6_kx8);
}

void repack_k_quant_weights(GgufFile& g, std::span<WeightView* const> matmul_weights,
                            std::span<const WeightView* const> row_lookups, RepackReport* report) {
  const auto start = std::chrono::steady_clock::now();
  const simd::Kernels& k = simd::kernels_for(simd::best_isa());
  RepackReport r;
  std::vector<WeightView*> views;
  for (const GgufTensorInfo& t : g.tensors()) {
    TensorType x8;
    if (!kx8_type_of(t.type, &x8) || !wanted(t.type) || !has_own_kernel(k, x8)) continue;
    if (t.n_dims != 2 || t.n_rows() % kKx8Rows != 0 || t.row_length() % kQK != 0) continue;
    const uint64_t row_bytes = t.n_bytes / t.n_rows(), group_bytes = kKx8Rows * row_bytes;
    views.clear();
    bool ok = true;
    for (WeightView* v : matmul_weights) {
      if (v->data == nullptr || !inside(v->data, t)) continue;
      // A view (a part of a fused tensor) must start and end on a group of 8 rows.
      ok &= v->type == t.type && (v->data - t.data) % group_bytes == 0 && v->n_rows % kKx8Rows == 0;
      views.push_back(v);
    }
    for (const WeightView* v : row_lookups) ok &= v->data == nullptr || !inside(v->data, t);
    if (!ok || views.empty()) continue;
    uint8_t* data = g.mutable_tensor_data(t);
    if (data == nullptr) break;
    interleave_kx8_in_place(t.type, data, t.n_rows(), t.row_length());
    for (WeightView* v : views) v->type = x8;
    ++r.tensors;
    r.bytes += t.n_bytes;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report != nullptr) *report = r;
}

}  // namespace lmrt
