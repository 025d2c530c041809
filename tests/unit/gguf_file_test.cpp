// GGUF reader on well-formed input: the real test models, foreign and legacy files, and synthetic
// files holding every metadata value type and every supported tensor type.
#include "runtime/model/gguf_file.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "gguf_test_bytes.h"
#include "test_support.h"

namespace lmrt {
namespace {

using namespace test::gguf;

TEST(GgufFile, ReadsStories260KHeaderAndTensors) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("stories260K.gguf"), true, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->tensors().size(), 48u);
  EXPECT_EQ(g->get_string("general.architecture").value_or(""), "llama");
  EXPECT_EQ(g->get_int("llama.embedding_length").value_or(0), 64);
  const GgufValue* tokens = g->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->type, GgufValueType::array);
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ(tokens->item(1).str, "<s>");
  const GgufTensorInfo* ffn_down = g->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(ffn_down, nullptr);
  EXPECT_EQ(ffn_down->ne[0], 172u);
  EXPECT_EQ(ffn_down->ne[1], 64u);
  EXPECT_EQ(ffn_down->n_bytes, 172u * 64u * 4u);
}

// The GGUF's token embedding must be the very bytes of the llama2.c checkpoint's first weight
// (after its 7-int header): this pins the data offset arithmetic, with and without mmap.
TEST(GgufFile, Stories260KTensorDataMatchesTheLlama2cCheckpoint) {
  const std::string bin = test::read_file(test::model_path("stories260K.bin"));
  for (bool use_mmap : {true, false}) {
    std::unique_ptr<GgufFile> g;
    Status s = GgufFile::open(test::model_path("stories260K.gguf"), use_mmap, &g);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(g->file().is_mapped(), use_mmap);
    const GgufTensorInfo* emb = g->find_tensor("token_embd.weight");
    ASSERT_NE(emb, nullptr);
    ASSERT_EQ(emb->type, TensorType::f32);
    ASSERT_EQ(emb->n_bytes, 512u * 64u * 4u);
    ASSERT_EQ(emb->data, g->file().data() + g->data_offset() + emb->offset);
    EXPECT_EQ(std::memcmp(emb->data, bin.data() + 28, emb->n_bytes), 0);
    EXPECT_EQ(g->data_offset() % 32, 0u);
  }
}

TEST(GgufFile, ReadsTinyStories656KQ8_0) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("TinyStories-656K-Q8_0.gguf"), true, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->version(), 3u);
  std::map<TensorType, int> by_type;
  uint64_t total = 0;
  for (const GgufTensorInfo& t : g->tensors()) {
    ++by_type[t.type];
    total += t.n_bytes;
    const TensorTypeTraits tr = tensor_type_traits(t.type);
    EXPECT_EQ(t.n_bytes, t.n_elements / tr.block_size * tr.block_bytes) << t.name;
  }
  EXPECT_EQ(g->tensors().size(), 20u);
  EXPECT_EQ(by_type[TensorType::q8_0], 15);
  EXPECT_EQ(by_type[TensorType::f32], 5);
  EXPECT_LE(total, g->file().size() - g->data_offset());
  EXPECT_EQ(g->get_int("llama.block_count").value_or(0), 2);
  EXPECT_EQ(g->get_int("llama.embedding_length").value_or(0), 128);
  const GgufValue* tokens = g->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->size(), 2048u);
}

TEST(GgufFile, ReadsLlamaSpmVocabulary) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::shared_dir() + "/vocab/llama-spm.gguf", true, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->get_string("tokenizer.ggml.model").value_or(""), "llama");
  const GgufValue* tokens = g->find("tokenizer.ggml.tokens");
  const GgufValue* scores = g->find("tokenizer.ggml.scores");
  ASSERT_NE(tokens, nullptr);
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(tokens->size(), 32000u);
  EXPECT_EQ(scores->elem_type, GgufValueType::f32);
  EXPECT_EQ(scores->size(), 32000u);
  EXPECT_EQ(tokens->item(2).str, "</s>");
  EXPECT_EQ(g->get_int("tokenizer.ggml.bos_token_id").value_or(-1), 1);
}

// GGUF v2 with Q8_0 rows of 172: the blocks of 32 would run across rows, so it is refused by name.
TEST(GgufFile, RefusesQ8_0RowsThatAreNotWholeBlocks) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("tinyllamas-stories-260k-q8_0.gguf"), true, &g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("ffn_down.weight'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("row length 172"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("Q8_0's block size 32"), std::string::npos) << s.message();
  EXPECT_EQ(g, nullptr);
}

TEST(GgufFile, RefusesGgufVersion1) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("legacy/stories260K-gguf-v1.gguf"), true, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("GGUF version 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("stories260K-gguf-v1.gguf"), std::string::npos) << s.message();
}

TEST(GgufFile, RefusesGgjtFile) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("legacy/TinyLLama-v0.ggmlv3.q4_0.bin"), true, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("GGJT"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not GGUF"), std::string::npos) << s.message();
}

TEST(GgufFile, RefusesLlama2cFilesAsNotGguf) {
  for (const char* name : {"stories260K.bin", "tok512.bin", "llama2-tokenizer.bin"}) {
    for (bool use_mmap : {true, false}) {
      std::unique_ptr<GgufFile> g;
      Status s = GgufFile::open(test::model_path(name), use_mmap, &g);
      EXPECT_EQ(s.code(), Code::bad_format) << name;
      EXPECT_NE(s.message().find("not a GGUF file"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
    }
  }
}

TEST(GgufFile, MissingFileIsAnIoError) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("no-such-model.gguf"), true, &g);
  EXPECT_EQ(s.code(), Code::io);
  EXPECT_NE(s.message().find("no-such-model.gguf"), std::string::npos) << s.message();
}

// One key of every value type, including nested and empty arrays, read back exactly.
TEST(GgufFile, ReadsEveryMetadataValueType) {
  GgufBuilder b;
  b.kv("t.u8", kU8, le<uint8_t>(200))
      .kv("t.i8", kI8, le<int8_t>(-5))
      .kv("t.u16", kU16, le<uint16_t>(60000))
      .kv("t.i16", kI16, le<int16_t>(-30000))
      .kv("t.u32", kU32, le<uint32_t>(4000000000u))
      .kv("t.i32", kI32, le<int32_t>(-2000000000))
      .kv("t.f32", kF32, le<float>(1.5f))
      .kv("t.bool", kBool, le<uint8_t>(1))
      .kv("t.string", kString, str("h\xc3\xa9llo"))
      .kv("t.u64", kU64, le<uint64_t>(uint64_t{1} << 63))
      .kv("t.i64", kI64, le<int64_t>(-(int64_t{1} << 60)))
      .kv("t.f64", kF64, le<double>(1e300))
      .kv("t.a_i32", kArray, array(kI32, 3, le<int32_t>(7) + le<int32_t>(-8) + le<int32_t>(9)))
      .kv("t.a_str", kArray, array(kString, 2, str("") + str("ab")))
      .kv("t.a_bool", kArray, array(kBool, 2, le<uint8_t>(0) + le<uint8_t>(1)))
      .kv("t.a_empty", kArray, array(kF64, 0, ""))
      .kv("t.a_nested", kArray,
          array(kArray, 2, array(kU8, 2, le<uint8_t>(1) + le<uint8_t>(2)) + array(kString, 1, str("x"))));
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(b.build(), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(g->metadata().size(), 17u);
  EXPECT_EQ(g->find("t.u8")->type, GgufValueType::u8);
  EXPECT_EQ(g->get_int("t.u8"), 200);
  EXPECT_EQ(g->get_int("t.i8"), -5);
  EXPECT_EQ(g->get_int("t.u16"), 60000);
  EXPECT_EQ(g->get_int("t.i16"), -30000);
  EXPECT_EQ(g->get_int("t.u32"), 4000000000LL);
  EXPECT_EQ(g->get_int("t.i32"), -2000000000);
  EXPECT_EQ(g->find("t.f32")->type, GgufValueType::f32);
  EXPECT_EQ(g->get_float("t.f32"), 1.5);
  EXPECT_EQ(g->get_int("t.f32"), std::nullopt);
  EXPECT_EQ(g->get_bool("t.bool"), true);
  EXPECT_EQ(g->get_string("t.string"), "h\xc3\xa9llo");
  EXPECT_EQ(g->get_string("t.u8"), std::nullopt);
  // 2^63 does not fit an int64: the raw value is kept, the typed look-up says so.
  EXPECT_EQ(g->find("t.u64")->u, uint64_t{1} << 63);
  EXPECT_EQ(g->get_int("t.u64"), std::nullopt);
  EXPECT_EQ(g->get_int("t.i64"), -(int64_t{1} << 60));
  EXPECT_EQ(g->get_float("t.f64"), 1e300);
  EXPECT_EQ(g->get_float("t.i16"), -30000.0);

  const GgufValue* a = g->find("t.a_i32");
  ASSERT_EQ(a->type, GgufValueType::array);
  EXPECT_EQ(a->elem_type, GgufValueType::i32);
  ASSERT_EQ(a->size(), 3u);
  EXPECT_EQ(a->item(1).as_int(), -8);
  const GgufValue* as = g->find("t.a_str");
  ASSERT_EQ(as->size(), 2u);
  EXPECT_EQ(as->item(0).str, "");
  EXPECT_EQ(as->item(1).str, "ab");
  const GgufValue* ab = g->find("t.a_bool");
  ASSERT_EQ(ab->size(), 2u);
  EXPECT_EQ(ab->item(0).type, GgufValueType::boolean);
  EXPECT_EQ(ab->item(1).as_int(), 1);
  EXPECT_TRUE(g->find("t.a_empty")->size() == 0);
  EXPECT_EQ(g->find("t.a_empty")->elem_type, GgufValueType::f64);
  const GgufValue* n = g->find("t.a_nested");
  ASSERT_EQ(n->elem_type, GgufValueType::array);
  ASSERT_EQ(n->size(), 2u);
  EXPECT_EQ(n->item(0).elem_type, GgufValueType::u8);
  ASSERT_EQ(n->item(0).size(), 2u);
  EXPECT_EQ(n->item(0).item(1).as_int(), 2);
  ASSERT_EQ(n->item(1).size(), 1u);
  EXPECT_EQ(n->item(1).item(0).str, "x");
  EXPECT_EQ(g->find("t.missing"), nullptr);
  EXPECT_TRUE(g->tensors().empty());
}

// Four levels of arrays are accepted (the limit); the damage test checks that five are refused.
TEST(GgufFile, ReadsArraysNestedFourDeep) {
  std::string v = array(kU8, 1, le<uint8_t>(42));
  for (int level = 1; level < 4; ++level) v = array(kArray, 1, v);
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(GgufBuilder().kv("deep", kArray, v).build(), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  const GgufValue* x = g->find("deep");
  for (int level = 1; level < 4; ++level) {
    ASSERT_EQ(x->elem_type, GgufValueType::array);
    ASSERT_EQ(x->size(), 1u);
    x = &x->items[0];
  }
  ASSERT_EQ(x->size(), 1u);
  EXPECT_EQ(x->item(0).as_int(), 42);
}

// Every supported tensor type with its byte size, placed at offsets aligned to general.alignment.
TEST(GgufFile, ReadsEverySupportedTensorTypeAtTheDeclaredAlignment) {
  struct Case {
    const char* name;
    std::vector<uint64_t> ne;
    uint32_t type;
    TensorType expect;
    uint64_t n_bytes;
    uint64_t n_rows;
  };
  const std::vector<Case> cases = {
      {"f32", {8, 3}, kTF32, TensorType::f32, 8 * 3 * 4, 3},
      {"f16", {16}, kTF16, TensorType::f16, 16 * 2, 1},
      {"bf16", {4, 2}, kTBF16, TensorType::bf16, 4 * 2 * 2, 2},
      {"q8_0", {64, 2}, kTQ8_0, TensorType::q8_0, 4 * 34, 2},
      {"q4_0", {32, 3}, kTQ4_0, TensorType::q4_0, 3 * 18, 3},
      {"f32_4d", {2, 3, 4, 5}, kTF32, TensorType::f32, 120 * 4, 60},
      // The other llama.cpp types, by ggml id, with ggml's block sizes (ggml-common.h).
      {"q4_1", {64, 2}, 3, TensorType::q4_1, 4 * 20, 2},
      {"q5_0", {32, 3}, 6, TensorType::q5_0, 3 * 22, 3},
      {"q5_1", {96, 1}, 7, TensorType::q5_1, 3 * 24, 1},
      {"q2_k", {256, 2}, 10, TensorType::q2_k, 2 * 84, 2},
      {"q3_k", {512, 1}, 11, TensorType::q3_k, 2 * 110, 1},
      {"q4_k", {256, 3}, kTQ4_K, TensorType::q4_k, 3 * 144, 3},
      {"q5_k", {256, 1}, 13, TensorType::q5_k, 176, 1},
      {"q6_k", {256, 2}, 14, TensorType::q6_k, 2 * 210, 2},
      {"iq4_nl", {64, 1}, 20, TensorType::iq4_nl, 2 * 18, 1},
      {"iq4_xs", {256, 2}, 23, TensorType::iq4_xs, 2 * 136, 2},
  };
  for (uint32_t version : {2u, 3u}) {
    GgufBuilder b;
    b.version(version).layout_alignment(64).kv("general.alignment", kU32, le<uint32_t>(64));
    for (const Case& c : cases) b.tensor(c.name, c.ne, c.type, c.n_bytes);
    const std::string bytes = b.build();
    std::unique_ptr<GgufFile> g;
    Status s = parse_bytes(bytes, &g);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(g->version(), version);
    EXPECT_EQ(g->alignment(), 64u);
    EXPECT_EQ(g->data_offset() % 64, 0u);
    ASSERT_EQ(g->tensors().size(), cases.size());
    for (size_t k = 0; k < cases.size(); ++k) {
      const GgufTensorInfo& t = g->tensors()[k];
      const Case& c = cases[k];
      EXPECT_EQ(t.name, c.name);
      EXPECT_EQ(t.type, c.expect) << c.name;
      EXPECT_EQ(t.n_dims, c.ne.size()) << c.name;
      EXPECT_EQ(t.n_bytes, c.n_bytes) << c.name;
      EXPECT_EQ(t.n_rows(), c.n_rows) << c.name;
      EXPECT_EQ(t.row_length(), c.ne[0]) << c.name;
      EXPECT_EQ(t.offset, b.natural_offset(k)) << c.name;
      EXPECT_EQ(t.offset % 64, 0u) << c.name;
      ASSERT_EQ(t.data, g->file().data() + g->data_offset() + t.offset);
      for (uint64_t i = 0; i < t.n_bytes; ++i) ASSERT_EQ(t.data[i], GgufBuilder::data_byte(k, i)) << c.name;
    }
  }
}

TEST(GgufFile, AlignmentMayBeAnyIntegerType) {
  GgufBuilder b;
  b.layout_alignment(128).kv("general.alignment", kU64, le<uint64_t>(128)).tensor("w", {32}, kTF32, 128);
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(b.build(), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->alignment(), 128u);
  EXPECT_EQ(g->data_offset() % 128, 0u);
}

// A vocabulary-only file has no data section and may end right after its metadata.
TEST(GgufFile, ReadsFileWithoutTensorsOrPadding) {
  const std::string bytes = GgufBuilder().kv("tokenizer.ggml.model", kString, str("llama")).build();
  ASSERT_NE(bytes.size() % 32, 0u);
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(bytes, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->data_offset(), bytes.size());
  EXPECT_TRUE(g->tensors().empty());
}

}  // namespace
}  // namespace lmrt
