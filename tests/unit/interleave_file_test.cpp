// `lmrt quantize --interleave`: the Q4_0x16 layout functions and interleave_model_file, checked by
// reading both files back with GgufFile and by running both models.
#include "tools/interleave_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "formats/q4_0x16.h"
#include "runtime/generate/context.h"
#include "runtime/model/gguf_file.h"
#include "runtime/model/llama_model.h"
#include "simd/kernels.h"
#include "test_support.h"
#include "tools/gguf_writer.h"
#include "tools/synthetic_model.h"

namespace lmrt {
namespace {

std::string temp_path(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/lmrt-interleave-" + std::to_string(::getpid()) + "-" + name;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

std::unique_ptr<GgufFile> open_gguf(const std::string& path) {
  std::unique_ptr<GgufFile> g;
  const Status s = GgufFile::open(path, true, &g);
  EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  return g;
}

// Deep equality of two metadata values, floats compared bit for bit.
bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type || a.u != b.u || a.i != b.i || std::memcmp(&a.f, &b.f, sizeof a.f) != 0 || a.str != b.str)
    return false;
  if (a.type != GgufValueType::array) return true;
  if (a.elem_type != b.elem_type || a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (!same_value(a.item(k), b.item(k))) return false;
  return true;
}

// The output holds the input's metadata in the same order, then lmrt.interleaved = true.
void expect_same_metadata_plus_flag(const GgufFile& in, const GgufFile& out) {
  ASSERT_EQ(out.metadata().size(), in.metadata().size() + 1);
  for (size_t k = 0; k < in.metadata().size(); ++k) {
    EXPECT_EQ(out.metadata()[k].key, in.metadata()[k].key);
    EXPECT_TRUE(same_value(out.metadata()[k].value, in.metadata()[k].value)) << in.metadata()[k].key;
  }
  EXPECT_EQ(out.metadata().back().key, kInterleavedKey);
  EXPECT_EQ(out.metadata().back().value.type, GgufValueType::boolean);
  EXPECT_EQ(out.get_bool(kInterleavedKey), true);
}

// Every tensor keeps its name, order and shape; `converted` lists those that must now be Q4_0x16 and
// deinterleave to the original bytes; all others must be byte-identical.
void expect_tensors(const GgufFile& in, const GgufFile& out, const std::vector<std::string>& converted) {
  ASSERT_EQ(out.tensors().size(), in.tensors().size());
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const GgufTensorInfo& a = in.tensors()[i];
    const GgufTensorInfo& b = out.tensors()[i];
    SCOPED_TRACE(std::string(a.name));
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.n_dims, a.n_dims);
    EXPECT_EQ(b.ne, a.ne);
    ASSERT_EQ(b.n_bytes, a.n_bytes);
    const bool conv = std::find(converted.begin(), converted.end(), std::string(a.name)) != converted.end();
    if (conv) {
      EXPECT_EQ(a.type, TensorType::q4_0);
      EXPECT_EQ(b.type, TensorType::q4_0x16);
      std::vector<uint8_t> back(b.n_bytes);
      deinterleave_q4_0x16(b.data, b.ne[1], b.ne[0], back.data());
      EXPECT_EQ(std::memcmp(back.data(), a.data, a.n_bytes), 0);
      EXPECT_NE(std::memcmp(b.data, a.data, a.n_bytes), 0);  // the bytes did move
    } else {
      EXPECT_EQ(b.type, a.type);
      EXPECT_EQ(std::memcmp(b.data, a.data, a.n_bytes), 0);
    }
  }
}

SyntheticShape small_shape() {
  SyntheticShape s;
  s.dim = 64;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.ffn = 96;
  s.vocab = 300;  // output.weight's 300 rows are not whole groups of 16: it stays Q4_0
  s.ctx = 64;
  return s;
}

std::string write_small_model(const std::string& name) {
  const std::string path = temp_path(name);
  SyntheticOptions o;
  o.seed = 11;
  o.tokenizer_path = test::model_path("llama2-tokenizer.bin");
  const Status s = write_synthetic_model(path, small_shape(), o);
  EXPECT_TRUE(s.ok()) << s.message();
  return path;
}

TEST(Q4_0x16Layout, InterleaveThenDeinterleaveGivesBackEveryByte) {
  const uint64_t rows = 48, cols = 96;
  const std::vector<uint8_t> src = random_bytes(rows * cols / 32 * 18, 5);
  std::vector<uint8_t> mid(src.size()), back(src.size());
  interleave_q4_0(src.data(), rows, cols, mid.data());
  deinterleave_q4_0x16(mid.data(), rows, cols, back.data());
  EXPECT_NE(mid, src);
  EXPECT_EQ(back, src);
  // A permutation of the bytes: the same multiset.
  std::vector<uint8_t> a = src, b = mid;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

// Row 21 (group 1, row 5 of it), block 2 of a 32 x 128 matrix, placed where q4_0x16.h says: unit
// (group * blocks_per_row + block), scale at 2j, qs[4c .. 4c + 3] at 32 + 64c + 4j.
TEST(Q4_0x16Layout, ABlockLandsWhereTheLayoutSays) {
  const uint64_t rows = 32, cols = 128, nb = cols / 32;
  std::vector<uint8_t> src(rows * nb * 18, 0), dst(src.size(), 0);
  const size_t row = 21, block = 2, g = 1, j = 5;
  uint8_t* blk = src.data() + row * nb * 18 + block * 18;
  blk[0] = 0xAB;
  blk[1] = 0xCD;
  for (int q = 0; q < 16; ++q) blk[2 + q] = static_cast<uint8_t>(0x10 + q);
  interleave_q4_0(src.data(), rows, cols, dst.data());
  const uint8_t* unit = dst.data() + (g * nb + block) * 288;
  EXPECT_EQ(unit[2 * j], 0xAB);
  EXPECT_EQ(unit[2 * j + 1], 0xCD);
  for (int q = 0; q < 16; ++q) EXPECT_EQ(unit[32 + 64 * (q / 4) + 4 * j + q % 4], 0x10 + q) << "qs[" << q << "]";
  // Element 21 of the block is the high nibble of qs[5]: byte 32 + 64 + 4j + 1 of the unit.
  EXPECT_EQ(unit[32 + 64 + 4 * j + 1] >> 4, (0x10 + 5) >> 4);
  size_t nonzero = 0;
  for (uint8_t b : dst) nonzero += b != 0;
  EXPECT_EQ(nonzero, 18u);  // nothing else was written
}

TEST(InterleaveFile, SyntheticModelConvertsItsMatricesAndKeepsEverythingElse) {
  const std::string in_path = write_small_model("model.gguf"), out_path = temp_path("model-x16.gguf");
  InterleaveReport r;
  const Status s = interleave_model_file(in_path, out_path, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  // 7 matrices per layer; token_embd (embeddings), output (300 rows) and the 5 norms are copied.
  EXPECT_EQ(r.tensors_converted, 14u);
  EXPECT_EQ(r.tensors_copied, 7u);
  EXPECT_FALSE(exists(out_path + ".tmp"));
  auto in = open_gguf(in_path), out = open_gguf(out_path);
  ASSERT_TRUE(in && out);
  EXPECT_EQ(r.output_bytes, out->file().size());
  expect_same_metadata_plus_flag(*in, *out);
  std::vector<std::string> converted;
  uint64_t conv_bytes = 0, copy_bytes = 0;
  for (int l = 0; l < 2; ++l)
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"})
      converted.push_back("blk." + std::to_string(l) + "." + m + ".weight");
  for (const GgufTensorInfo& t : in->tensors())
    (std::find(converted.begin(), converted.end(), std::string(t.name)) != converted.end() ? conv_bytes : copy_bytes) +=
        t.n_bytes;
  EXPECT_EQ(r.bytes_converted, conv_bytes);
  EXPECT_EQ(r.bytes_copied, copy_bytes);
  expect_tensors(*in, *out, converted);
  EXPECT_EQ(out->find_tensor("token_embd.weight")->type, TensorType::q4_0);
  EXPECT_EQ(out->find_tensor("output.weight")->type, TensorType::q4_0);
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
}

// Every GGUF value type (nested arrays too), a non-default alignment, and each reason a Q4_0 tensor
// is left alone.
TEST(InterleaveFile, CopiesEveryValueTypeAndTheAlignment) {
  GgufWriter w;
  ASSERT_TRUE(w.set_alignment(64).ok());
  w.add_u32("general.alignment", 64);
  auto scalar = [](GgufValueType t) {
    GgufValue v;
    v.type = t;
    return v;
  };
  GgufValue v = scalar(GgufValueType::u8);
  v.u = 255;
  w.add_value("t.u8", v);
  v = scalar(GgufValueType::i8);
  v.i = -128;
  w.add_value("t.i8", v);
  v = scalar(GgufValueType::u16);
  v.u = 65535;
  w.add_value("t.u16", v);
  v = scalar(GgufValueType::i16);
  v.i = -32768;
  w.add_value("t.i16", v);
  v = scalar(GgufValueType::i32);
  v.i = -5;
  w.add_value("t.i32", v);
  v = scalar(GgufValueType::u64);
  v.u = std::numeric_limits<uint64_t>::max();
  w.add_value("t.u64", v);
  v = scalar(GgufValueType::i64);
  v.i = std::numeric_limits<int64_t>::min();
  w.add_value("t.i64", v);
  v = scalar(GgufValueType::f32);
  v.f = -0.0f;
  w.add_value("t.f32", v);
  v = scalar(GgufValueType::f64);
  v.f = 3.141592653589793;
  w.add_value("t.f64", v);
  const std::string text("a\0b\xE2\x96\x81", 6);
  v = scalar(GgufValueType::string);
  v.str = text;
  w.add_value("t.str", v);
  w.add_bool("t.bool", false);
  GgufValue arr = scalar(GgufValueType::array);  // [[1, -2], [], [3]] as i64
  arr.elem_type = GgufValueType::array;
  for (std::vector<int64_t> xs : {std::vector<int64_t>{1, -2}, std::vector<int64_t>{}, std::vector<int64_t>{3}}) {
    GgufValue inner = scalar(GgufValueType::array);
    inner.elem_type = GgufValueType::i64;
    for (int64_t x : xs) {
      GgufValue item = scalar(GgufValueType::i64);
      item.i = x;
      inner.items.push_back(item);
    }
    arr.items.push_back(inner);
  }
  w.add_value("t.nested", arr);
  w.add_string_array("t.strs", {"x", "", "yz"});
  struct Decl {
    const char* name;
    std::vector<uint64_t> ne;
    TensorType type;
    bool converts;
  } decls[] = {
      {"a.weight", {64, 32}, TensorType::q4_0, true},
      {"norm.weight", {64}, TensorType::f32, false},
      {"token_embd.weight", {32, 16}, TensorType::q4_0, false},  // embeddings stay row-addressable
      {"b.weight", {32, 24}, TensorType::q4_0, false},           // 24 rows: not whole groups of 16
      {"c.weight", {32, 16, 2}, TensorType::q4_0, false},        // 3-D
      {"d.weight", {32}, TensorType::q4_0, false},               // 1-D
      {"e.weight", {32, 16}, TensorType::q8_0, false},
      {"f.weight", {32, 16}, TensorType::f16, false},
      {"g.weight", {32, 16}, TensorType::q4_0, true},
  };
  for (const Decl& d : decls) ASSERT_TRUE(w.add_tensor(d.name, d.ne, d.type).ok()) << d.name;
  const std::string in_path = temp_path("types.gguf"), out_path = temp_path("types-x16.gguf");
  ASSERT_TRUE(w.write(in_path, [](size_t i, uint8_t* data, uint64_t bytes) {
                 const std::vector<uint8_t> r = random_bytes(bytes, 100 + static_cast<uint32_t>(i));
                 std::memcpy(data, r.data(), bytes);
                 return Status::Ok();
               }).ok());
  InterleaveReport r;
  const Status s = interleave_model_file(in_path, out_path, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.tensors_converted, 2u);
  EXPECT_EQ(r.tensors_copied, 7u);
  auto in = open_gguf(in_path), out = open_gguf(out_path);
  ASSERT_TRUE(in && out);
  ASSERT_EQ(in->metadata().size(), 14u);
  EXPECT_EQ(in->find("t.str")->str, text);
  ASSERT_EQ(in->find("t.nested")->size(), 3u);
  EXPECT_EQ(in->find("t.nested")->item(0).item(1).i, -2);
  EXPECT_EQ(out->alignment(), 64u);
  for (const GgufTensorInfo& t : out->tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  expect_same_metadata_plus_flag(*in, *out);
  expect_tensors(*in, *out, {"a.weight", "g.weight"});
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
}

// The interleaved model loads and computes the same logits as the original on every kernel table this
// machine runs: Q4_0x16 holds the same blocks, and the kernels do the same integer arithmetic on them.
TEST(InterleaveFile, InterleavedModelComputesTheOriginalsLogits) {
  const std::string in_path = write_small_model("logits.gguf"), out_path = temp_path("logits-x16.gguf");
  ASSERT_TRUE(interleave_model_file(in_path, out_path, nullptr).ok());
  std::unique_ptr<LlamaModel> a, b;
  ASSERT_TRUE(LlamaModel::load(open_gguf(in_path), &a).ok());
  const Status s = LlamaModel::load(open_gguf(out_path), &b);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::vector<int32_t> prompt = {1, 45, 299, 7, 120, 260, 33, 81, 150, 200, 12, 9, 77, 288, 3, 100, 64, 18};
  for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512, simd::Isa::neon}) {
    if (!simd::isa_available(isa)) continue;
    SCOPED_TRACE(simd::isa_name(isa));
    ContextParams cp;
    cp.n_ctx = 64;
    cp.n_batch = 32;
    cp.n_threads = 2;
    cp.isa = isa;
    cp.logits_all = true;
    std::unique_ptr<Context> ca, cb;
    ASSERT_TRUE(Context::create(*a, cp, &ca).ok());
    ASSERT_TRUE(Context::create(*b, cp, &cb).ok());
    // A batch (prefill kernels), then single tokens (decode kernels).
    std::vector<std::vector<int32_t>> steps = {prompt, {42}, {250}, {5}};
    for (const std::vector<int32_t>& step : steps) {
      ASSERT_TRUE(ca->eval(step.data(), step.size()).ok());
      ASSERT_TRUE(cb->eval(step.data(), step.size()).ok());
      for (size_t t = 0; t < step.size(); ++t) {
        const float* la = ca->logits(t);
        const float* lb = cb->logits(t);
        ASSERT_TRUE(la != nullptr && lb != nullptr);
        double max_abs = 0, max_diff = 0;
        for (uint32_t v = 0; v < 300; ++v) {
          max_abs = std::max(max_abs, std::fabs(static_cast<double>(la[v])));
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(la[v]) - lb[v]));
        }
        ASSERT_GT(max_abs, 0.0);
        ASSERT_LE(max_diff, 1e-4 * max_abs) << "step of " << step.size() << " tokens, position " << t;
      }
    }
  }
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
}

TEST(InterleaveFile, RefusesBadInputsAndOutputs) {
  const std::string in_path = write_small_model("errors.gguf"), out_path = temp_path("errors-x16.gguf");

  Status s = interleave_model_file(temp_path("missing.gguf"), out_path, nullptr);
  EXPECT_EQ(s.code(), Code::io) << s.message();
  EXPECT_FALSE(exists(out_path));

  const std::string junk = test::write_temp_file("interleave-junk.gguf", std::string(64, 'x'));
  s = interleave_model_file(junk, out_path, nullptr);
  EXPECT_EQ(s.code(), Code::bad_format) << s.message();

  // The output is the input, by name or through a link: refused, the input untouched.
  const std::string before = test::read_file(in_path);
  s = interleave_model_file(in_path, in_path, nullptr);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("is the input model"), std::string::npos) << s.message();
  const std::string link = temp_path("errors-link.gguf");
  ASSERT_EQ(::symlink(in_path.c_str(), link.c_str()), 0);
  EXPECT_EQ(interleave_model_file(in_path, link, nullptr).code(), Code::invalid_argument);
  EXPECT_EQ(test::read_file(in_path), before);

  // An output that cannot be created: io, and nothing left behind.
  const std::string unwritable = temp_path("no-such-dir") + "/out.gguf";
  s = interleave_model_file(in_path, unwritable, nullptr);
  EXPECT_EQ(s.code(), Code::io) << s.message();
  EXPECT_NE(s.message().find(unwritable), std::string::npos) << s.message();

  // An interleaved model cannot be interleaved again.
  ASSERT_TRUE(interleave_model_file(in_path, out_path, nullptr).ok());
  const std::string again = temp_path("errors-x16-x16.gguf");
  s = interleave_model_file(out_path, again, nullptr);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("already interleaved"), std::string::npos) << s.message();
  EXPECT_FALSE(exists(again));

  // A model without Q4_0 tensors (stories260K is all F32).
  s = interleave_model_file(test::model_path("stories260K.gguf"), again, nullptr);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("no Q4_0 matrices to interleave"), std::string::npos) << s.message();
  EXPECT_FALSE(exists(again));

  std::remove(link.c_str());
  std::remove(in_path.c_str());
  std::remove(out_path.c_str());
}

TEST(GgufWriter, RemovesItsTemporaryFileWhenWritingFails) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("t", {32}, TensorType::f32).ok());
  const std::string path = temp_path("failed.gguf");
  const Status s = w.write(path, [](size_t, uint8_t*, uint64_t) { return Error(Code::internal, "fill failed"); });
  EXPECT_EQ(s.code(), Code::internal);
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(path + ".tmp"));
  EXPECT_EQ(w.set_alignment(48).code(), Code::invalid_argument);
  EXPECT_EQ(w.set_alignment(4).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace lmrt
