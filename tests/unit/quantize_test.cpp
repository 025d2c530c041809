// `lmrt quantize`: the quantizers (formats/quantize.h), the per-tensor type rules
// (tools/quantize_rules.h) and quantize_model_file, checked against llama.cpp's own
// quantizations of the same F16 models (shared/models/quant: base-TYPE.gguf and w320-TYPE.gguf, made by
// llama_model_quantize without an importance matrix; see the README there).
#include "formats/quantize.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "formats/blocks.h"
#include "formats/dequantize.h"
#include "runtime/model/gguf_file.h"
#include "runtime/util/fp16.h"
#include "test_support.h"
#include "tools/gguf_writer.h"
#include "tools/quantize_file.h"
#include "tools/quantize_rules.h"

namespace lmrt {
namespace {

// The tensor table of any GGUF file, whatever its types: GgufFile refuses the types lmrt cannot run yet,
// and llama.cpp's files hold all of them.
struct RefTensor {
  std::string name;
  uint32_t n_dims = 0;
  uint64_t ne[4] = {1, 1, 1, 1};
  uint32_t type = 0;
  const uint8_t* data = nullptr;
};

struct RefFile {
  std::string bytes;
  std::map<std::string, uint64_t> u32_keys;  // the uint32 metadata values
  std::vector<RefTensor> tensors;
  const RefTensor* find(const std::string& name) const {
    for (const RefTensor& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

class Reader {
 public:
  explicit Reader(const std::string& b) : b_(b) {}
  template <typename T>
  T get() {
    T v{};
    if (pos_ + sizeof(T) > b_.size()) throw std::runtime_error("truncated");
    std::memcpy(&v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (pos_ + n > b_.size()) throw std::runtime_error("truncated");
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  void skip_value(uint32_t type) {
    static const size_t kSize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      str();
    } else if (type == 9) {
      const uint32_t elem = get<uint32_t>();
      const uint64_t n = get<uint64_t>();
      for (uint64_t i = 0; i < n; ++i) skip_value(elem);
    } else {
      pos_ += kSize[type];
    }
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_ = 0;
};

std::unique_ptr<RefFile> read_ref(const std::string& path) {
  auto f = std::make_unique<RefFile>();
  f->bytes = test::read_file(path);
  Reader r(f->bytes);
  if (r.get<uint32_t>() != 0x46554747u) throw std::runtime_error(path + ": not GGUF");
  r.get<uint32_t>();
  const uint64_t n_tensors = r.get<uint64_t>(), n_kv = r.get<uint64_t>();
  for (uint64_t i = 0; i < n_kv; ++i) {
    const std::string key = r.str();
    const uint32_t type = r.get<uint32_t>();
    if (type == 4)
      f->u32_keys[key] = r.get<uint32_t>();
    else
      r.skip_value(type);
  }
  std::vector<uint64_t> offsets;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    RefTensor t;
    t.name = r.str();
    t.n_dims = r.get<uint32_t>();
    for (uint32_t d = 0; d < t.n_dims; ++d) t.ne[d] = r.get<uint64_t>();
    t.type = r.get<uint32_t>();
    offsets.push_back(r.get<uint64_t>());
    f->tensors.push_back(t);
  }
  const uint64_t align = f->u32_keys.count("general.alignment") ? f->u32_keys["general.alignment"] : 32;
  const uint64_t data = (r.pos() + align - 1) / align * align;
  for (size_t i = 0; i < f->tensors.size(); ++i)
    f->tensors[i].data = reinterpret_cast<const uint8_t*>(f->bytes.data()) + data + offsets[i];
  return f;
}

std::string quant_path(const std::string& name) { return test::shared_dir() + "/models/quant/" + name + ".gguf"; }

std::unique_ptr<GgufFile> open_gguf(const std::string& path) {
  std::unique_ptr<GgufFile> g;
  const Status s = GgufFile::open(path, true, &g);
  EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  return g;
}

// Rows of a GgufFile tensor as floats.
std::vector<float> tensor_floats(const GgufTensorInfo& t) {
  std::vector<float> x(t.n_elements);
  const uint64_t src_row = t.n_bytes / t.n_rows();
  for (uint64_t r = 0; r < t.n_rows(); ++r)
    dequantize_row(t.type, t.data + r * src_row, x.data() + r * t.ne[0], t.ne[0]);
  return x;
}

const char* const kFileTypes[] = {"Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q6_K", "Q3_K_M", "Q3_K_L", "Q2_K",
                                  "Q4_0",   "Q4_1",   "Q5_0",   "Q5_1",   "Q8_0", "IQ4_NL", "IQ4_XS"};
const char* const kW320FileTypes[] = {"Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"};

// Every (source, file type) pair llama.cpp quantized.
std::vector<std::pair<std::string, std::string>> reference_files() {
  std::vector<std::pair<std::string, std::string>> v;
  for (const char* ft : kFileTypes) v.emplace_back("base", ft);
  for (const char* ft : kW320FileTypes) v.emplace_back("w320", ft);
  return v;
}

// Quantizing the F16 models' tensors gives llama.cpp's bytes, block for block, for every weight type
// in every reference file (each distinct tensor and type once).
TEST(Quantize, BlocksAreByteIdenticalToLlamaCpp) {
  struct Count {
    uint64_t blocks = 0, identical = 0;
  };
  std::map<uint32_t, Count> per_type;
  std::map<std::string, bool> done;  // "source/tensor/type"
  for (const auto& [base, ft] : reference_files()) {
    const std::unique_ptr<GgufFile> src = open_gguf(quant_path(base + "-f16"));
    ASSERT_TRUE(src);
    const std::unique_ptr<RefFile> ref = read_ref(quant_path(base + "-" + ft));
    for (const RefTensor& rt : ref->tensors) {
      const GgufTensorInfo* st = src->find_tensor(rt.name);
      ASSERT_NE(st, nullptr) << rt.name;
      if (rt.type == static_cast<uint32_t>(st->type)) continue;  // copied, not quantized
      const auto type = static_cast<TensorType>(rt.type);
      const QuantizeRowFn quantize = quantize_fn_for(type);
      ASSERT_NE(quantize, nullptr) << base << "-" << ft << " " << rt.name << ": " << ggml_type_name(rt.type);
      if (!done.emplace(base + "/" + rt.name + "/" + std::to_string(rt.type), true).second) continue;
      // Every 4th row keeps the test fast; each type still covers tens of thousands of blocks.
      const TensorTypeTraits tr = tensor_type_traits(type);
      const std::vector<float> x = tensor_floats(*st);
      const uint64_t row_blocks = st->ne[0] / tr.block_size, row_bytes = row_blocks * tr.block_bytes;
      std::vector<uint8_t> out(row_bytes);
      Count& c = per_type[rt.type];
      for (uint64_t r = 0; r < st->n_rows(); r += 4) {
        quantize(x.data() + r * st->ne[0], out.data(), st->ne[0]);
        for (uint64_t b = 0; b < row_blocks; ++b) {
          ++c.blocks;
          c.identical += std::memcmp(out.data() + b * tr.block_bytes, rt.data + r * row_bytes + b * tr.block_bytes,
                                     tr.block_bytes) == 0;
        }
      }
    }
  }
  // All twelve block types appear in the reference files.
  for (TensorType t : {TensorType::q4_0, TensorType::q4_1, TensorType::q5_0, TensorType::q5_1, TensorType::q8_0,
                       TensorType::q2_k, TensorType::q3_k, TensorType::q4_k, TensorType::q5_k, TensorType::q6_k,
                       TensorType::iq4_nl, TensorType::iq4_xs}) {
    const Count& c = per_type[static_cast<uint32_t>(t)];
    EXPECT_GT(c.blocks, 1000u) << tensor_type_traits(t).name;
    EXPECT_EQ(c.identical, c.blocks) << tensor_type_traits(t).name << ": " << c.blocks - c.identical << " of "
                                     << c.blocks << " blocks differ from llama.cpp's";
  }
}

// Dequantizes one block from the layouts documented in formats/blocks.h (test-only: formats/dequantize
// reads F32/F16/BF16/Q4_0/Q8_0 so far), independently of the quantizers' packing code.
void dequantize_block(TensorType type, const uint8_t* p, float* y) {
  const auto h = [](uint16_t v) { return fp16_to_f32(v); };
  const auto nibble = [](const uint8_t* qs, int j) { return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4; };
  switch (type) {
    case TensorType::q4_0:
    case TensorType::q8_0:
      dequantize_row(type, p, y, 32);
      return;
    case TensorType::q4_1: {
      BlockQ4_1 b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 32; ++j) y[j] = nibble(b.qs, j) * h(b.d) + h(b.m);
      return;
    }
    case TensorType::q5_0:
    case TensorType::q5_1: {
      const bool has_min = type == TensorType::q5_1;
      BlockQ5_1 b{};
      std::memcpy(has_min ? static_cast<void*>(&b) : static_cast<void*>(&b.m), p, has_min ? 24 : 22);
      if (!has_min) b.d = b.m;  // Q5_0 has no m: its d landed in m's place
      uint32_t qh;
      std::memcpy(&qh, b.qh, 4);
      for (int j = 0; j < 32; ++j) {
        const int q = nibble(b.qs, j) | ((qh >> j) & 1) << 4;
        y[j] = has_min ? q * h(b.d) + h(b.m) : (q - 16) * h(b.d);
      }
      return;
    }
    case TensorType::iq4_nl: {
      BlockIQ4_NL b;
      std::memcpy(&b, p, sizeof b);
      for (int j = 0; j < 32; ++j) y[j] = h(b.d) * kIq4nlValues[nibble(b.qs, j)];
      return;
    }
    case TensorType::q2_k:
    case TensorType::q3_k: {
      // Codes e of 256: 2 low bits at byte (e / 128) * 32 + e % 32, shift 2 * ((e % 128) / 32).
      const bool q3 = type == TensorType::q3_k;
      BlockQ2_K b2;
      BlockQ3_K b3;
      std::memcpy(q3 ? static_cast<void*>(&b3) : static_cast<void*>(&b2), p, q3 ? sizeof b3 : sizeof b2);
      for (int e = 0; e < 256; ++e) {
        const int byte = (e / 128) * 32 + e % 32, shift = 2 * ((e % 128) / 32), g = e / 16;
        const int low = ((q3 ? b3.qs : b2.qs)[byte] >> shift) & 3;
        if (q3) {
          const int sc = ((g < 8 ? b3.scales[g] & 15 : b3.scales[g - 8] >> 4) |
                          ((b3.scales[8 + g % 4] >> (2 * (g / 4))) & 3) << 4) -
                         32;
          const bool high = (b3.hmask[e % 32] >> (e / 32)) & 1;
          y[e] = h(b3.d) * sc * (low - (high ? 0 : 4));
        } else {
          y[e] = h(b2.d) * (b2.scales[g] & 15) * low - h(b2.dmin) * (b2.scales[g] >> 4);
        }
      }
      return;
    }
    case TensorType::q4_k:
    case TensorType::q5_k: {
      const bool q5 = type == TensorType::q5_k;
      BlockQ5_K b{};
      if (q5) {
        std::memcpy(&b, p, sizeof b);
      } else {  // Q4_K: the same fields without qh
        std::memcpy(&b, p, 16);
        std::memcpy(b.qs, p + 16, 128);
      }
      for (int e = 0; e < 256; ++e) {
        const int g = e / 32, chunk = e / 64, within = e % 64;
        const int sc = g < 4 ? b.scales[g] & 63 : (b.scales[g + 4] & 15) | (b.scales[g - 4] >> 6) << 4;
        const int m = g < 4 ? b.scales[g + 4] & 63 : (b.scales[g + 4] >> 4) | (b.scales[g] >> 6) << 4;
        int q = within < 32 ? b.qs[chunk * 32 + within] & 15 : b.qs[chunk * 32 + within - 32] >> 4;
        if (q5) q |= ((b.qh[within % 32] >> (2 * chunk + within / 32)) & 1) << 4;
        y[e] = h(b.d) * sc * q - h(b.dmin) * m;
      }
      return;
    }
    case TensorType::q6_k: {
      BlockQ6_K b;
      std::memcpy(&b, p, sizeof b);
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, l = e % 32, quarter = (e % 128) / 32;
        const uint8_t lo_byte = b.ql[half * 64 + l + (quarter % 2) * 32];
        const int low = quarter < 2 ? lo_byte & 15 : lo_byte >> 4;
        const int high = (b.qh[half * 32 + l] >> (2 * quarter)) & 3;
        y[e] = h(b.d) * b.scales[e / 16] * ((low | high << 4) - 32);
      }
      return;
    }
    case TensorType::iq4_xs: {
      BlockIQ4_XS b;
      std::memcpy(&b, p, sizeof b);
      for (int g = 0; g < 8; ++g) {
        const int ls = ((b.scales_l[g / 2] >> (4 * (g % 2))) & 15) | ((b.scales_h >> (2 * g)) & 3) << 4;
        for (int j = 0; j < 32; ++j) y[32 * g + j] = h(b.d) * (ls - 32) * kIq4nlValues[nibble(b.qs + 16 * g, j)];
      }
      return;
    }
    default:
      FAIL() << "no test dequantizer for " << tensor_type_traits(type).name;
  }
}

std::vector<float> round_trip(TensorType type, const std::vector<float>& x) {
  const TensorTypeTraits tr = tensor_type_traits(type);
  std::vector<uint8_t> q(x.size() / tr.block_size * tr.block_bytes);
  quantize_fn_for(type)(x.data(), q.data(), x.size());
  std::vector<float> y(x.size());
  for (size_t b = 0; b < x.size() / tr.block_size; ++b)
    dequantize_block(type, q.data() + b * tr.block_bytes, y.data() + b * tr.block_size);
  return y;
}

// quantize -> dequantize of Gaussian weights stays within each type's error: the RMS error relative to
// the RMS of the weights is about what uniform rounding with that many bits over each block's range
// gives (step / sqrt(12), the range ~5 sigma for blocks of 16-32 Gaussians): 2 bits ~0.3, 3 bits ~0.15,
// 4 bits ~0.08, 5 bits ~0.04, 6 bits ~0.02, 8 bits ~0.005; the bounds allow ~1.5x that. All-zero rows
// come back as exact zeros, and a lone outlier in a block is kept to within its type's step.
TEST(Quantize, RoundTripErrorWithinEachTypesBound) {
  const std::pair<TensorType, double> kBounds[] = {
      {TensorType::q2_k, 0.45}, {TensorType::q3_k, 0.22},   {TensorType::q4_0, 0.12},   {TensorType::q4_1, 0.12},
      {TensorType::q4_k, 0.12}, {TensorType::iq4_nl, 0.12}, {TensorType::iq4_xs, 0.12}, {TensorType::q5_0, 0.06},
      {TensorType::q5_1, 0.06}, {TensorType::q5_k, 0.06},   {TensorType::q6_k, 0.03},   {TensorType::q8_0, 0.008}};
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(256 * 64);
  for (float& v : x) v = normal(rng);
  for (const auto& [type, bound] : kBounds) {
    SCOPED_TRACE(tensor_type_traits(type).name);
    const std::vector<float> y = round_trip(type, x);
    double err = 0, ref = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (y[i] - x[i]) * (y[i] - x[i]);
      ref += x[i] * x[i];
    }
    EXPECT_LT(std::sqrt(err / ref), bound);
    EXPECT_GT(std::sqrt(err / ref), bound / 100);  // a lossy type really rounds

    std::vector<float> zeros(256, 0.0f);
    for (float v : round_trip(type, zeros)) ASSERT_EQ(v, 0.0f);

    // One large value among small ones: the block's scale follows it, so it comes back within ~one step.
    std::vector<float> spike(256, 0.001f);
    spike[37] = -3.0f;
    const std::vector<float> s = round_trip(type, spike);
    EXPECT_NEAR(s[37], -3.0f, 3.0f * bound) << "outlier";
    for (float v : s) ASSERT_TRUE(std::isfinite(v));
  }
}

std::vector<QuantTensor> quant_tensors(const GgufFile& g) {
  std::vector<QuantTensor> v;
  for (const GgufTensorInfo& t : g.tensors()) v.push_back({std::string(t.name), t.n_dims, t.ne[0], t.type});
  return v;
}

// The per-tensor types (Q6_K output, more bits on some attn_v / ffn_down layers, the fallbacks for rows
// of 320 and 960) equal those in llama.cpp's file, for every reference file, and so does general.file_type.
TEST(Quantize, TypeMixMatchesLlamaCppPerFileType) {
  for (const auto& [base, ft] : reference_files()) {
    SCOPED_TRACE(base + "-" + ft);
    const std::unique_ptr<GgufFile> src = open_gguf(quant_path(base + "-f16"));
    ASSERT_TRUE(src);
    QuantFileType type;
    ASSERT_TRUE(quant_file_type_from_name(ft, &type));
    QuantModelShape shape;
    ASSERT_TRUE(quant_model_shape(*src, &shape).ok());
    const std::vector<QuantTensor> tensors = quant_tensors(*src);
    const std::vector<TensorType> types = plan_tensor_types(type, shape, tensors);
    const std::unique_ptr<RefFile> ref = read_ref(quant_path(base + "-" + ft));
    EXPECT_EQ(ref->u32_keys["general.file_type"], static_cast<uint32_t>(type));
    ASSERT_EQ(ref->tensors.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const RefTensor* rt = ref->find(tensors[i].name);
      ASSERT_NE(rt, nullptr) << tensors[i].name;
      EXPECT_EQ(ggml_type_name(rt->type), tensor_type_traits(types[i]).name) << tensors[i].name;
    }
    // llama.cpp writes the tensors in the order lmrt visits them.
    const std::vector<size_t> order = llama_tensor_order(tensors);
    for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(ref->tensors[k].name, tensors[order[k]].name);
  }
}

TEST(Quantize, FileTypeNames) {
  QuantFileType t;
  EXPECT_TRUE(quant_file_type_from_name("q4_k_m", &t));
  EXPECT_EQ(t, QuantFileType::q4_k_m);
  EXPECT_EQ(static_cast<uint32_t>(t), 15u);
  EXPECT_TRUE(quant_file_type_from_name("IQ4_XS", &t));
  EXPECT_EQ(static_cast<uint32_t>(t), 30u);
  EXPECT_FALSE(quant_file_type_from_name("Q4_K", &t));  // llama-quantize needs _S or _M
  EXPECT_FALSE(quant_file_type_from_name("F16", &t));
  EXPECT_FALSE(quant_file_type_from_name("", &t));
  EXPECT_NE(quant_file_type_names().find("IQ4_NL"), std::string::npos);
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

QuantizeFileOptions options(const char* ft, size_t threads) {
  QuantizeFileOptions o;
  EXPECT_TRUE(quant_file_type_from_name(ft, &o.file_type));
  o.n_threads = threads;
  return o;
}

// The whole file: every tensor's data and type equal llama.cpp's file (2 threads, so rows are split
// between threads), the metadata says the file type, and the progress reaches the total.
TEST(Quantize, FileHasLlamaCppTensorsAndMetadata) {
  for (const auto& [base, ft] :
       std::vector<std::pair<std::string, std::string>>{{"base", "Q4_K_M"}, {"w320", "IQ4_XS"}}) {
    SCOPED_TRACE(base + "-" + ft);
    const std::string out = test::temp_dir() + "/" + base + "-" + ft + ".gguf";
    QuantizeFileOptions o = options(ft.c_str(), 2);
    uint64_t last_done = 0, last_total = 0, calls = 0;
    o.progress = [&](uint64_t done, uint64_t total) {
      EXPECT_GE(done, last_done);
      last_done = done;
      last_total = total;
      ++calls;
    };
    QuantizeFileReport report;
    const Status s = quantize_model_file(quant_path(base + "-f16"), out, o, &report);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_FALSE(exists(out + ".tmp"));
    const std::unique_ptr<RefFile> mine = read_ref(out), ref = read_ref(quant_path(base + "-" + ft));
    EXPECT_GE(calls, ref->tensors.size());
    EXPECT_EQ(last_done, last_total);
    EXPECT_EQ(mine->u32_keys["general.file_type"], ref->u32_keys["general.file_type"]);
    EXPECT_EQ(mine->u32_keys["general.quantization_version"], 2u);
    EXPECT_EQ(report.output_bytes, mine->bytes.size());
    EXPECT_EQ(report.tensors_quantized + report.tensors_copied, ref->tensors.size());
    ASSERT_EQ(mine->tensors.size(), ref->tensors.size());
    for (size_t i = 0; i < ref->tensors.size(); ++i) {
      const RefTensor &a = mine->tensors[i], &b = ref->tensors[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.type, b.type) << a.name;
      const TensorTypeTraits tr = tensor_type_traits(static_cast<TensorType>(b.type));
      const uint64_t bytes = b.ne[0] / tr.block_size * tr.block_bytes * b.ne[1] * b.ne[2] * b.ne[3];
      EXPECT_EQ(std::memcmp(a.data, b.data, bytes), 0) << a.name << " differs from llama.cpp's";
    }
    std::remove(out.c_str());
  }
}

// A model that is already quantized (except Q8_0) is refused, and an existing output stays as it was;
// Q8_0 tensors are requantized.
TEST(Quantize, RefusesQuantizedInputAndLeavesOutputUntouched) {
  const std::string dir = test::temp_dir();
  const std::string q4_0 = dir + "/w320-q4_0.gguf", out = dir + "/keep.gguf";
  // w320 as Q4_0: its tied embedding becomes Q8_0 (rows of 320 are not whole Q6_K blocks), the rest Q4_0.
  ASSERT_TRUE(quantize_model_file(quant_path("w320-f16"), q4_0, options("Q4_0", 1), nullptr).ok());
  {
    FILE* f = std::fopen(out.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("keep me", f);
    std::fclose(f);
  }
  const Status s = quantize_model_file(q4_0, out, options("Q4_K_M", 1), nullptr);
  EXPECT_EQ(s.code(), Code::unsupported) << s.message();
  EXPECT_NE(s.message().find("is Q4_0"), std::string::npos) << s.message();
  EXPECT_EQ(test::read_file(out), "keep me");
  EXPECT_FALSE(exists(out + ".tmp"));
  // Q8_0 to Q8_0 copies; the Q4_0 tensors stay Q4_0 when Q4_0 is asked for again.
  QuantizeFileReport r;
  ASSERT_TRUE(quantize_model_file(q4_0, out, options("Q4_0", 1), &r).ok());
  EXPECT_EQ(r.tensors_quantized, 0u);
  EXPECT_EQ(r.type_counts["Q8_0"], 1u);
  EXPECT_EQ(r.type_counts["Q4_0"], 14u);
  std::remove(out.c_str());
  std::remove(q4_0.c_str());
}

TEST(Quantize, RefusesToOverwriteTheInput) {
  const std::string dir = test::temp_dir();
  const std::string in = dir + "/in.gguf", link = dir + "/in-link.gguf";
  const std::string bytes = test::read_file(quant_path("w320-f16"));
  {
    FILE* f = std::fopen(in.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  ASSERT_EQ(::symlink(in.c_str(), link.c_str()), 0);
  for (const std::string& out : {in, link, dir + "/./in.gguf"}) {
    const Status s = quantize_model_file(in, out, options("Q8_0", 1), nullptr);
    EXPECT_EQ(s.code(), Code::invalid_argument) << out << ": " << s.message();
    EXPECT_NE(s.message().find("is the input"), std::string::npos) << s.message();
  }
  EXPECT_EQ(test::read_file(in), bytes);
  std::remove(link.c_str());
  std::remove(in.c_str());
}

// Only a regular file is replaced: a directory or a FIFO stays as it is (devices are refused the same way;
// the test does not use one, as a broken /dev/null would be overwritten).
TEST(Quantize, RefusesToOverwriteANonRegularFile) {
  const std::string dir = test::temp_dir();
  const std::string sub = dir + "/a-directory", fifo = dir + "/a-fifo";
  ::mkdir(sub.c_str(), 0700);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& out : {sub, fifo}) {
    const Status s = quantize_model_file(quant_path("w320-f16"), out, options("Q8_0", 1), nullptr);
    EXPECT_EQ(s.code(), Code::invalid_argument) << out << ": " << s.message();
    EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
    EXPECT_FALSE(exists(out + ".tmp")) << out;
  }
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_EQ(::stat(sub.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  std::remove(fifo.c_str());
  ::rmdir(sub.c_str());
}

// A write that cannot complete leaves no file behind, neither the output nor its temporary file.
TEST(Quantize, LeavesNoPartialFileOnFailure) {
  const std::string out = test::temp_dir() + "/no-such-dir/out.gguf";
  const Status s = quantize_model_file(quant_path("w320-f16"), out, options("Q4_K_M", 2), nullptr);
  EXPECT_EQ(s.code(), Code::io) << s.message();
  EXPECT_FALSE(exists(out));
  EXPECT_FALSE(exists(out + ".tmp"));
  // A bad thread count and a missing input are refused before anything is written.
  const std::string out2 = test::temp_dir() + "/never.gguf";
  EXPECT_EQ(quantize_model_file(quant_path("w320-f16"), out2, options("Q4_K_M", 0), nullptr).code(),
            Code::invalid_argument);
  EXPECT_EQ(quantize_model_file(quant_path("no-such-model"), out2, options("Q4_K_M", 1), nullptr).code(), Code::io);
  EXPECT_FALSE(exists(out2));
  EXPECT_FALSE(exists(out2 + ".tmp"));
}

// Writes a one-matrix F32 model (64 x 4) whose row `nan_row` holds a NaN (none when out of range).
std::string tiny_model(const std::string& name, bool with_arch, uint64_t nan_row) {
  const std::string path = test::temp_dir() + "/" + name;
  GgufWriter w;
  if (with_arch) {
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1);
  }
  EXPECT_TRUE(w.add_tensor("blk.0.attn_q.weight", {64, 4}, TensorType::f32).ok());
  const Status s = w.write(path, [&](size_t, uint8_t* data, uint64_t bytes) {
    std::vector<float> x(bytes / 4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
    if (nan_row < 4) x[nan_row * 64 + 5] = std::nanf("");
    std::memcpy(data, x.data(), bytes);
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.message();
  return path;
}

// A NaN cannot be quantized (every scale of its block would be NaN): refused with the row named, and no
// file is left; a model without an architecture is refused before anything is written.
TEST(Quantize, RefusesNonFiniteWeightsAndModelsWithoutArchitecture) {
  const std::string out = test::temp_dir() + "/tiny-out.gguf";
  const std::string good = tiny_model("tiny.gguf", true, 99), nan = tiny_model("tiny-nan.gguf", true, 2);
  QuantizeFileReport r;
  ASSERT_TRUE(quantize_model_file(good, out, options("Q8_0", 2), &r).ok());
  EXPECT_EQ(r.type_counts["Q8_0"], 1u);
  std::remove(out.c_str());
  const Status s = quantize_model_file(nan, out, options("Q8_0", 2), nullptr);
  EXPECT_EQ(s.code(), Code::bad_format) << s.message();
  EXPECT_NE(s.message().find("'blk.0.attn_q.weight' row 2"), std::string::npos) << s.message();
  EXPECT_FALSE(exists(out));
  EXPECT_FALSE(exists(out + ".tmp"));
  const std::string no_arch = tiny_model("tiny-no-arch.gguf", false, 99);
  const Status a = quantize_model_file(no_arch, out, options("Q8_0", 1), nullptr);
  EXPECT_EQ(a.code(), Code::bad_format) << a.message();
  EXPECT_NE(a.message().find("general.architecture"), std::string::npos) << a.message();
  EXPECT_FALSE(exists(out));
  for (const std::string& p : {good, nan, no_arch}) std::remove(p.c_str());
}

// The command: quantizes with -t, prints the type mix on stdout, draws no progress bar when stderr is
// not a terminal, and refuses a bad TYPE with usage exit code 2.
TEST(Quantize, CommandLine) {
  const std::string out = test::temp_dir() + "/cli-q4_k_m.gguf", err = test::temp_dir() + "/cli-stderr.txt";
  const auto run = [&](const std::string& args) {
    const std::string cmd = std::string(LMRT_CLI_PATH) + " quantize " + args + " > " + out + ".stdout 2> " + err;
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  ASSERT_EQ(run("-m '" + quant_path("w320-f16") + "' -o '" + out + "' Q4_K_M -t 2"), 0) << test::read_file(err);
  EXPECT_EQ(test::read_file(err), "");
  const std::string said = test::read_file(out + ".stdout");
  EXPECT_NE(said.find("Q5_0 x12, Q8_0 x3"), std::string::npos) << said;
  const std::unique_ptr<RefFile> mine = read_ref(out), ref = read_ref(quant_path("w320-Q4_K_M"));
  ASSERT_EQ(mine->tensors.size(), ref->tensors.size());
  for (size_t i = 0; i < ref->tensors.size(); ++i) EXPECT_EQ(mine->tensors[i].type, ref->tensors[i].type);
  EXPECT_EQ(run("-m '" + quant_path("w320-f16") + "' -o '" + out + "' Q4_K"), 2);
  EXPECT_NE(test::read_file(err).find("unknown TYPE 'Q4_K'"), std::string::npos);
  EXPECT_EQ(run("-m '" + quant_path("w320-f16") + "' -o '" + out + "'"), 2);
  const std::string fifo = test::temp_dir() + "/cli-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(run("-m '" + quant_path("w320-f16") + "' -o '" + fifo + "' Q8_0"), 1);
  EXPECT_NE(test::read_file(err).find("not a regular file"), std::string::npos);
  std::remove(fifo.c_str());
  std::remove(out.c_str());
  std::remove((out + ".stdout").c_str());
  std::remove(err.c_str());
}

}  // namespace
}  // namespace lmrt
