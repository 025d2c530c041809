#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "abi/api_support.h"
#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/spm_tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/utf8.h"
#include "test_support.h"
#include "vocab_vectors.h"

namespace lmrt {
namespace {

using Ids = std::vector<int32_t>;

std::string vocab_dir() { return test::shared_dir() + "/vocab"; }

// Builds the tokenizer a vocabulary file asks for, from its metadata alone.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  std::unique_ptr<GgufFile> gguf;
  Status s = GgufFile::open(path, true, &gguf);
  EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<Tokenizer> tok;
  s = Tokenizer::from_gguf(*gguf, &tok);
  EXPECT_TRUE(s.ok()) << path << ": " << s.message();
  return tok;
}

std::string decode(const Tokenizer& tok, const Ids& ids) {
  std::string text, piece;
  for (int32_t id : ids) {
    Status s = tok.token_to_bytes(id, &piece);
    EXPECT_TRUE(s.ok()) << s.message();
    text += piece;
  }
  return text;
}

Ids tokenize(const Tokenizer& tok, std::string_view text, bool add_bos = false, bool parse_special = false) {
  Ids ids;
  Status s = tok.encode(text, add_bos, parse_special, &ids);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids;
}

class LlamaSpm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = load_tokenizer(vocab_dir() + "/llama-spm.gguf").release(); }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(tok_, nullptr); }
  static Tokenizer* tok_;
};
Tokenizer* LlamaSpm::tok_ = nullptr;

TEST_F(LlamaSpm, VocabularyMetadata) {
  EXPECT_EQ(tok_->n_vocab(), 32000);
  EXPECT_EQ(tok_->bos(), 1);
  EXPECT_EQ(tok_->eos(), 2);
  EXPECT_EQ(tok_->vocab().unk_id, 0);
  EXPECT_TRUE(tok_->vocab().add_bos);
  EXPECT_FALSE(tok_->vocab().add_eos);
  EXPECT_EQ(tok_->token_text(1), "<s>");
  EXPECT_EQ(tok_->token_text(2), "</s>");
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_FALSE(tok_->is_eog(1));
  EXPECT_FALSE(tok_->is_eog(15043));
  EXPECT_TRUE(tok_->is_control(1));
  EXPECT_FALSE(tok_->is_control(15043));
  EXPECT_EQ(tok_->token_text(-1), "");
  EXPECT_EQ(tok_->token_text(32000), "");
}

TEST_F(LlamaSpm, DecodeRoundTripsEveryVector) {
  const std::vector<std::string> inputs =
      test::parse_vocab_inp(test::read_file(vocab_dir() + "/ggml-vocab-llama-spm.gguf.inp"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string text = decode(*tok_, tokenize(*tok_, inputs[i]));
    if (!inputs[i].empty()) {
      ASSERT_FALSE(text.empty()) << "vector " << i;
      EXPECT_EQ(text[0], ' ') << "vector " << i;
      text.erase(0, 1);
    }
    EXPECT_EQ(text, inputs[i]) << "vector " << i;
  }
}

TEST_F(LlamaSpm, AddsBosOnRequest) {
  EXPECT_EQ(tokenize(*tok_, "Hello world", /*add_bos=*/true), (Ids{1, 15043, 3186}));
  EXPECT_EQ(tokenize(*tok_, "", /*add_bos=*/true), (Ids{1}));
  EXPECT_EQ(tokenize(*tok_, ""), Ids{});
}

TEST_F(LlamaSpm, FallsBackToByteTokens) {
  // Neither the llama emoji nor this rare CJK ideograph (U+2A6A5) is in the Llama 2 vocabulary.
  for (const std::string ch : {"\xF0\x9F\xA6\x99", "\xF0\xAA\x9A\xA5"}) {
    const Ids ids = tokenize(*tok_, ch);
    ASSERT_EQ(ids.size(), 1 + ch.size());
    EXPECT_EQ(tok_->token_text(ids[0]), "\xE2\x96\x81");
    std::string bytes;
    for (size_t i = 1; i < ids.size(); ++i) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(ch[i - 1])));
      EXPECT_EQ(tok_->token_text(ids[i]), name);
      EXPECT_EQ(tok_->vocab().types[ids[i]], TokenType::byte);
      std::string piece;
      ASSERT_TRUE(tok_->token_to_bytes(ids[i], &piece).ok());
      bytes += piece;
    }
    EXPECT_EQ(bytes, ch);
  }
}

TEST_F(LlamaSpm, RefusesInvalidUtf8WithOffset) {
  const struct {
    std::string text;
    size_t offset;
  } cases[] = {
      {"abc\xFF"
       "def",
       3},
      {"ok\xC3(", 2},             // bad continuation
      {"\xC0\x80", 0},            // overlong NUL
      {"a\xED\xA0\x80", 1},       // UTF-16 surrogate
      {"ab\xF4\x90\x80\x80", 2},  // above U+10FFFF
      {"Hello \xE2\x96", 6},      // truncated at the end
      {"\xE2\x96\x81\x80", 3},    // stray continuation byte
  };
  for (const auto& c : cases) {
    Ids ids{42};
    Status s = tok_->encode(c.text, false, false, &ids);
    EXPECT_EQ(s.code(), Code::bad_utf8) << c.offset;
    EXPECT_NE(s.message().find("byte offset " + std::to_string(c.offset)), std::string::npos) << s.message();
    EXPECT_TRUE(ids.empty());
  }
  EXPECT_TRUE(validate_utf8("\xF0\x9F\xA6\x99 \xE2\x96\x81 \xC2\xBD \x7F").ok());
}

// Messages quote file contents: what reaches the C ABI is valid UTF-8 without NUL bytes, and bounded.
TEST(PrintableUtf8, ReplacesInvalidBytesAndNulAndCutsLongText) {
  EXPECT_EQ(lmrt::printable_utf8("token '\xE2\x96\x81ok'"), "token '\xE2\x96\x81ok'");  // valid: unchanged
  EXPECT_EQ(lmrt::printable_utf8(std::string("a\xFF\xC3(b", 5)), "a\xEF\xBF\xBD\xEF\xBF\xBD(b");
  EXPECT_EQ(lmrt::printable_utf8(std::string("x\0y", 3)), "x\\0y");
  const std::string cut = lmrt::printable_utf8(std::string(100000, 'z') + "\xE2\x96\x81", 1000);
  EXPECT_EQ(cut, std::string(1000, 'z') + "...");
  EXPECT_TRUE(lmrt::validate_utf8(lmrt::printable_utf8("\xED\xA0\x80 \xF4\x90\x80\x80 \xE2\x96")).ok());
}

// Every C ABI call reports its failure through guarded(), which makes the message printable.
TEST(PrintableUtf8, EveryAbiMessageIsPrintable) {
  std::string reported;
  const lmrt_status s =
      lmrt::abi::guarded([] { return lmrt::Error(Code::bad_format, std::string("token \"\0\xFF\"", 10)); },
                         [&](const std::string& m) { reported = m; });
  EXPECT_EQ(s, LMRT_ERR_BAD_FORMAT);
  EXPECT_EQ(reported, "token \"\\0\xEF\xBF\xBD\"");
}

TEST_F(LlamaSpm, ParsesSpecialTokensOnlyWhenAsked) {
  EXPECT_EQ(tokenize(*tok_, "<s>", false, /*parse_special=*/true), (Ids{1}));
  // llama.cpp prefixes a space to text that follows a special token.
  EXPECT_EQ(tokenize(*tok_, "<s>Hello world</s>", false, true), (Ids{1, 15043, 3186, 2}));
  const Ids plain = tokenize(*tok_, "<s>", false, /*parse_special=*/false);
  EXPECT_EQ(std::find(plain.begin(), plain.end(), 1), plain.end());
  EXPECT_EQ(decode(*tok_, plain), " <s>");
}

TEST_F(LlamaSpm, PieceOfEachTokenKind) {
  std::string piece = "stale";
  ASSERT_TRUE(tok_->token_to_bytes(15043, &piece).ok());  // "▁Hello"
  EXPECT_EQ(piece, " Hello");
  ASSERT_TRUE(tok_->token_to_bytes(1, &piece).ok());  // control
  EXPECT_EQ(piece, "");
  ASSERT_TRUE(tok_->token_to_bytes(0, &piece).ok());  // unknown
  EXPECT_EQ(piece, "");
  ASSERT_TRUE(tok_->token_to_bytes(3 + 0x0A, &piece).ok());  // <0x0A>
  EXPECT_EQ(piece, "\n");
  EXPECT_EQ(tok_->token_to_bytes(32000, &piece).code(), Code::invalid_argument);
  EXPECT_EQ(tok_->token_to_bytes(-1, &piece).code(), Code::invalid_argument);
}

TEST_F(LlamaSpm, LongInputRoundTripsQuickly) {
  // A quarter megabyte of mixed text: a quadratic merge would take minutes here.
  const std::vector<std::string> inputs =
      test::parse_vocab_inp(test::read_file(vocab_dir() + "/ggml-vocab-llama-spm.gguf.inp"));
  std::string text;
  while (text.size() < (256u << 10)) {
    for (const std::string& s : inputs) text += s + "\n";
  }
  text += std::string(50000, 'a');  // one long run of a single letter
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = tokenize(*tok_, text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(decode(*tok_, ids), " " + text);
  EXPECT_LT(seconds, 20.0);
}

// A vocabulary small enough to work out by hand what the merge order gives.
Vocab tiny_vocab() {
  Vocab v;
  auto add = [&v](const char* text, float score, TokenType type) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::unknown);         // 0
  add("<s>", 0, TokenType::control);           // 1
  add("</s>", 0, TokenType::control);          // 2
  add("\xE2\x96\x81", -1, TokenType::normal);  // 3 ▁
  add("a", -1, TokenType::normal);             // 4
  add("b", -1, TokenType::normal);             // 5
  add("ab", -2, TokenType::normal);            // 6
  add("\xE2\x96\x81"
      "a",
      -3, TokenType::normal);  // 7 ▁a
  add("\xE2\x96\x81"
      "ab",
      -1.5, TokenType::normal);                 // 8 ▁ab
  add("<tag>", 0, TokenType::user_defined);     // 9
  add("ba", -2, TokenType::normal);             // 10
  add("<|end_story|>", 0, TokenType::control);  // 11
  add("<|im_end|>", 0, TokenType::normal);      // 12 (not control: no end marker)
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

std::unique_ptr<SpmTokenizer> make(Vocab v) {
  std::unique_ptr<SpmTokenizer> tok;
  Status s = SpmTokenizer::create(std::move(v), &tok);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

TEST(SpmTokenizerTiny, MergesHighestScoreFirstAndLeftmostOnTies) {
  auto tok = make(tiny_vocab());
  ASSERT_NE(tok, nullptr);
  // "▁ab": "ab" (-2) beats "▁a" (-3), then "▁" + "ab" forms "▁ab".
  EXPECT_EQ(tokenize(*tok, "ab"), (Ids{8}));
  // "▁aba": "ab" and "ba" tie at -2; the leftmost ("ab") merges, then "▁ab", leaving "a".
  EXPECT_EQ(tokenize(*tok, "aba"), (Ids{8, 4}));
  // No byte tokens: each character without a token becomes one unknown token.
  EXPECT_EQ(tokenize(*tok, "a\xC3\xA9"), (Ids{7, 0}));
}

TEST(SpmTokenizerTiny, SplitsSpecialTokens) {
  auto tok = make(tiny_vocab());
  ASSERT_NE(tok, nullptr);
  // User-defined tokens split the text only with parse_special (llama.cpp: always); the text after
  // one gets a '▁'. Without it they are plain text ('<', 't', 'g', '>' have no token here: unknown).
  EXPECT_EQ(tokenize(*tok, "a<tag>b", false, true), (Ids{7, 9, 3, 5}));
  EXPECT_EQ(tokenize(*tok, "a<tag>b"), (Ids{7, 0, 0, 4, 0, 0, 5}));
  // Control tokens only with parse_special.
  EXPECT_EQ(tokenize(*tok, "<s>a", false, false), (Ids{3, 0, 0, 0, 4}));
  EXPECT_EQ(tokenize(*tok, "<s>a", false, true), (Ids{1, 7}));
  EXPECT_EQ(tokenize(*tok, "<s><s>", false, true), (Ids{1, 1}));

  Vocab no_prefix = tiny_vocab();
  no_prefix.add_space_prefix = false;
  auto tok2 = make(std::move(no_prefix));
  ASSERT_NE(tok2, nullptr);
  EXPECT_EQ(tokenize(*tok2, "a<tag>b", false, true), (Ids{4, 9, 5}));
  EXPECT_EQ(tokenize(*tok2, "a b"), (Ids{4, 3, 5}));  // neither "a▁" nor "▁b" is a token
}

TEST(SpmTokenizerTiny, EndOfGeneration) {
  auto tok = make(tiny_vocab());
  ASSERT_NE(tok, nullptr);
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->is_eog(11));   // control "<|end_story|>"
  EXPECT_FALSE(tok->is_eog(12));  // "<|im_end|>" but a normal token
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_FALSE(tok->is_eog(-1));
  EXPECT_FALSE(tok->is_eog(99));

  Vocab with_eot = tiny_vocab();
  with_eot.eot_id = 10;
  auto tok2 = make(std::move(with_eot));
  ASSERT_NE(tok2, nullptr);
  EXPECT_TRUE(tok2->is_eog(10));
}

TEST(SpmTokenizerTiny, RefusesBrokenVocabularies) {
  std::unique_ptr<SpmTokenizer> tok;
  {
    Vocab v = tiny_vocab();
    v.scores.pop_back();
    Status s = SpmTokenizer::create(std::move(v), &tok);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find("differ in length"), std::string::npos) << s.message();
  }
  {
    Vocab v = tiny_vocab();
    v.types.push_back(TokenType::normal);
    EXPECT_EQ(SpmTokenizer::create(std::move(v), &tok).code(), Code::invalid_argument);
  }
  {
    Vocab v = tiny_vocab();
    v.bos_id = 13;
    Status s = SpmTokenizer::create(std::move(v), &tok);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find("BOS token id 13 is out of range"), std::string::npos) << s.message();
  }
  {
    Vocab v = tiny_vocab();
    v.eos_id = -5;
    EXPECT_EQ(SpmTokenizer::create(std::move(v), &tok).code(), Code::invalid_argument);
  }
  {
    Vocab v = tiny_vocab();
    v.types[4] = static_cast<TokenType>(7);
    Status s = SpmTokenizer::create(std::move(v), &tok);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find("invalid token type 7"), std::string::npos) << s.message();
  }
  {
    Vocab v = tiny_vocab();
    v.types[4] = TokenType::byte;  // "a" is not <0xXX>
    EXPECT_EQ(SpmTokenizer::create(std::move(v), &tok).code(), Code::invalid_argument);
  }
  {
    Vocab v = tiny_vocab();
    v.bos_id = -1;
    v.add_bos = true;
    EXPECT_EQ(SpmTokenizer::create(std::move(v), &tok).code(), Code::invalid_argument);
  }
  EXPECT_EQ(SpmTokenizer::create(Vocab{}, &tok).code(), Code::invalid_argument);
  EXPECT_EQ(tok, nullptr);
}

// add_special adds BOS only when the vocabulary asks for it; asking without a BOS token is refused.
TEST(SpmTokenizerTiny, BosFollowsTheVocabularysAddBos) {
  Vocab v = tiny_vocab();
  v.add_bos = true;
  EXPECT_EQ(tokenize(*make(v), "a", /*add_special=*/true), (Ids{1, 7}));
  v.add_bos = false;
  EXPECT_EQ(tokenize(*make(v), "a", /*add_special=*/true), (Ids{7}));
  v.bos_id = -1;
  EXPECT_EQ(tokenize(*make(v), "a", /*add_special=*/true), (Ids{7}));
  v.add_bos = true;
  std::unique_ptr<SpmTokenizer> tok;
  EXPECT_EQ(SpmTokenizer::create(std::move(v), &tok).code(), Code::invalid_argument);
}

TEST(SpmTokenizerTiny, NoUnknownTokenIsAnError) {
  Vocab v = tiny_vocab();
  v.unk_id = -1;
  auto tok = make(std::move(v));
  ASSERT_NE(tok, nullptr);
  Ids ids;
  Status s = tok->encode("a\xC3\xA9", false, false, &ids);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_TRUE(ids.empty());
}

// Minimal GGUF v3 writer for metadata-only files.
class GgufWriter {
 public:
  void kv_string(const std::string& key, const std::string& value) {
    header(key, 8);
    str(value);
  }
  void kv_u32(const std::string& key, uint32_t value) {
    header(key, 4);
    pod(value);
  }
  void kv_i32(const std::string& key, int32_t value) {
    header(key, 5);
    pod(value);
  }
  void kv_bool(const std::string& key, bool value) {
    header(key, 7);
    pod(static_cast<uint8_t>(value));
  }
  void kv_strings(const std::string& key, const std::vector<std::string>& values) {
    header(key, 9);
    pod(uint32_t{8});
    pod(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) str(v);
  }
  void kv_f32s(const std::string& key, const std::vector<float>& values) {
    header(key, 9);
    pod(uint32_t{6});
    pod(static_cast<uint64_t>(values.size()));
    for (float v : values) pod(v);
  }
  void kv_i32s(const std::string& key, const std::vector<int32_t>& values) {
    header(key, 9);
    pod(uint32_t{5});
    pod(static_cast<uint64_t>(values.size()));
    for (int32_t v : values) pod(v);
  }
  std::string bytes() const {
    std::string out = "GGUF";
    auto put = [&out](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(uint32_t{3});
    put(uint64_t{0});
    put(n_kv_);
    out += body_;
    out.resize((out.size() + 31) / 32 * 32, '\0');
    return out;
  }

 private:
  template <typename T>
  void pod(T v) {
    body_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    body_ += s;
  }
  void header(const std::string& key, uint32_t type) {
    ++n_kv_;
    str(key);
    pod(type);
  }
  std::string body_;
  uint64_t n_kv_ = 0;
};

Status vocab_from_bytes(const std::string& name, const std::string& bytes, Vocab* out) {
  std::unique_ptr<GgufFile> gguf;
  Status s = GgufFile::open(test::write_temp_file(name, bytes), false, &gguf);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return s;
  return Vocab::from_gguf(*gguf, out);
}

GgufWriter tiny_gguf(const std::string& model) {
  GgufWriter w;
  w.kv_string("tokenizer.ggml.model", model);
  w.kv_strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a"});
  w.kv_f32s("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
  return w;
}

TEST(VocabFromGguf, ReadsKeysAndAppliesLlamaCppDefaults) {
  GgufWriter w = tiny_gguf("llama");
  w.kv_i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  w.kv_u32("tokenizer.ggml.eos_token_id", 2);
  w.kv_u32("tokenizer.ggml.eot_token_id", 0xFFFFFFFFu);
  w.kv_bool("tokenizer.ggml.add_space_prefix", false);
  Vocab v;
  Status s = vocab_from_bytes("vocab_ok.gguf", w.bytes(), &v);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(v.size(), 5);
  EXPECT_EQ(v.tokens[3], "\xE2\x96\x81");
  EXPECT_EQ(v.scores[4], -2.0f);
  EXPECT_EQ(v.types[0], TokenType::unknown);
  EXPECT_EQ(v.bos_id, 1);  // absent: llama.cpp's default
  EXPECT_EQ(v.eos_id, 2);
  EXPECT_EQ(v.unk_id, 0);
  EXPECT_EQ(v.eot_id, -1);
  EXPECT_TRUE(v.add_bos);
  EXPECT_FALSE(v.add_eos);
  EXPECT_FALSE(v.add_space_prefix);
}

TEST(VocabFromGguf, RefusesOtherModelsAndBrokenArrays) {
  Vocab v;
  {
    GgufWriter w = tiny_gguf("t5");
    Status s = vocab_from_bytes("vocab_t5.gguf", w.bytes(), &v);
    EXPECT_EQ(s.code(), Code::unsupported);
    EXPECT_NE(s.message().find("\"t5\""), std::string::npos) << s.message();
  }
  {
    GgufWriter w = tiny_gguf("gpt2");  // byte-level BPE needs its merges
    Status s = vocab_from_bytes("vocab_gpt2.gguf", w.bytes(), &v);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_NE(s.message().find("tokenizer.ggml.merges"), std::string::npos) << s.message();
  }
  {
    GgufWriter w = tiny_gguf("llama");
    w.kv_i32s("tokenizer.ggml.token_type", {2, 3, 3, 1});  // one short
    Status s = vocab_from_bytes("vocab_short.gguf", w.bytes(), &v);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_NE(s.message().find("differ in length"), std::string::npos) << s.message();
  }
  {
    GgufWriter w = tiny_gguf("llama");
    w.kv_u32("tokenizer.ggml.bos_token_id", 5);
    Status s = vocab_from_bytes("vocab_bos.gguf", w.bytes(), &v);
    EXPECT_EQ(s.code(), Code::bad_format);
    EXPECT_NE(s.message().find("BOS token id 5 is out of range"), std::string::npos) << s.message();
  }
  {
    GgufWriter w = tiny_gguf("llama");
    w.kv_i32s("tokenizer.ggml.token_type", {2, 3, 3, 1, 0});
    EXPECT_EQ(vocab_from_bytes("vocab_type.gguf", w.bytes(), &v).code(), Code::bad_format);
  }
  {
    GgufWriter w = tiny_gguf("llama");
    w.kv_string("tokenizer.ggml.bos_token_id", "1");
    EXPECT_EQ(vocab_from_bytes("vocab_bos_str.gguf", w.bytes(), &v).code(), Code::bad_format);
  }
  {
    GgufWriter w;
    w.kv_string("general.architecture", "llama");
    EXPECT_EQ(vocab_from_bytes("vocab_none.gguf", w.bytes(), &v).code(), Code::bad_format);
  }
}

TEST(TinyStoriesVocab, LoadsTokenizesAndRoundTrips) {
  auto tok = load_tokenizer(test::model_path("TinyStories-656K-Q8_0.gguf"));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 2048);
  EXPECT_EQ(tok->token_text(tok->eos()), "<|end_story|>");
  EXPECT_EQ(tok->token_text(tok->bos()), "<|start_story|>");
  EXPECT_TRUE(tok->is_eog(tok->eos()));
  EXPECT_FALSE(tok->is_eog(tok->bos()));
  for (const char* text :
       {"Once upon a time", "Once upon a time, there was a little girl named Lily.\nShe liked to play."}) {
    const Ids ids = tokenize(*tok, text);
    ASSERT_FALSE(ids.empty());
    EXPECT_LT(ids.size(), std::strlen(text));  // merges happened
    EXPECT_EQ(decode(*tok, ids), std::string(" ") + text);
  }
  const Ids with_bos = tokenize(*tok, "Once upon a time", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], tok->bos());
  EXPECT_EQ(tokenize(*tok, "<|end_story|>", false, true), (Ids{tok->eos()}));
  // No byte tokens in this vocabulary: a character it lacks becomes the unknown token.
  const Ids unk = tokenize(*tok, "\xE2\x82\xAC");  // €
  EXPECT_NE(std::find(unk.begin(), unk.end(), tok->vocab().unk_id), unk.end());
}

TEST(Stories260KVocab, LoadsTokenizesAndRoundTrips) {
  auto tok = load_tokenizer(test::model_path("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 512);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  EXPECT_TRUE(tok->is_eog(2));
  const std::string text =
      "Once upon a time, there was a little girl. She was happy! \xC3\xA9t\xC3\xA9 \xF0\x9F\xA6\x99";
  const Ids ids = tokenize(*tok, text);
  EXPECT_LT(ids.size(), text.size());
  EXPECT_EQ(decode(*tok, ids), " " + text);
}

}  // namespace
}  // namespace lmrt
