// The C API's GGUF metadata accessors (lmrt_model_meta_*) and tokenizer description, through lmrt.h
// only, on TinyStories (SentencePiece) and the byte-level BPE vocabularies of ../shared/vocab.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/util/utf8.h"
#include "test_support.h"

namespace {

struct ModelCloser {
  void operator()(lmrt_model* m) const { lmrt_model_close(m); }
};
using ModelPtr = std::unique_ptr<lmrt_model, ModelCloser>;

ModelPtr open_path(const std::string& path) {
  lmrt_model* m = nullptr;
  char err[512] = {0};
  EXPECT_EQ(lmrt_model_open(path.c_str(), nullptr, &m, err, sizeof err), LMRT_OK) << path << ": " << err;
  return ModelPtr(m);
}

std::string vocab_file(const std::string& name) { return lmrt::test::shared_dir() + "/vocab/" + name + ".gguf"; }

std::string meta_str(lmrt_model* m, const char* key) {
  size_t len = 0;
  if (lmrt_model_meta_str(m, key, nullptr, 0, &len) != LMRT_ERR_BUFFER_TOO_SMALL) return "<error>";
  std::string s(len + 1, '\0');
  EXPECT_EQ(lmrt_model_meta_str(m, key, s.data(), s.size(), &len), LMRT_OK);
  s.resize(len);
  return s;
}

std::string last_error(lmrt_model* m) { return lmrt_model_last_error(m); }

TEST(CApiMetadata, EnumeratesKeysAndReadsEachType) {
  ModelPtr m = open_path(lmrt::test::model_path("TinyStories-656K-Q8_0.gguf"));
  ASSERT_TRUE(m);
  size_t count = 0;
  ASSERT_EQ(lmrt_model_meta_count(m.get(), &count), LMRT_OK);
  ASSERT_GT(count, 10u);
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i) {
    char buf[256];
    size_t len = 0;
    ASSERT_EQ(lmrt_model_meta_key(m.get(), i, buf, sizeof buf, &len), LMRT_OK) << i;
    EXPECT_EQ(std::string(buf).size(), len);
    int32_t type = -2;
    ASSERT_EQ(lmrt_model_meta_type(m.get(), buf, &type, nullptr), LMRT_OK);
    EXPECT_GE(type, LMRT_META_U8) << buf;
    EXPECT_LE(type, LMRT_META_F64) << buf;
    keys.emplace_back(buf, len);
  }
  EXPECT_EQ(keys[0].rfind("general.", 0), 0u) << keys[0];
  EXPECT_EQ(lmrt_model_meta_key(m.get(), count, nullptr, 0, nullptr), LMRT_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(meta_str(m.get(), "general.architecture"), "llama");
  EXPECT_EQ(meta_str(m.get(), "tokenizer.ggml.model"), "llama");
  int64_t n = 0;
  ASSERT_EQ(lmrt_model_meta_int(m.get(), "tokenizer.ggml.bos_token_id", &n), LMRT_OK);
  EXPECT_EQ(n, 1);
  ASSERT_EQ(lmrt_model_meta_int(m.get(), "llama.block_count", &n), LMRT_OK);
  lmrt_model_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(lmrt_model_get_info(m.get(), &info), LMRT_OK);
  EXPECT_EQ(n, info.n_layer);
  double eps = 0;
  ASSERT_EQ(lmrt_model_meta_float(m.get(), "llama.attention.layer_norm_rms_epsilon", &eps), LMRT_OK);
  EXPECT_GT(eps, 0.0);
  EXPECT_LT(eps, 1e-3);

  int32_t type = 0, elem = 0;
  ASSERT_EQ(lmrt_model_meta_type(m.get(), "tokenizer.ggml.tokens", &type, &elem), LMRT_OK);
  EXPECT_EQ(type, LMRT_META_ARRAY);
  EXPECT_EQ(elem, LMRT_META_STRING);
  size_t len = 0;
  ASSERT_EQ(lmrt_model_meta_array_len(m.get(), "tokenizer.ggml.tokens", &len), LMRT_OK);
  EXPECT_EQ(len, info.n_vocab);
  char piece[64];
  ASSERT_EQ(lmrt_model_meta_array_str(m.get(), "tokenizer.ggml.tokens", 1, piece, sizeof piece, &len), LMRT_OK);
  EXPECT_STREQ(piece, "<|start_story|>");  // TinyStories' BOS
  ASSERT_EQ(lmrt_model_meta_array_int(m.get(), "tokenizer.ggml.token_type", 1, &n), LMRT_OK);
  EXPECT_EQ(n, 3);  // control
  double score = 1;
  EXPECT_EQ(lmrt_model_meta_array_float(m.get(), "tokenizer.ggml.scores", 5, &score), LMRT_OK);

  ASSERT_EQ(lmrt_model_meta_type(m.get(), "no.such.key", &type, &elem), LMRT_OK);
  EXPECT_EQ(type, LMRT_META_NONE);
  EXPECT_EQ(elem, LMRT_META_NONE);
}

TEST(CApiMetadata, ClearErrorsForMissingKeysWrongTypesAndSmallBuffers) {
  ModelPtr m = open_path(lmrt::test::model_path("TinyStories-656K-Q8_0.gguf"));
  ASSERT_TRUE(m);
  char buf[4];
  size_t len = 0;
  int64_t i = 0;
  double f = 0;
  EXPECT_EQ(lmrt_model_meta_str(m.get(), "no.such.key", buf, sizeof buf, &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error(m.get()).find("no metadata key 'no.such.key'"), std::string::npos) << last_error(m.get());
  EXPECT_EQ(lmrt_model_meta_str(m.get(), "tokenizer.ggml.bos_token_id", buf, sizeof buf, &len),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error(m.get()).find("'tokenizer.ggml.bos_token_id' holds u32, not a string"), std::string::npos)
      << last_error(m.get());
  EXPECT_EQ(lmrt_model_meta_int(m.get(), "general.architecture", &i), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error(m.get()).find("holds string, not an integer"), std::string::npos) << last_error(m.get());
  EXPECT_EQ(lmrt_model_meta_float(m.get(), "tokenizer.ggml.bos_token_id", &f), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_array_len(m.get(), "general.architecture", &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_array_int(m.get(), "tokenizer.ggml.tokens", 0, &i), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error(m.get()).find("array of string, not an array of integers"), std::string::npos)
      << last_error(m.get());
  EXPECT_EQ(lmrt_model_meta_array_str(m.get(), "tokenizer.ggml.tokens", 1u << 30, buf, sizeof buf, &len),
            LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error(m.get()).find("out of range"), std::string::npos) << last_error(m.get());

  // "llama" needs 6 bytes with its NUL: 4 is too small, and len says what is needed.
  len = 0;
  EXPECT_EQ(lmrt_model_meta_str(m.get(), "general.architecture", buf, sizeof buf, &len), LMRT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(len, 5u);
  EXPECT_EQ(lmrt_model_meta_str(m.get(), "general.architecture", nullptr, 4, &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_str(m.get(), nullptr, buf, sizeof buf, &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_count(nullptr, &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_count(m.get(), nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_meta_int(m.get(), "general.architecture", nullptr), LMRT_ERR_INVALID_ARGUMENT);
}

// gpt-2.gguf is a llama-architecture model with GPT-2's vocabulary and no add_bos_token key, so (as
// in llama.cpp) no BOS is added: tokenize, generate and run all go without one.
TEST(CApiTokenizer, ByteLevelBpeModelWithoutBosRuns) {
  ModelPtr m = open_path(vocab_file("gpt-2"));
  ASSERT_TRUE(m);
  lmrt_tokenizer_info tok;
  tok.struct_size = sizeof tok;
  ASSERT_EQ(lmrt_model_get_tokenizer_info(m.get(), &tok), LMRT_OK);
  EXPECT_STREQ(tok.model, "gpt2");
  EXPECT_STREQ(tok.pre, "gpt-2");
  EXPECT_EQ(tok.add_bos, 0u);
  EXPECT_EQ(tok.eos_token, 50256);
  ASSERT_GE(tok.n_eog_tokens, 1u);
  EXPECT_EQ(tok.eog_tokens[0], 50256);

  int32_t ids[8];
  size_t n = 0;
  ASSERT_EQ(lmrt_tokenize(m.get(), "Hello world", 11, LMRT_TOKENIZE_ADD_BOS, ids, 8, &n), LMRT_OK);
  ASSERT_EQ(n, 2u);  // GPT-2's "Hello" and " world", no BOS
  EXPECT_EQ(ids[0], 15496);
  EXPECT_EQ(ids[1], 995);

  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 64;
  cp.n_threads = 1;
  lmrt_context* ctx = nullptr;
  char err[256] = {0};
  ASSERT_EQ(lmrt_context_create(m.get(), &cp, &ctx, err, sizeof err), LMRT_OK) << err;
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Hello world";
  req.max_tokens = 4;
  lmrt_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(lmrt_generate(ctx, &req, nullptr, nullptr, &r), LMRT_OK) << lmrt_context_last_error(ctx);
  EXPECT_EQ(r.prompt_tokens, 2u);
  EXPECT_GE(r.completion_tokens, 1u);
  lmrt_context_free(ctx);
}

int collect_piece(void* user, const lmrt_token_event* ev) {
  static_cast<std::vector<std::string>*>(user)->emplace_back(ev->text, ev->text_len);
  return 0;
}

// A byte-level BPE token can be one byte of a UTF-8 character: streaming never hands one out alone.
TEST(CApiTokenizer, ByteTokensStreamOnlyWholeCharacters) {
  ModelPtr m = open_path(vocab_file("gpt-2"));
  ASSERT_TRUE(m);
  char piece[8];
  size_t len = 0;
  ASSERT_EQ(lmrt_token_to_piece(m.get(), 158, piece, sizeof piece, &len), LMRT_OK);  // GPT-2's byte 0xE2
  ASSERT_EQ(std::string(piece, len), "\xE2");
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 32;
  cp.n_threads = 1;
  lmrt_context* ctx = nullptr;
  ASSERT_EQ(lmrt_context_create(m.get(), &cp, &ctx, nullptr, 0), LMRT_OK);
  const lmrt_logit_bias bias{158, 100.0f};
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Hello";
  req.max_tokens = 3;
  req.n_logit_bias = 1;
  req.logit_bias = &bias;
  std::vector<std::string> pieces;
  lmrt_generate_result r;
  r.struct_size = sizeof r;
  ASSERT_EQ(lmrt_generate(ctx, &req, collect_piece, &pieces, &r), LMRT_OK) << lmrt_context_last_error(ctx);
  ASSERT_EQ(r.completion_tokens, 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.tokens[i], 158);
  std::string streamed;
  for (const std::string& p : pieces) {
    EXPECT_EQ(lmrt::utf8_find_invalid(p), std::string::npos) << "a piece with a partial character";
    streamed += p;
  }
  // Three lone lead bytes are three invalid characters: each becomes U+FFFD.
  EXPECT_EQ(streamed, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(std::string(r.text, r.text_len), streamed);
  lmrt_context_free(ctx);
}

TEST(CApiTokenizer, Llama3VocabularyAddsBosAndKnowsItsEndTokens) {
  ModelPtr m = open_path(vocab_file("llama-bpe"));
  ASSERT_TRUE(m);
  lmrt_tokenizer_info tok;
  tok.struct_size = sizeof tok;
  ASSERT_EQ(lmrt_model_get_tokenizer_info(m.get(), &tok), LMRT_OK);
  EXPECT_STREQ(tok.pre, "llama-bpe");
  EXPECT_EQ(tok.add_bos, 1u);
  EXPECT_EQ(tok.bos_token, 128000);
  int eog = -1;
  ASSERT_EQ(lmrt_token_is_eog(m.get(), 128009, &eog), LMRT_OK);  // <|eot_id|>
  EXPECT_EQ(eog, 1);
  ASSERT_EQ(lmrt_token_is_eog(m.get(), 128000, &eog), LMRT_OK);
  EXPECT_EQ(eog, 0);
  EXPECT_EQ(lmrt_token_is_eog(m.get(), 128256, &eog), LMRT_ERR_INVALID_ARGUMENT);

  int32_t ids[8];
  size_t n = 0;
  ASSERT_EQ(
      lmrt_tokenize(m.get(), "Hello<|eot_id|>", 15, LMRT_TOKENIZE_ADD_BOS | LMRT_TOKENIZE_PARSE_SPECIAL, ids, 8, &n),
      LMRT_OK);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(ids[0], 128000);
  EXPECT_EQ(ids[1], 9906);
  EXPECT_EQ(ids[2], 128009);
  ASSERT_EQ(lmrt_tokenize(m.get(), "Hello<|eot_id|>", 15, 0, ids, 8, &n), LMRT_OK);
  EXPECT_GT(n, 2u);
  for (size_t i = 0; i < n; ++i) EXPECT_LT(ids[i], 128000);
  // A partial UTF-8 character comes back as its bytes: "é" is one token, its piece two bytes.
  char piece[8];
  size_t len = 0;
  ASSERT_EQ(lmrt_tokenize(m.get(), "\xC3\xA9", 2, 0, ids, 8, &n), LMRT_OK);
  ASSERT_EQ(n, 1u);
  ASSERT_EQ(lmrt_token_to_piece(m.get(), ids[0], piece, sizeof piece, &len), LMRT_OK);
  EXPECT_EQ(std::string(piece, len), "\xC3\xA9");
}

}  // namespace
