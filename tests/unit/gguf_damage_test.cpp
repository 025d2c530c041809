// GGUF reader on damaged input: copies of the real stories260K.gguf with one field broken (found by
// a test-side walker), truncations, and synthetic files. Every case must come back as a Status
// naming what is wrong; in the ASan/UBSan build a crash, an out-of-bounds read or a huge
// allocation fails the test on its own.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <limits>

#include "gguf_test_bytes.h"
#include "runtime/model/gguf_file.h"
#include "test_support.h"

namespace lmrt {
namespace {

using namespace test::gguf;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();

std::string join(std::initializer_list<std::string> words) {
  std::string s;
  for (const std::string& w : words) s += " [" + w + "]";
  return s;
}

// Parses `bytes` and checks the refusal: code, every word in the message, no file handed out.
::testing::AssertionResult refused(const std::string& bytes, Code code, std::initializer_list<std::string> words) {
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(bytes, &g);
  if (s.ok()) return ::testing::AssertionFailure() << "parsed, but expected a refusal with" << join(words);
  if (g != nullptr) return ::testing::AssertionFailure() << "refused but still returned a file";
  if (s.code() != code)
    return ::testing::AssertionFailure() << "code " << static_cast<int>(s.code()) << " instead of "
                                         << static_cast<int>(code) << ": " << s.message();
  for (const std::string& w : words)
    if (s.message().find(w) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks '" << w << "': " << s.message();
  return ::testing::AssertionSuccess();
}

// A message that says the file ended too soon.
bool says_truncated(const std::string& m) {
  for (const char* w : {"truncated", "past the end", "larger than the file", "only "})
    if (m.find(w) != std::string::npos) return true;
  return false;
}

class GgufDamage : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    original_ = new std::string(test::read_file(test::model_path("stories260K.gguf")));
    layout_ = new GgufLayout(walk_gguf(*original_));
  }
  static void TearDownTestSuite() {
    delete layout_;
    delete original_;
  }
  static const std::string& original() { return *original_; }
  static const GgufLayout& layout() { return *layout_; }
  // A copy of the original with one value overwritten.
  template <typename T>
  static std::string with(size_t at, T v) {
    std::string b = original();
    put(b, at, v);
    return b;
  }
  static uint64_t tensor_bytes(const GgufLayout::Tensor& t) {  // stories260K is all F32
    uint64_t n = 4;
    for (uint32_t d = 0; d < t.n_dims; ++d) n *= get<uint64_t>(original(), t.dims_at + 8 * d);
    return n;
  }

 private:
  static std::string* original_;
  static GgufLayout* layout_;
};
std::string* GgufDamage::original_ = nullptr;
GgufLayout* GgufDamage::layout_ = nullptr;

TEST_F(GgufDamage, WalkerAgreesWithTheReader) {
  std::unique_ptr<GgufFile> g;
  Status s = parse_bytes(original(), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(layout().kvs.size(), g->metadata().size());
  ASSERT_EQ(layout().tensors.size(), g->tensors().size());
  EXPECT_EQ(layout().data_offset, g->data_offset());
  EXPECT_EQ(layout().data_offset + tensor_bytes(layout().tensors.back()) + layout().tensors.back().offset,
            original().size());
}

TEST_F(GgufDamage, TruncatedAnywhereBeforeTheData) {
  std::vector<size_t> cuts;
  for (size_t c = 0; c < 400; ++c) cuts.push_back(c);
  for (size_t c = 400; c < layout().data_offset; c += 7) cuts.push_back(c);
  for (const auto& kv : layout().kvs)
    cuts.insert(cuts.end(), {kv.key_len_at, kv.type_at, kv.value_at, kv.value_at + 1});
  for (const auto& t : layout().tensors) cuts.insert(cuts.end(), {t.name_len_at, t.n_dims_at, t.type_at, t.offset_at});
  cuts.insert(cuts.end(), {layout().table_end, layout().data_offset - 1});
  for (size_t cut : cuts) {
    std::unique_ptr<GgufFile> g;
    Status s = parse_bytes(original().substr(0, cut), &g);
    ASSERT_EQ(s.code(), Code::bad_format) << "cut at " << cut << ": " << s.message();
    ASSERT_TRUE(says_truncated(s.message())) << "cut at " << cut << ": " << s.message();
    ASSERT_EQ(g, nullptr);
  }
}

// Cut inside the data section: the first tensor whose data no longer fits is named.
TEST_F(GgufDamage, TruncatedInsideTheData) {
  const size_t d = layout().data_offset;
  std::vector<size_t> cuts = {d, d + 1, original().size() - 1, original().size() - 4096};
  for (const auto& t : layout().tensors) cuts.insert(cuts.end(), {d + t.offset, d + t.offset + tensor_bytes(t) - 1});
  for (size_t cut : cuts) {
    std::string expect_name;
    for (const auto& t : layout().tensors)
      if (t.offset + tensor_bytes(t) > cut - d) {
        expect_name = "tensor '" + t.name + "'";
        break;
      }
    ASSERT_TRUE(refused(original().substr(0, cut), Code::bad_format, {expect_name, "runs past the end of the file"}))
        << "cut at " << cut;
  }
}

// The same through real files on disk, mapped and read.
TEST_F(GgufDamage, TruncatedFilesOnDisk) {
  const std::string empty = test::write_temp_file("gguf-damage-empty.gguf", "");
  const std::string header = test::write_temp_file("gguf-damage-header.gguf", original().substr(0, 1000));
  const std::string data = test::write_temp_file("gguf-damage-data.gguf", original().substr(0, original().size() - 3));
  for (bool use_mmap : {true, false}) {
    std::unique_ptr<GgufFile> g;
    Status s = GgufFile::open(empty, use_mmap, &g);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_NE(s.message().find("not a GGUF file: only 0 bytes"), std::string::npos) << s.message();
    s = GgufFile::open(header, use_mmap, &g);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_TRUE(says_truncated(s.message())) << s.message();
    EXPECT_NE(s.message().find("at byte"), std::string::npos) << s.message();
    s = GgufFile::open(data, use_mmap, &g);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_NE(s.message().find("tensor '" + layout().tensors.back().name + "'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(data), std::string::npos) << s.message();
    EXPECT_EQ(g, nullptr);
  }
  for (const std::string& p : {empty, header, data}) std::remove(p.c_str());
}

TEST_F(GgufDamage, WrongMagic) {
  auto magic = [&](const char* m) { return std::string(m, 4) + original().substr(4); };
  EXPECT_TRUE(refused(magic("GGUG"), Code::bad_format, {"not a GGUF file", "first 4 bytes"}));
  EXPECT_TRUE(refused(magic("\0\0\0\0"), Code::bad_format, {"not a GGUF file"}));
  EXPECT_TRUE(refused(magic("tjgg"), Code::bad_format, {"GGJT"}));
  EXPECT_TRUE(refused(magic("fmgg"), Code::bad_format, {"GGMF"}));
  EXPECT_TRUE(refused(magic("lmgg"), Code::bad_format, {"unversioned GGML"}));
  EXPECT_TRUE(refused(magic("\177ELF"), Code::bad_format, {"ELF"}));
  EXPECT_TRUE(refused(magic("PK\x03\x04"), Code::bad_format, {"zip"}));
  EXPECT_TRUE(refused(le<uint64_t>(2) + "{}" + std::string(100, ' '), Code::bad_format, {"safetensors"}));
  EXPECT_TRUE(refused("GG", Code::bad_format, {"only 2 bytes"}));
}

TEST_F(GgufDamage, Versions) {
  EXPECT_TRUE(refused(with<uint32_t>(4, 0), Code::bad_format, {"unknown GGUF version 0"}));
  EXPECT_TRUE(refused(with<uint32_t>(4, 1), Code::bad_format, {"GGUF version 1", "not supported"}));
  EXPECT_TRUE(refused(with<uint32_t>(4, 4), Code::bad_format, {"unknown GGUF version 4"}));
  EXPECT_TRUE(refused(with<uint32_t>(4, kU32Max), Code::bad_format, {"unknown GGUF version 4294967295"}));
  // Versions 2 and 3 written big-endian.
  EXPECT_TRUE(refused(with<uint32_t>(4, 3u << 24), Code::unsupported, {"big-endian"}));
  EXPECT_TRUE(refused(with<uint32_t>(4, 2u << 24), Code::unsupported, {"big-endian"}));
  // v2 and v3 share the layout, so the same file marked v2 still reads.
  std::unique_ptr<GgufFile> g;
  ASSERT_TRUE(parse_bytes(with<uint32_t>(4, 2), &g).ok());
  EXPECT_EQ(g->version(), 2u);
}

TEST_F(GgufDamage, HugeCounts) {
  for (uint64_t n : {kU64Max, uint64_t{1} << 40, uint64_t{original().size()}}) {
    EXPECT_TRUE(
        refused(with<uint64_t>(8, n), Code::bad_format, {"tensor count " + std::to_string(n), "larger than the file"}));
    EXPECT_TRUE(refused(with<uint64_t>(16, n), Code::bad_format,
                        {"metadata count " + std::to_string(n), "larger than the file"}));
  }
}

TEST_F(GgufDamage, OffByOneCounts) {
  const uint64_t nt = layout().n_tensors, nk = layout().n_kv;
  // One tensor too many: the zero padding after the table is read as a name.
  EXPECT_TRUE(
      refused(with<uint64_t>(8, nt + 1), Code::bad_format, {"tensor " + std::to_string(nt) + ": bad name length (0)"}));
  // One too few: the data section then starts early and its tail belongs to no tensor.
  EXPECT_TRUE(refused(with<uint64_t>(8, nt - 1), Code::bad_format,
                      {"belong to no tensor", "tensor count " + std::to_string(nt - 1) + " wrong"}));
  // One key too many: the first tensor info is read as a key-value, the rest of the table shifts.
  EXPECT_TRUE(refused(with<uint64_t>(16, nk + 1), Code::bad_format, {"damaged GGUF file"}));
  // One key too few: the last key-value is read as the first tensor info.
  EXPECT_TRUE(refused(with<uint64_t>(16, nk - 1), Code::bad_format,
                      {"damaged GGUF file", "tensor '" + layout().kvs.back().key + "'"}));
  EXPECT_TRUE(refused(with<uint64_t>(16, 0), Code::bad_format, {"damaged GGUF file"}));
}

TEST_F(GgufDamage, KeyLengths) {
  for (size_t k = 0; k < layout().kvs.size(); ++k) {
    const auto& kv = layout().kvs[k];
    const std::string key = "metadata key " + std::to_string(k);
    for (uint64_t len : {kU64Max, kU64Max - 7, uint64_t{original().size()}, uint64_t{1} << 32})
      EXPECT_TRUE(
          refused(with<uint64_t>(kv.key_len_at, len), Code::bad_format, {key + " runs past the end of the file"}));
    EXPECT_TRUE(refused(with<uint64_t>(kv.key_len_at, 0), Code::bad_format, {key + " has a bad length (0)"}));
    // A key a byte short or long makes everything after it misread; it must still fail.
    EXPECT_TRUE(refused(with<uint64_t>(kv.key_len_at, kv.key.size() - 1), Code::bad_format, {"damaged GGUF file"}))
        << kv.key;
    EXPECT_TRUE(refused(with<uint64_t>(kv.key_len_at, kv.key.size() + 1), Code::bad_format, {"damaged GGUF file"}))
        << kv.key;
  }
}

TEST_F(GgufDamage, StringValueLengths) {
  const auto& arch = layout().kv("general.architecture");
  ASSERT_EQ(arch.type, kString);
  const auto& tokens = layout().kv("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.elem_type, kString);
  for (size_t at : {arch.value_at, tokens.first_elem_at,
                    tokens.first_elem_at + 8 + get<uint64_t>(original(), tokens.first_elem_at)})
    for (uint64_t len : {kU64Max, uint64_t{original().size()}, uint64_t{1} << 40})
      EXPECT_TRUE(refused(with<uint64_t>(at, len), Code::bad_format, {"string length runs past the end of the file"}));
}

TEST_F(GgufDamage, ValueTypes) {
  for (const auto& kv : layout().kvs)
    for (uint32_t type : {13u, 255u, 1u << 16, kU32Max})
      EXPECT_TRUE(refused(with<uint32_t>(kv.type_at, type), Code::bad_format,
                          {"key '" + kv.key + "' has value type " + std::to_string(type) + ", not a GGUF type"}));
  // Every other valid type misreads the value; where that cannot be noticed the file may parse,
  // but nothing may crash.
  for (const auto& kv : layout().kvs)
    for (uint32_t type = 0; type <= kF64; ++type) {
      std::unique_ptr<GgufFile> g;
      Status s = parse_bytes(with<uint32_t>(kv.type_at, type), &g);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Code::bad_format) << s.message();
      }
    }
}

TEST_F(GgufDamage, ArrayElementTypesAndCounts) {
  int arrays = 0;
  for (const auto& kv : layout().kvs) {
    if (kv.type != kArray) continue;
    ++arrays;
    for (uint32_t et : {13u, kU32Max})
      EXPECT_TRUE(refused(with<uint32_t>(kv.elem_type_at, et), Code::bad_format,
                          {"array element type " + std::to_string(et) + " is not a GGUF type"}));
    // Huge counts are refused before anything is allocated for them.
    for (uint64_t n : {kU64Max, uint64_t{1} << 62, (kU64Max / 8) + 2, uint64_t{original().size()}})
      EXPECT_TRUE(refused(with<uint64_t>(kv.count_at, n), Code::bad_format,
                          {"array of " + std::to_string(n) + " elements is larger than the file"}));
    // Off by one: the next key is read as an element, or the last element as a key.
    for (uint64_t n : {kv.count + 1, kv.count - 1})
      EXPECT_TRUE(refused(with<uint64_t>(kv.count_at, n), Code::bad_format, {"damaged GGUF file"}))
          << kv.key << " " << n;
    for (uint32_t et = 0; et <= kF64; ++et) {
      std::unique_ptr<GgufFile> g;
      Status s = parse_bytes(with<uint32_t>(kv.elem_type_at, et), &g);
      if (!s.ok()) {
        EXPECT_EQ(s.code(), Code::bad_format) << s.message();
      }
    }
  }
  EXPECT_GE(arrays, 3);  // tokens, scores, token types
}

TEST_F(GgufDamage, TensorNameLengths) {
  for (size_t t : {size_t{0}, size_t{17}, layout().tensors.size() - 1}) {
    const size_t at = layout().tensors[t].name_len_at;
    const std::string idx = "tensor " + std::to_string(t);
    for (uint64_t len : {kU64Max, uint64_t{original().size()}})
      EXPECT_TRUE(refused(with<uint64_t>(at, len), Code::bad_format, {idx + ": name runs past the end of the file"}));
    EXPECT_TRUE(refused(with<uint64_t>(at, 0), Code::bad_format, {idx + ": bad name length (0)"}));
  }
}

TEST_F(GgufDamage, DuplicateTensorName) {
  // blk.0.attn_q.weight and blk.0.attn_k.weight have names of the same length.
  const auto& q = layout().tensor("blk.0.attn_q.weight");
  std::string b = original();
  b.replace(q.name_len_at + 8, q.name.size(), "blk.0.attn_k.weight");
  EXPECT_TRUE(refused(b, Code::bad_format, {"duplicate tensor 'blk.0.attn_k.weight'"}));
}

TEST_F(GgufDamage, TensorDimensions) {
  const auto& t = layout().tensor("blk.2.ffn_down.weight");  // 172 x 64
  ASSERT_EQ(t.n_dims, 2u);
  const std::string name = "tensor 'blk.2.ffn_down.weight'";
  for (uint32_t n : {0u, 5u, 64u, kU32Max})
    EXPECT_TRUE(refused(with<uint32_t>(t.n_dims_at, n), Code::bad_format,
                        {name + " has " + std::to_string(n) + " dimensions (1 to 4 allowed)"}));
  // One dimension more or less shifts the type and offset: still refused.
  // (The misread type id may also be refused as an unsupported type.)
  for (uint32_t n : {1u, 3u, 4u}) {
    std::unique_ptr<GgufFile> g;
    Status s = parse_bytes(with<uint32_t>(t.n_dims_at, n), &g);
    EXPECT_FALSE(s.ok()) << n;
    EXPECT_NE(s.message().find(name), std::string::npos) << s.message();
  }
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at, 0), Code::bad_format, {name + " has a zero dimension"}));
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at + 8, 0), Code::bad_format, {name + " has a zero dimension"}));
  // ne0 * ne1 overflows 64 bits.
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at + 8, uint64_t{1} << 60), Code::bad_format,
                      {name + ": element count overflows"}));
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at, kU64Max), Code::bad_format, {name + ": element count overflows"}));
  // The element count fits but its size in bytes does not.
  std::string b = with<uint64_t>(t.dims_at, uint64_t{1} << 62);
  put<uint64_t>(b, t.dims_at + 8, 1);
  EXPECT_TRUE(refused(b, Code::bad_format, {name + ": byte size overflows"}));
  // Large but representable: the data cannot be in the file.
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at + 8, uint64_t{1} << 40), Code::bad_format,
                      {name, "runs past the end of the file"}));
  // A row one element longer: the data grows into the next tensor.
  EXPECT_TRUE(refused(with<uint64_t>(t.dims_at, 173), Code::bad_format, {"'blk.2.ffn_down.weight'", "overlap"}));
}

TEST_F(GgufDamage, TensorTypes) {
  const auto& t = layout().tensor("blk.1.ffn_down.weight");  // rows of 172
  const std::string name = "tensor 'blk.1.ffn_down.weight'";
  EXPECT_TRUE(refused(with<uint32_t>(t.type_at, 16), Code::unsupported,
                      {name + " has type IQ2_XXS (ggml type 16)", "does not read", "Q4_K", "IQ4_XS"}));
  EXPECT_TRUE(refused(with<uint32_t>(t.type_at, 15), Code::unsupported, {name + " has type Q8_K"}));
  EXPECT_TRUE(refused(with<uint32_t>(t.type_at, 1000), Code::unsupported, {name + " has unknown type id 1000"}));
  EXPECT_TRUE(
      refused(with<uint32_t>(t.type_at, kU32Max), Code::unsupported, {name + " has unknown type id 4294967295"}));
  for (uint32_t type : {uint32_t{kTQ8_0}, uint32_t{kTQ4_0}, uint32_t{3}})  // Q8_0, Q4_0, Q4_1
    EXPECT_TRUE(refused(with<uint32_t>(t.type_at, type), Code::bad_format,
                        {name + ": row length 172 is not a multiple of", "block size 32"}));
  EXPECT_TRUE(refused(with<uint32_t>(t.type_at, kTQ4_K), Code::bad_format,
                      {name + ": row length 172 is not a multiple of Q4_K's block size 256"}));
}

TEST_F(GgufDamage, TensorOffsets) {
  const auto& t = layout().tensors[10];
  const std::string name = "tensor '" + t.name + "'";
  for (uint64_t off : {t.offset + 1, t.offset + 16, t.offset + 4})
    EXPECT_TRUE(refused(with<uint64_t>(t.offset_at, off), Code::bad_format,
                        {name + ": data offset " + std::to_string(off) + " is not aligned to 32"}));
  const uint64_t data_size = original().size() - layout().data_offset;
  // Past the end, and so large that offset + size wraps around.
  for (uint64_t off : {data_size, data_size + 32 * 1000, kU64Max - 31, uint64_t{1} << 63})
    EXPECT_TRUE(refused(with<uint64_t>(t.offset_at, off), Code::bad_format, {name, "runs past the end of the file"}));
  // Aligned and inside the file but on top of another tensor.
  EXPECT_TRUE(refused(with<uint64_t>(t.offset_at, layout().tensors[3].offset), Code::bad_format, {t.name, "overlap"}));
  EXPECT_TRUE(refused(with<uint64_t>(t.offset_at, t.offset + 32), Code::bad_format, {t.name, "overlap"}));
}

TEST_F(GgufDamage, TrailingBytes) {
  EXPECT_TRUE(refused(original() + std::string(32, '\0'), Code::bad_format,
                      {"32 bytes at the end of the file belong to no tensor"}));
  EXPECT_TRUE(refused(original() + "x", Code::bad_format, {"1 bytes at the end"}));
}

// Synthetic files for what the real one does not have.
TEST(GgufDamageSynthetic, ArraysNestedTooDeep) {
  std::string v = array(kU8, 1, le<uint8_t>(1));
  for (int level = 1; level < 5; ++level) v = array(kArray, 1, v);
  EXPECT_TRUE(refused(GgufBuilder().kv("deep", kArray, v).build(), Code::bad_format, {"arrays nested deeper than 4"}));
  // Deep nesting with a huge inner count is refused by depth or size, never allocated.
  std::string w = array(kU8, kU64Max, "");
  for (int level = 1; level < 3; ++level) w = array(kArray, 1, w);
  EXPECT_TRUE(
      refused(GgufBuilder().kv("deep", kArray, w).build(), Code::bad_format, {"elements is larger than the file"}));
}

TEST(GgufDamageSynthetic, ArrayCountJustPastTheEnd) {
  // The count passes the size bound (8 bytes per string) but the strings end first.
  EXPECT_TRUE(refused(GgufBuilder().kv("a", kArray, array(kString, 2, str("abcdefgh"))).build(), Code::bad_format,
                      {"string length runs past the end of the file"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("a", kArray, array(kF64, 1, "xy")).build(), Code::bad_format,
                      {"array of 1 elements is larger than the file"}));
}

TEST(GgufDamageSynthetic, BadBool) {
  EXPECT_TRUE(refused(GgufBuilder().kv("b", kBool, le<uint8_t>(2)).build(), Code::bad_format,
                      {"bool value 2 is neither 0 nor 1"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("b", kArray, array(kBool, 2, "\x01\xff")).build(), Code::bad_format,
                      {"bool value 255 is neither 0 nor 1"}));
}

TEST(GgufDamageSynthetic, TruncatedScalars) {
  const std::pair<uint32_t, const char*> cases[] = {{kU8, "u8"},   {kI8, "i8"},   {kU16, "u16"}, {kI16, "i16"},
                                                    {kU32, "u32"}, {kI32, "i32"}, {kF32, "f32"}, {kBool, "bool"},
                                                    {kU64, "u64"}, {kI64, "i64"}, {kF64, "f64"}};
  for (const auto& [type, name] : cases)
    EXPECT_TRUE(refused(GgufBuilder().kv("x", type, "").build(), Code::bad_format,
                        {std::string("truncated ") + name + " value"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("x", kArray, "").build(), Code::bad_format, {"truncated array type"}));
  EXPECT_TRUE(
      refused(GgufBuilder().kv("x", kArray, le<uint32_t>(kU8)).build(), Code::bad_format, {"truncated array length"}));
}

TEST(GgufDamageSynthetic, DuplicateKeysAndTensorNames) {
  EXPECT_TRUE(refused(GgufBuilder()
                          .kv("a.b", kU32, le<uint32_t>(1))
                          .kv("a.c", kU32, le<uint32_t>(1))
                          .kv("a.b", kString, str("x"))
                          .build(),
                      Code::bad_format, {"duplicate metadata key 'a.b'"}));
  EXPECT_TRUE(refused(GgufBuilder().tensor("w", {32}, kTF32, 128).tensor("w", {32}, kTF32, 128).build(),
                      Code::bad_format, {"duplicate tensor 'w'"}));
}

TEST(GgufDamageSynthetic, BadAlignment) {
  for (uint32_t a : {0u, 1u, 3u, 4u, 24u, 1u << 17, 1u << 31, kU32Max}) {
    GgufBuilder b;
    b.kv("general.alignment", kU32, le<uint32_t>(a)).tensor("w", {32}, kTF32, 128);
    EXPECT_TRUE(refused(b.build(), Code::bad_format,
                        {"general.alignment " + std::to_string(a) + " is not a power of two from 8 to 65536"}));
  }
  EXPECT_TRUE(refused(GgufBuilder().kv("general.alignment", kI32, le<int32_t>(-32)).build(), Code::bad_format,
                      {"general.alignment -32 is not a power of two"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("general.alignment", kU64, le<uint64_t>(kU64Max)).build(), Code::bad_format,
                      {"general.alignment 18446744073709551615 is not a power of two"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("general.alignment", kString, str("32")).build(), Code::bad_format,
                      {"general.alignment is a string, not an integer"}));
  EXPECT_TRUE(refused(GgufBuilder().kv("general.alignment", kBool, le<uint8_t>(1)).build(), Code::bad_format,
                      {"general.alignment is a bool, not an integer"}));
}

// A declared alignment is honoured: tensors laid out for 32 do not satisfy a declared 64.
TEST(GgufDamageSynthetic, DeclaredAlignmentIsEnforced) {
  GgufBuilder b;
  b.kv("general.alignment", kU32, le<uint32_t>(64)).tensor("a", {8}, kTF32, 32).tensor("b", {8}, kTF32, 32);
  EXPECT_TRUE(refused(b.build(), Code::bad_format, {"tensor 'b': data offset 32 is not aligned to 64"}));
}

TEST(GgufDamageSynthetic, DataSectionPastTheEnd) {
  const std::string bytes = GgufBuilder().tensor("w", {8}, kTF32, 32).build();
  const GgufLayout layout = walk_gguf(bytes);
  ASSERT_NE(layout.table_end % 32, 0u);  // there is padding to cut into
  EXPECT_TRUE(refused(bytes.substr(0, layout.table_end + 1), Code::bad_format, {"data section starts past the end"}));
}

// A header that claims a huge file must not make the reader allocate for it. A sparse file of
// 2 TiB makes every count plausible against the file size; before the reader grew its vectors
// as it parsed, these asked for terabytes (ASan aborts on that; without it the process dies).
class GgufSparseFile : public ::testing::Test {
 protected:
  static constexpr uint64_t kSize = uint64_t{1} << 41;
  std::string make(const std::string& name, const std::string& head) {
    path_ = test::write_temp_file(name, head);
    const int fd = ::open(path_.c_str(), O_RDWR);
    if (fd < 0) return "";
    const bool ok = ::ftruncate(fd, static_cast<off_t>(kSize)) == 0;
    ::close(fd);
    return ok ? path_ : "";
  }
  void TearDown() override {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string path_;
};

TEST_F(GgufSparseFile, HugeCountsAllocateNothingUpFront) {
  const std::string head = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(kSize / 16);
  const std::string path = make("gguf-sparse-kv.gguf", head);
  if (path.empty()) GTEST_SKIP() << "no sparse files here";
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(path, true, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("metadata key 0 has a bad length (0)"), std::string::npos) << s.message();
}

TEST_F(GgufSparseFile, HugeTensorCountAllocatesNothingUpFront) {
  const std::string head = "GGUF" + le<uint32_t>(3) + le<uint64_t>(kSize / 32) + le<uint64_t>(0);
  const std::string path = make("gguf-sparse-tensors.gguf", head);
  if (path.empty()) GTEST_SKIP() << "no sparse files here";
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(path, true, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("tensor 0: bad name length (0)"), std::string::npos) << s.message();
}

// An array of 2^40 u8 fits the file's size, but its values would take 80 TB as GgufValues: the
// reader stops at its metadata value limit (set low here to keep the test fast: reaching the
// default of 4M values costs ~330 MB and seconds under ASan).
TEST_F(GgufSparseFile, HugeArrayStopsAtTheValueLimit) {
  const std::string head = "GGUF" + le<uint32_t>(3) + le<uint64_t>(0) + le<uint64_t>(1) + str("a") +
                           le<uint32_t>(kArray) + array(kU8, uint64_t{1} << 40, "");
  const std::string path = make("gguf-sparse-array.gguf", head);
  if (path.empty()) GTEST_SKIP() << "no sparse files here";
  std::unique_ptr<MappedFile> file;
  ASSERT_TRUE(MappedFile::open(path, true, &file).ok());
  GgufLimits limits;
  limits.max_metadata_values = 100000;
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::parse(std::move(file), limits, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("metadata holds more than 100000 values"), std::string::npos) << s.message();
}

TEST(GgufDamageSynthetic, NullArguments) {
  std::unique_ptr<GgufFile> g;
  EXPECT_EQ(GgufFile::parse(nullptr, &g).code(), Code::invalid_argument);
}

// The value limit counts every value, nested ones included: exactly at the limit parses.
TEST(GgufDamageSynthetic, MetadataValueLimitCountsEveryValue) {
  const std::string bytes = GgufBuilder()
                                .kv("a", kArray, array(kArray, 2, array(kU8, 3, "abc") + array(kString, 1, str("x"))))
                                .kv("b", kU32, le<uint32_t>(7))
                                .build();  // 1 + 2 + 3 + 1 + 1 = 8 values
  GgufLimits limits;
  limits.max_metadata_values = 8;
  std::unique_ptr<GgufFile> g;
  Status s =
      GgufFile::parse(MappedFile::from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), limits, &g);
  EXPECT_TRUE(s.ok()) << s.message();
  limits.max_metadata_values = 7;
  s = GgufFile::parse(MappedFile::from_bytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), limits, &g);
  EXPECT_EQ(s.code(), Code::bad_format);
  EXPECT_NE(s.message().find("metadata holds more than 7 values"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace lmrt
