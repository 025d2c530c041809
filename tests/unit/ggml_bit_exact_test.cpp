// lmrt's scalar conversions against ggml's own, bit for bit: llama.cpp's prebuilt libggml-base.so (the one
// the oracle in ../shared/peers/llamacpp/oracle runs, installed by its build.sh) is loaded with dlopen, and
// for every tensor of every file in ../shared/models/quant, every row's dequantize_row must equal ggml's
// to_float exactly; quantize_q8_k must equal quantize_row_q8_K_ref and the Q4_0 / Q8_0 quantizers ggml's
// from_float_ref. Skipped when the library is not installed ($LMRT_GGML_BASE_LIB names it elsewhere).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "formats/k_quants.h"
#include "formats/tensor_type.h"
#include "runtime/model/gguf_file.h"
#include "test_support.h"

namespace lmrt {
namespace {

// ggml.h's struct ggml_type_traits (llama.cpp 0.5.0), declared here so the test needs no ggml header.
struct GgmlTypeTraits {
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  void (*to_float)(const void* x, float* y, int64_t k);
  void (*from_float_ref)(const float* x, void* y, int64_t k);
};

struct Ggml {
  void* lib = nullptr;
  const GgmlTypeTraits* (*traits)(int type) = nullptr;
  void (*quantize_q8_k)(const float* x, void* y, int64_t k) = nullptr;
  ~Ggml() {
    if (lib != nullptr) dlclose(lib);
  }
};

std::string ggml_base_path() {
  if (const char* p = std::getenv("LMRT_GGML_BASE_LIB")) return p;
  std::string cache;
  if (const char* c = std::getenv("LMRT_PEER_CACHE")) {
    cache = c;
  } else if (const char* home = std::getenv("HOME")) {
    cache = std::string(home) + "/.cache/lmrt-peers";
  }
  return cache + "/llamacpp/nlc/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
}

bool load_ggml(Ggml* g, std::string* why) {
#if !defined(LMRT_ARCH_X86)
  *why = "the prebuilt library is x86-64";
  return false;
#endif
  const std::string path = ggml_base_path();
  g->lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (g->lib == nullptr) {
    *why = "no libggml-base.so at " + path + " (run ../shared/peers/llamacpp/oracle/build.sh)";
    return false;
  }
  g->traits = reinterpret_cast<const GgmlTypeTraits* (*)(int)>(dlsym(g->lib, "ggml_get_type_traits"));
  g->quantize_q8_k = reinterpret_cast<void (*)(const float*, void*, int64_t)>(dlsym(g->lib, "quantize_row_q8_K_ref"));
  if (g->traits == nullptr || g->quantize_q8_k == nullptr) {
    *why = path + " lacks ggml_get_type_traits or quantize_row_q8_K_ref";
    return false;
  }
  return true;
}

TEST(GgmlBitExact, DequantizeAndQuantizeEqualGgmls) {
  Ggml ggml;
  std::string why;
  if (!load_ggml(&ggml, &why)) GTEST_SKIP() << why;
  const char* const files[] = {
      "base-f16",    "base-Q8_0",   "base-Q6_K",   "base-Q5_K_S", "base-Q4_K_M", "base-Q3_K_M",
      "base-Q3_K_L", "base-Q2_K",   "base-Q5_1",   "base-Q5_0",   "base-Q4_1",   "base-Q4_0",
      "base-IQ4_NL", "base-IQ4_XS", "w320-Q5_K_M", "w320-Q4_K_M", "w320-IQ4_XS", "w320-Q6_K",
  };
  std::set<TensorType> seen;
  for (const char* name : files) {
    std::unique_ptr<GgufFile> g;
    const Status s = GgufFile::open(test::model_path(std::string("quant/") + name + ".gguf"), true, &g);
    ASSERT_TRUE(s.ok()) << s.message();
    for (const GgufTensorInfo& t : g->tensors()) {
      const TensorTypeTraits& tr = tensor_type_traits(t.type);
      SCOPED_TRACE(std::string(name) + " " + std::string(t.name) + " " + tr.name);
      const GgmlTypeTraits* gt = ggml.traits(static_cast<int>(tr.ggml_id));
      ASSERT_NE(gt, nullptr);
      ASSERT_EQ(static_cast<uint64_t>(gt->blck_size), tr.block_size);
      ASSERT_EQ(gt->type_size, tr.block_bytes);
      const size_t n = t.ne[0], rows = t.n_elements / n, row_bytes = tensor_row_bytes(t.type, n);
      std::vector<float> ours(n), theirs(n);
      for (size_t r = 0; r < rows; ++r) {
        const uint8_t* row = t.data + r * row_bytes;
        tr.dequantize_row(row, ours.data(), n);
        if (gt->to_float != nullptr) {
          gt->to_float(row, theirs.data(), static_cast<int64_t>(n));
        } else {
          ASSERT_EQ(t.type, TensorType::f32);  // ggml converts F32 by copying
          std::memcpy(theirs.data(), row, n * sizeof(float));
        }
        ASSERT_EQ(std::memcmp(ours.data(), theirs.data(), n * sizeof(float)), 0) << "row " << r;
        // The activation quantizer on real rows, and the quantizers lmrt has, against ggml's.
        if (n % kQK == 0) {
          std::vector<BlockQ8_K> a(n / kQK), b(n / kQK);
          quantize_row_q8_k(ours.data(), a.data(), n);
          ggml.quantize_q8_k(ours.data(), b.data(), static_cast<int64_t>(n));
          ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_K)), 0) << "Q8_K of row " << r;
        }
        for (TensorType q : {TensorType::q4_0, TensorType::q8_0}) {
          const TensorTypeTraits& qt = tensor_type_traits(q);
          ASSERT_NE(qt.quantize_row, nullptr);
          std::vector<uint8_t> a(tensor_row_bytes(q, n)), b(a.size());
          qt.quantize_row(ours.data(), a.data(), n);
          ggml.traits(static_cast<int>(qt.ggml_id))->from_float_ref(ours.data(), b.data(), static_cast<int64_t>(n));
          ASSERT_EQ(a, b) << qt.name << " of row " << r;
        }
      }
      seen.insert(t.type);
    }
  }
  EXPECT_EQ(seen.size(), 14u);  // every type of the table but BF16 and lmrt's Q4_0x16
}

}  // namespace
}  // namespace lmrt
