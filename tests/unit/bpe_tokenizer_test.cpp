// Byte-level BPE and the tokenizer interface on the vocabularies of ../shared/vocab, against
// llama.cpp's own test vectors (ids without BOS, special tokens not parsed).
#include "runtime/tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/bpe_pretokenizer.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/tokenizer.h"
#include "test_support.h"
#include "vocab_vectors.h"

namespace lmrt {
namespace {

using Ids = std::vector<int32_t>;

std::string vocab_dir() { return test::shared_dir() + "/vocab"; }

std::unique_ptr<Tokenizer> load(const std::string& name) {
  std::unique_ptr<GgufFile> gguf;
  Status s = GgufFile::open(vocab_dir() + "/" + name + ".gguf", true, &gguf);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<Tokenizer> tok;
  s = Tokenizer::from_gguf(*gguf, &tok);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return tok;
}

Ids encode(const Tokenizer& tok, std::string_view text, bool add_special = false, bool parse_special = false) {
  Ids ids;
  Status s = tok.encode(text, add_special, parse_special, &ids);
  EXPECT_TRUE(s.ok()) << s.message();
  return ids;
}

std::string decode(const Tokenizer& tok, const Ids& ids) {
  std::string text, piece;
  for (int32_t id : ids) {
    EXPECT_TRUE(tok.token_to_bytes(id, &piece).ok());
    text += piece;
  }
  return text;
}

// Every vocabulary of ../shared/vocab: llama.cpp's ids for every vector, and decoding gives the text back.
class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, ReproduceLlamaCppIdsAndRoundTrip) {
  const std::string name = GetParam();
  std::unique_ptr<Tokenizer> tok = load(name);
  ASSERT_NE(tok, nullptr);
  const std::string stem = vocab_dir() + "/ggml-vocab-" + name + ".gguf";
  const std::vector<std::string> inputs = test::parse_vocab_inp(test::read_file(stem + ".inp"));
  const std::vector<Ids> expected = test::parse_vocab_out(test::read_file(stem + ".out"));
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(inputs.size(), expected.size());
  int passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Ids ids = encode(*tok, inputs[i]);
    EXPECT_EQ(ids, expected[i]) << name << " vector " << i << ": \"" << inputs[i] << "\"";
    passed += ids == expected[i];
    if (tok->kind() == TokenizerKind::bpe) {
      EXPECT_EQ(decode(*tok, ids), inputs[i]) << "vector " << i;
    }
  }
  EXPECT_EQ(passed, 46);
}

INSTANTIATE_TEST_SUITE_P(SharedVocab, VocabVectors, ::testing::Values("llama-spm", "llama-bpe", "qwen2", "gpt-2"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(BpeVocab, KindBosAndEndOfGenerationFromMetadata) {
  auto llama3 = load("llama-bpe");
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->kind(), TokenizerKind::bpe);
  EXPECT_EQ(llama3->vocab().pre, "llama-bpe");
  EXPECT_EQ(llama3->bos(), 128000);
  EXPECT_EQ(llama3->eos(), 128001);
  EXPECT_TRUE(llama3->add_bos());  // no add_bos_token key: llama.cpp's default for llama-bpe
  EXPECT_EQ(llama3->token_text(128009), "<|eot_id|>");
  EXPECT_TRUE(llama3->is_eog(128001));
  EXPECT_TRUE(llama3->is_eog(128009));                  // <|eot_id|>
  EXPECT_EQ(llama3->eog_ids(), (Ids{128001, 128009}));  // Llama 3.0 has no <|eom_id|>
  EXPECT_FALSE(llama3->is_eog(128000));
  EXPECT_FALSE(llama3->is_eog(9906));
  EXPECT_EQ(encode(*llama3, "Hello", /*add_special=*/true), (Ids{128000, 9906}));

  auto qwen = load("qwen2");
  ASSERT_NE(qwen, nullptr);
  EXPECT_FALSE(qwen->add_bos());  // add_bos_token = false
  EXPECT_EQ(qwen->eos(), 151645);
  EXPECT_EQ(qwen->token_text(151645), "<|im_end|>");
  EXPECT_TRUE(qwen->is_eog(151645));
  EXPECT_TRUE(qwen->is_eog(151643));   // <|endoftext|>
  EXPECT_FALSE(qwen->is_eog(151644));  // <|im_start|>
  EXPECT_EQ(encode(*qwen, "Hello", true), encode(*qwen, "Hello", false));

  auto gpt2 = load("gpt-2");
  ASSERT_NE(gpt2, nullptr);
  EXPECT_FALSE(gpt2->add_bos());
  EXPECT_EQ(gpt2->eos(), 50256);
  EXPECT_TRUE(gpt2->is_eog(50256));
}

TEST(BpeVocab, ParsesSpecialTokensOnlyWhenAsked) {
  auto tok = load("llama-bpe");
  ASSERT_NE(tok, nullptr);
  const std::string text = "Hi<|eot_id|>there";
  const Ids special = encode(*tok, text, false, /*parse_special=*/true);
  ASSERT_EQ(special.size(), 3u);
  EXPECT_EQ(special[1], 128009);
  const Ids plain = encode(*tok, text, false, false);
  for (int32_t id : plain) EXPECT_LT(id, 128000) << "a special token in plain text";
  EXPECT_GT(plain.size(), 3u);
  EXPECT_EQ(decode(*tok, plain), text);
  std::string piece;
  ASSERT_TRUE(tok->token_to_bytes(128009, &piece).ok());
  EXPECT_EQ(piece, "");  // control tokens decode to nothing

  auto qwen = load("qwen2");
  ASSERT_NE(qwen, nullptr);
  const Ids chat = encode(*qwen, "<|im_start|>user\nhi<|im_end|>", false, true);
  EXPECT_EQ(chat.front(), 151644);
  EXPECT_EQ(chat.back(), 151645);
  const Ids chat_plain = encode(*qwen, "<|im_start|>user\nhi<|im_end|>", false, false);
  EXPECT_NE(chat_plain.front(), 151644);
  EXPECT_EQ(decode(*qwen, chat_plain), "<|im_start|>user\nhi<|im_end|>");
  // Qwen 3's "<think>" is a user-defined token: llama.cpp matches it even in plain text; lmrt only
  // when asked, so text from a user cannot become it.
  const Ids think = encode(*qwen, "<think>", false, true);
  ASSERT_EQ(think.size(), 1u);
  EXPECT_EQ(qwen->vocab().types[think[0]], TokenType::user_defined);
  const Ids think_plain = encode(*qwen, "<think>", false, false);
  EXPECT_GT(think_plain.size(), 1u);
  EXPECT_EQ(decode(*qwen, think_plain), "<think>");
}

TEST(BpeVocab, BytePiecesStreamAsWholeCharacters) {
  auto tok = load("gpt-2");
  ASSERT_NE(tok, nullptr);
  // A rare CJK character has no token of its own in GPT-2: it is split over byte tokens whose
  // pieces are parts of one UTF-8 character.
  const std::string text = "\xF0\xAA\x9A\xA5";  // U+2A6A5
  const Ids ids = encode(*tok, text);
  ASSERT_GT(ids.size(), 1u);
  std::string joined;
  for (int32_t id : ids) {
    std::string piece;
    ASSERT_TRUE(tok->token_to_bytes(id, &piece).ok());
    EXPECT_LT(piece.size(), text.size());
    joined += piece;
  }
  EXPECT_EQ(joined, text);
}

TEST(BpeVocab, LongWordIsNotQuadraticAndBadInputIsAnError) {
  auto tok = load("llama-bpe");
  ASSERT_NE(tok, nullptr);
  std::string word;
  for (int i = 0; i < 40000; ++i) word += "abcdefgh"[i * 7 % 8];  // one 40 kB "word"
  const auto t0 = std::chrono::steady_clock::now();
  const Ids ids = encode(*tok, word);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(decode(*tok, ids), word);
  EXPECT_LT(s, 2.0) << "40 kB word took " << s << " s";
  Ids out{1, 2};
  Status st = tok->encode("ok \xC3\x28", false, false, &out);
  EXPECT_EQ(st.code(), Code::bad_utf8);
  EXPECT_NE(st.message().find("offset 3"), std::string::npos) << st.message();
  EXPECT_TRUE(out.empty());
  std::string piece;
  EXPECT_EQ(tok->token_to_bytes(128256, &piece).code(), Code::invalid_argument);
  EXPECT_EQ(tok->token_to_bytes(-1, &piece).code(), Code::invalid_argument);
}

// A vocabulary small enough to work out the merges by hand: "abc" merges b+c first when that pair
// ranks first, else a+b.
Vocab tiny_bpe(std::vector<std::string> merges) {
  Vocab v;
  v.kind = TokenizerKind::bpe;
  v.pre = "gpt-2";
  for (const char* t : {"a", "b", "c", "ab", "bc", "abc", "\xC4\xA0"}) v.tokens.push_back(t);  // 6: 'Ġ'
  v.scores.assign(v.tokens.size(), 0.0f);
  v.types.assign(v.tokens.size(), TokenType::normal);
  for (const std::string& m : merges) v.merges.push_back(m);
  return v;
}

TEST(BpeTiny, MergesLowestRankFirst) {
  std::unique_ptr<Tokenizer> tok;
  ASSERT_TRUE(Tokenizer::create(tiny_bpe({"b c", "a b", "a bc"}), &tok).ok());
  EXPECT_EQ(encode(*tok, "abc"), (Ids{5}));
  EXPECT_EQ(encode(*tok, "abc abc"), (Ids{5, 6, 5}));  // " abc": Ġ has no merge with a
  ASSERT_TRUE(Tokenizer::create(tiny_bpe({"a b", "b c", "a bc"}), &tok).ok());
  EXPECT_EQ(encode(*tok, "abc"), (Ids{3, 2}));  // no "ab c" merge
  EXPECT_EQ(encode(*tok, "bcab"), (Ids{4, 3}));
}

TEST(BpeTiny, UnencodableBytesGiveUnknownOrAnError) {
  std::unique_ptr<Tokenizer> tok;
  ASSERT_TRUE(Tokenizer::create(tiny_bpe({"a b"}), &tok).ok());
  Ids ids;
  Status s = tok->encode("abd", false, false, &ids);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("0x64"), std::string::npos) << s.message();
  Vocab v = tiny_bpe({"a b"});
  v.tokens.push_back("<unk>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::unknown);
  v.unk_id = 7;
  ASSERT_TRUE(Tokenizer::create(std::move(v), &tok).ok());
  EXPECT_EQ(encode(*tok, "abd"), (Ids{3, 7}));
}

TEST(BpeTiny, RefusesUnknownPreTokenizersAndBadMerges) {
  std::unique_ptr<Tokenizer> tok;
  Vocab v = tiny_bpe({"a b"});
  v.pre = "no-such-pre";
  Status s = Tokenizer::create(std::move(v), &tok);
  EXPECT_EQ(s.code(), Code::unsupported);
  EXPECT_NE(s.message().find("\"no-such-pre\""), std::string::npos) << s.message();
  s = Tokenizer::create(tiny_bpe({"ab"}), &tok);
  EXPECT_EQ(s.code(), Code::bad_format);
}

TEST(ByteLevel, MapsEveryByteToOneCharacterAndBack) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(byte_level_char('A'), "A");
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");  // the last of the remapped bytes: U+0143
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string encoded, decoded;
  encode_byte_level(all, &encoded);
  decode_byte_level(encoded, &decoded);
  EXPECT_EQ(decoded, all);
}

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  std::unique_ptr<BpePretokenizer> p;
  Status s = BpePretokenizer::create(pre, &p);
  EXPECT_TRUE(s.ok()) << pre << ": " << s.message();
  if (!s.ok()) return {};
  std::vector<std::pair<size_t, size_t>> words;
  s = p->split(text, &words);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::string> out;
  for (const auto& [o, n] : words) out.emplace_back(text.substr(o, n));
  return out;
}

using Words = std::vector<std::string>;

// Each named pre-tokenizer, on text where its rules differ from the others' (worked out from the regexes).
TEST(BpePretokenizer, SplitsEachNamedPreTokenizersWay) {
  EXPECT_EQ(split("gpt-2", "Hello world's 12345  x"), (Words{"Hello", " world", "'s", " 12345", " ", " x"}));
  EXPECT_EQ(split("mpt", "Hello world's 12345  x"), (Words{"Hello", " world", "'s", " 12345", " ", " x"}));
  EXPECT_EQ(split("llama-bpe", "Hello WORLD'S 12345\n\n  x"),
            (Words{"Hello", " WORLD", "'S", " ", "123", "45", "\n\n", " ", " x"}));
  EXPECT_EQ(split("qwen2", "ab 123"), (Words{"ab", " ", "1", "2", "3"}));
  for (const char* pre : {"smollm", "starcoder", "refact", "command-r"})
    EXPECT_EQ(split(pre, "x 123"), (Words{"x", " ", "1", "2", "3"})) << pre;
  // Falcon: punctuation runs first, then GPT-2's rules, then runs of three ASCII digits.
  EXPECT_EQ(split("falcon", "a,b 1234"), (Words{"a", ",", "b", " ", "123", "4"}));
  EXPECT_EQ(split("deepseek-coder", "ab\ncd 12"), (Words{"ab", "\n", "cd", " ", "1", "2"}));
  EXPECT_EQ(split("deepseek-llm", "hello world!\n12"), (Words{"hello", " world", "!", "\n", "12"}));
  EXPECT_EQ(split("gpt-4o", "HelloWorld it's"), (Words{"Hello", "World", " it's"}));
  std::unique_ptr<BpePretokenizer> p;
  EXPECT_EQ(BpePretokenizer::create("bloom", &p).code(), Code::unsupported);
}

}  // namespace
}  // namespace lmrt
