// The public C API, called as an application would (through lmrt.h only).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_fixture.h"
#include "runtime/util/utf8.h"
#include "simd/kernels.h"
#include "test_support.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::ModelPtr;

ModelPtr open(const std::string& name) { return lmrt::test::open_shared_model(name); }

ContextPtr context(lmrt_model* m, uint32_t n_ctx, uint32_t threads = 2) {
  return lmrt::test::make_context(m, n_ctx, threads);
}

struct Collected {
  std::string text;
  std::vector<std::string> pieces;
  int cancel_after = -1;
};

int collect(void* user, const lmrt_token_event* ev) {
  auto* c = static_cast<Collected*>(user);
  c->pieces.emplace_back(ev->text, ev->text_len);
  c->text.append(ev->text, ev->text_len);
  return c->cancel_after >= 0 && static_cast<int>(ev->index) >= c->cancel_after ? 1 : 0;
}

// Every file in ../shared/models either opens or is refused with its own specific message.
TEST(CApi, EveryModelFileOpensOrIsRefusedSpecifically) {
  struct Case {
    const char* file;
    lmrt_status status;
    const char* message_part;
  } cases[] = {
      {"stories260K.gguf", LMRT_OK, ""},
      {"TinyStories-656K-Q8_0.gguf", LMRT_OK, ""},
      {"tinyllamas-stories-260k-q8_0.gguf", LMRT_ERR_BAD_FORMAT, "not a multiple of Q8_0's block size 32"},
      {"legacy/stories260K-gguf-v1.gguf", LMRT_ERR_BAD_FORMAT, "GGUF version 1"},
      {"legacy/TinyLLama-v0.ggmlv3.q4_0.bin", LMRT_ERR_BAD_FORMAT, "GGJT"},
      {"stories260K.bin", LMRT_ERR_BAD_FORMAT, "not a GGUF file"},
      {"tok512.bin", LMRT_ERR_BAD_FORMAT, "not a GGUF file"},
      {"llama2-tokenizer.bin", LMRT_ERR_BAD_FORMAT, "not a GGUF file"},
      {"README.md", LMRT_ERR_BAD_FORMAT, "not a GGUF file"},
      {"no-such-file.gguf", LMRT_ERR_IO, "No such file"},
  };
  for (const Case& c : cases) {
    for (uint32_t mmap : {1u, 0u}) {
      lmrt_model_params mp;
      lmrt_model_params_init(&mp);
      mp.use_mmap = mmap;
      lmrt_model* m = nullptr;
      char err[512] = {0};
      const lmrt_status s = lmrt_model_open(lmrt::test::model_path(c.file).c_str(), &mp, &m, err, sizeof err);
      EXPECT_EQ(s, c.status) << c.file << ": " << err;
      EXPECT_NE(std::string(err).find(c.message_part), std::string::npos) << c.file << ": " << err;
      EXPECT_EQ(m == nullptr, c.status != LMRT_OK) << c.file;
      lmrt_model_close(m);
    }
  }
  // The vocabulary test file is a complete (random-weight) model as well.
  lmrt_model* m = nullptr;
  EXPECT_EQ(lmrt_model_open((lmrt::test::shared_dir() + "/vocab/llama-spm.gguf").c_str(), nullptr, &m, nullptr, 0),
            LMRT_OK);
  lmrt_model_close(m);
}

TEST(CApi, ModelInfoDescribesTinyStories) {
  ModelPtr m = open("TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(m);
  lmrt_model_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(lmrt_model_get_info(m.get(), &info), LMRT_OK);
  EXPECT_STREQ(info.architecture, "llama");
  EXPECT_STREQ(info.name, "Raincandy U TinyStories 656K");
  EXPECT_EQ(info.n_vocab, 2048u);
  EXPECT_EQ(info.n_embd, 128u);
  EXPECT_EQ(info.n_layer, 2u);
  EXPECT_EQ(info.n_head, 8u);
  EXPECT_EQ(info.n_head_kv, 4u);
  EXPECT_EQ(info.n_ff, 384u);
  EXPECT_EQ(info.n_ctx_train, 512u);
  EXPECT_EQ(info.n_tensors, 20u);
  EXPECT_EQ(info.n_tensors_q8_0, 15u);
  EXPECT_EQ(info.n_tensors_f32, 5u);
  EXPECT_EQ(info.file_bytes, 749728u);
  // 2048 x 128 tied embedding + 2 layers x (q, o 128x128; k, v 64x128; gate, up, down 384x128;
  // two norms of 128) + the output norm: the model's own "656K".
  EXPECT_EQ(info.n_params, 2048u * 128 + 2 * (2 * 128 * 128 + 2 * 64 * 128 + 3 * 384 * 128 + 2 * 128) + 128);
  EXPECT_EQ(info.bos_token, 1);
  EXPECT_EQ(info.eos_token, 2);
}

// llama.cpp's Q3_K_M file mixes four K-quants (../shared/models/quant/types.tsv: f32 x9, q3_K x17,
// q4_K x10, q5_K x2, q6_K x1); the enumeration names each with its counts, in ggml id order.
TEST(CApi, TensorTypesEnumeratesEveryTypeOfAMixedFile) {
  ModelPtr m = open("quant/base-Q3_K_M.gguf");
  ASSERT_TRUE(m);
  uint32_t n = 0;
  ASSERT_EQ(lmrt_model_tensor_types(m.get(), 0, nullptr, &n), LMRT_OK);
  ASSERT_EQ(n, 5u);
  const struct {
    const char* name;
    uint32_t id, tensors, block, block_bytes;
  } want[] = {{"F32", 0, 9, 1, 4},
              {"Q3_K", 11, 17, 256, 110},
              {"Q4_K", 12, 10, 256, 144},
              {"Q5_K", 13, 2, 256, 176},
              {"Q6_K", 14, 1, 256, 210}};
  uint32_t total = 0;
  uint64_t elements = 0;
  for (uint32_t i = 0; i < n; ++i) {
    lmrt_tensor_type_info t;
    t.struct_size = sizeof t;
    uint32_t again = 0;
    ASSERT_EQ(lmrt_model_tensor_types(m.get(), i, &t, &again), LMRT_OK);
    EXPECT_EQ(again, n);
    EXPECT_STREQ(t.name, want[i].name);
    EXPECT_EQ(t.ggml_type, want[i].id);
    EXPECT_EQ(t.n_tensors, want[i].tensors);
    EXPECT_EQ(t.n_bytes, t.n_elements / want[i].block * want[i].block_bytes) << t.name;
    total += t.n_tensors;
    elements += t.n_elements;
  }
  lmrt_model_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(lmrt_model_get_info(m.get(), &info), LMRT_OK);
  EXPECT_EQ(total, info.n_tensors);
  EXPECT_EQ(elements, info.n_params);
  // Past the end: refused with a message; a NULL model likewise.
  lmrt_tensor_type_info t;
  t.struct_size = sizeof t;
  EXPECT_EQ(lmrt_model_tensor_types(m.get(), n, &t, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_model_last_error(m.get())).find("out of range"), std::string::npos);
  EXPECT_EQ(lmrt_model_tensor_types(nullptr, 0, &t, &n), LMRT_ERR_INVALID_ARGUMENT);
  // An older caller's shorter struct gets a prefix.
  std::vector<unsigned char> buf(sizeof t + 8, 0xAB);
  auto* old = reinterpret_cast<lmrt_tensor_type_info*>(buf.data());
  old->struct_size = offsetof(lmrt_tensor_type_info, n_tensors);
  ASSERT_EQ(lmrt_model_tensor_types(m.get(), 1, old, nullptr), LMRT_OK);
  EXPECT_STREQ(old->name, "Q3_K");
  for (size_t i = offsetof(lmrt_tensor_type_info, n_tensors); i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAB) << i;
}

// The architecture's fields as the forward pass uses them: gemma2 (windows, soft-caps, post-norms, GELU)
// and qwen2 (biases, NeoX RoPE, tied), from ../shared/models/arch.
TEST(CApi, ModelArchDescribesTheNetwork) {
  ModelPtr gemma2 = open("arch/gemma2-f16.gguf");
  ASSERT_TRUE(gemma2);
  lmrt_model_arch a;
  a.struct_size = sizeof a;
  ASSERT_EQ(lmrt_model_get_arch(gemma2.get(), &a), LMRT_OK);
  EXPECT_EQ(a.head_dim, 64u);
  EXPECT_EQ(a.rope_style, LMRT_ROPE_NEOX);
  EXPECT_EQ(a.activation, LMRT_ACTIVATION_GELU_TANH);
  EXPECT_EQ(a.flags, LMRT_ARCH_POST_ATTN_NORM | LMRT_ARCH_POST_FFN_NORM | LMRT_ARCH_TIED_OUTPUT);
  EXPECT_EQ(a.sliding_window, 16u);
  EXPECT_EQ(a.n_windowed_layers, 1u);  // layer 0 of 2
  EXPECT_FLOAT_EQ(a.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(a.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(a.embd_scale, 16.0f);
  EXPECT_FLOAT_EQ(a.attn_scale, 0.125f);

  ModelPtr qwen2 = open("arch/qwen2-f16.gguf");
  ASSERT_TRUE(qwen2);
  ASSERT_EQ(lmrt_model_get_arch(qwen2.get(), &a), LMRT_OK);
  EXPECT_EQ(a.flags, LMRT_ARCH_QKV_BIAS | LMRT_ARCH_TIED_OUTPUT);
  EXPECT_EQ(a.activation, LMRT_ACTIVATION_SWIGLU);
  EXPECT_FLOAT_EQ(a.rope_freq_base, 1e6f);
  EXPECT_EQ(a.sliding_window, 0u);
  EXPECT_EQ(lmrt_model_get_arch(qwen2.get(), nullptr), LMRT_ERR_INVALID_ARGUMENT);
}

TEST(CApi, OlderCallersGetAPrefixOfGrownStructs) {
  ModelPtr m = open("stories260K.gguf");
  ASSERT_TRUE(m);
  // A caller compiled when lmrt_model_info ended after `name` must not see bytes written past it.
  std::vector<unsigned char> buf(sizeof(lmrt_model_info) + 16, 0xAB);
  auto* info = reinterpret_cast<lmrt_model_info*>(buf.data());
  const uint32_t old_size = offsetof(lmrt_model_info, n_tensors);
  info->struct_size = old_size;
  ASSERT_EQ(lmrt_model_get_info(m.get(), info), LMRT_OK);
  EXPECT_STREQ(info->architecture, "llama");
  for (size_t i = old_size; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAB) << "byte " << i << " was written";
  // And a params struct with a bad size is refused with a message.
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.struct_size = 3;
  lmrt_context* c = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_context_create(m.get(), &p, &c, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("struct_size"), std::string::npos);
  // n_ctx: up to 2^20, as lmrt.h says.
  lmrt_context_params_init(&p);
  p.n_ctx = (1u << 20) + 1;
  EXPECT_EQ(lmrt_context_create(m.get(), &p, &c, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("above the limit 1048576"), std::string::npos) << err;
  EXPECT_EQ(c, nullptr);
}

TEST(CApi, InitWritesOnlyTheCallersStructSize) {
  // A program built when lmrt_generate_request was 32 bytes long.
  std::vector<unsigned char> buf(sizeof(lmrt_generate_request) + 16, 0xAB);
  auto* req = reinterpret_cast<lmrt_generate_request*>(buf.data());
  ASSERT_EQ(lmrt_generate_request_init_sized(req, 32), LMRT_OK);
  EXPECT_EQ(req->struct_size, 32u);
  EXPECT_EQ(req->max_tokens, 256);
  for (size_t i = 32; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xAB) << "byte " << i << " was written";
  // A program built against a newer, larger struct: the fields this library does not know are zeroed.
  ASSERT_EQ(lmrt_generate_request_init_sized(req, sizeof(lmrt_generate_request) + 16), LMRT_OK);
  EXPECT_EQ(req->struct_size, sizeof(lmrt_generate_request) + 16);
  for (size_t i = sizeof(lmrt_generate_request); i < buf.size(); ++i) ASSERT_EQ(buf[i], 0) << "byte " << i;
  EXPECT_EQ(lmrt_generate_request_init_sized(req, 4), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_params_init_sized(nullptr, sizeof(lmrt_context_params)), LMRT_ERR_INVALID_ARGUMENT);
}

TEST(CApi, TokenizeReportsNeededSizeAndBadUtf8) {
  ModelPtr m = open("TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(m);
  const std::string text = "Once upon a time";
  size_t n = 0;
  EXPECT_EQ(lmrt_tokenize(m.get(), text.data(), text.size(), LMRT_TOKENIZE_ADD_BOS, nullptr, 0, &n),
            LMRT_ERR_BUFFER_TOO_SMALL);
  ASSERT_GT(n, 2u);
  std::vector<int32_t> ids(n);
  ASSERT_EQ(lmrt_tokenize(m.get(), text.data(), text.size(), LMRT_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n),
            LMRT_OK);
  EXPECT_EQ(ids[0], 1);
  std::string back;
  for (size_t i = 1; i < n; ++i) {
    char buf[64];
    size_t len = 0;
    ASSERT_EQ(lmrt_token_to_piece(m.get(), ids[i], buf, sizeof buf, &len), LMRT_OK);
    back.append(buf, len);
  }
  EXPECT_EQ(back, " " + text);
  const std::string bad = "ok \xC3\x28 no";
  EXPECT_EQ(lmrt_tokenize(m.get(), bad.data(), bad.size(), 0, ids.data(), ids.size(), &n), LMRT_ERR_BAD_UTF8);
  EXPECT_NE(std::string(lmrt_model_last_error(m.get())).find("byte offset 3"), std::string::npos)
      << lmrt_model_last_error(m.get());
  size_t len = 0;
  char buf[8];
  EXPECT_EQ(lmrt_token_to_piece(m.get(), 5000, buf, sizeof buf, &len), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_token_to_piece(m.get(), -1, buf, sizeof buf, &len), LMRT_ERR_INVALID_ARGUMENT);
  // Asking for the length with no buffer, as lmrt.h allows: the BOS control token's piece is empty (UBSan
  // caught a memcpy from it into NULL), a word's is BUFFER_TOO_SMALL with its length.
  len = 99;
  EXPECT_EQ(lmrt_token_to_piece(m.get(), 1, nullptr, 0, &len), LMRT_OK);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(lmrt_token_to_piece(m.get(), ids[1], nullptr, 0, &len), LMRT_ERR_BUFFER_TOO_SMALL);
  EXPECT_GT(len, 0u);
}

TEST(CApi, StreamsValidUtf8ThatAddsUpToTheResult) {
  ModelPtr m = open("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr c = context(m.get(), 512);
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "";
  req.prompt_len = 0;
  req.max_tokens = 200;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  Collected got;
  ASSERT_EQ(lmrt_generate(c.get(), &req, collect, &got, &res), LMRT_OK) << lmrt_context_last_error(c.get());
  EXPECT_EQ(got.text, std::string(res.text, res.text_len));
  for (const std::string& p : got.pieces) EXPECT_EQ(lmrt::utf8_find_invalid(p), std::string::npos);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_LENGTH);
  EXPECT_EQ(res.completion_tokens, 200u);
  EXPECT_EQ(res.n_past, 200u);  // BOS + 199 evaluated; the 200th token is sampled, not evaluated
  EXPECT_GT(res.decode_tokens_per_s, 0.0);
  EXPECT_GE(res.ttft_ms, res.prefill_ms);
}

TEST(CApi, ReusesThePromptPrefixAndCancels) {
  ModelPtr m = open("TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(m);
  ContextPtr c = context(m.get(), 256);
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Once upon a time there was a dog";
  req.prompt_len = static_cast<size_t>(-1);
  req.max_tokens = 20;
  lmrt_generate_result first;
  first.struct_size = sizeof first;
  ASSERT_EQ(lmrt_generate(c.get(), &req, nullptr, nullptr, &first), LMRT_OK);
  const std::string first_text(first.text, first.text_len);
  EXPECT_EQ(first.reused_tokens, 0u);

  // The same prompt again: every prompt token but the last is reused, and the output is the same.
  lmrt_generate_result again;
  again.struct_size = sizeof again;
  ASSERT_EQ(lmrt_generate(c.get(), &req, nullptr, nullptr, &again), LMRT_OK);
  EXPECT_EQ(again.reused_tokens, again.prompt_tokens - 1);
  EXPECT_EQ(std::string(again.text, again.text_len), first_text);

  // Cancel after the third piece.
  Collected got;
  got.cancel_after = 3;
  lmrt_generate_result cancelled;
  cancelled.struct_size = sizeof cancelled;
  ASSERT_EQ(lmrt_generate(c.get(), &req, collect, &got, &cancelled), LMRT_OK);
  EXPECT_EQ(cancelled.finish_reason, LMRT_FINISH_CANCELLED);
  EXPECT_EQ(cancelled.completion_tokens, 3u);
  EXPECT_STREQ(lmrt_finish_reason_str(cancelled.finish_reason), "cancelled");
}

TEST(CApi, GenerationStopsWhenTheContextFills) {
  ModelPtr m = open("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr c = context(m.get(), 32, 1);
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Once upon a time";
  req.prompt_len = static_cast<size_t>(-1);
  req.max_tokens = 100;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(c.get(), &req, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_CONTEXT_FULL);
  EXPECT_EQ(res.prompt_tokens + res.completion_tokens, 33u);  // the last sampled token is never evaluated
  uint32_t n_past = 0;
  ASSERT_EQ(lmrt_context_n_past(c.get(), &n_past), LMRT_OK);
  EXPECT_EQ(n_past, 32u);
  // A full context still answers the next request (the prompt prefix is reused).
  req.max_tokens = 4;
  ASSERT_EQ(lmrt_generate(c.get(), &req, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.completion_tokens, 4u);
}

TEST(CApi, EvalAndLogits) {
  ModelPtr m = open("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr c = context(m.get(), 64);
  const float* logits = nullptr;
  size_t n_vocab = 0;
  EXPECT_EQ(lmrt_get_logits(c.get(), 0, &logits, &n_vocab), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(lmrt_context_last_error(c.get()), "");
  const int32_t toks[] = {1, 403, 407};
  ASSERT_EQ(lmrt_eval(c.get(), toks, 3), LMRT_OK);
  ASSERT_EQ(lmrt_get_logits(c.get(), 2, &logits, &n_vocab), LMRT_OK);
  EXPECT_EQ(n_vocab, 512u);
  EXPECT_EQ(lmrt_get_logits(c.get(), 0, &logits, &n_vocab), LMRT_ERR_INVALID_ARGUMENT);  // logits_all off
  const int32_t bad[] = {600};
  EXPECT_EQ(lmrt_eval(c.get(), bad, 1), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(c.get())).find("outside the vocabulary"), std::string::npos);
  EXPECT_EQ(lmrt_eval(c.get(), toks, 0), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_reset(c.get()), LMRT_OK);
  uint32_t n_past = 99;
  EXPECT_EQ(lmrt_context_n_past(c.get(), &n_past), LMRT_OK);
  EXPECT_EQ(n_past, 0u);
  lmrt_context_params got;
  got.struct_size = sizeof got;
  ASSERT_EQ(lmrt_context_get_params(c.get(), &got), LMRT_OK);
  EXPECT_EQ(got.n_ctx, 64u);
  EXPECT_EQ(got.n_batch, 64u);
  EXPECT_EQ(got.n_threads, 2u);
}

// logits_all keeps the rows of the call's last batch (documented), and says so for an earlier row; a count
// past the context's room is CONTEXT_FULL before any token is read.
TEST(CApi, LogitsAllKeepsTheLastBatchAndEvalChecksRoomFirst) {
  ModelPtr m = open("stories260K.gguf");
  ASSERT_TRUE(m);
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = 64;
  p.n_batch = 4;
  p.n_threads = 1;
  p.logits_all = 1;
  lmrt_context* raw = nullptr;
  ASSERT_EQ(lmrt_context_create(m.get(), &p, &raw, nullptr, 0), LMRT_OK);
  ContextPtr c(raw);
  const int32_t toks[] = {1, 403, 407, 261, 376, 268, 414, 422, 395, 343};
  ASSERT_EQ(lmrt_eval(c.get(), toks, 10), LMRT_OK);
  const float* logits = nullptr;
  size_t n_vocab = 0;
  EXPECT_EQ(lmrt_get_logits(c.get(), 8, &logits, &n_vocab), LMRT_OK);
  EXPECT_EQ(lmrt_get_logits(c.get(), 9, &logits, &n_vocab), LMRT_OK);
  EXPECT_EQ(lmrt_get_logits(c.get(), 7, &logits, &n_vocab), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(c.get())).find("last batch's, up to n_batch 4"), std::string::npos)
      << lmrt_context_last_error(c.get());
  // 54 cells are left; a claimed count far past them is refused without reading the (10-token) array.
  EXPECT_EQ(lmrt_eval(c.get(), toks, size_t{1} << 40), LMRT_ERR_CONTEXT_FULL);
  EXPECT_EQ(lmrt_eval(c.get(), toks, 55), LMRT_ERR_CONTEXT_FULL);
}

TEST(CApi, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(lmrt_model_params_init(nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_params_init(nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_generate_request_init(nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_get_info(nullptr, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_tokenize(nullptr, "x", 1, 0, nullptr, 0, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_context_create(nullptr, nullptr, nullptr, nullptr, 0), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_eval(nullptr, nullptr, 0), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_generate(nullptr, nullptr, nullptr, nullptr, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_model_close(nullptr), LMRT_OK);
  EXPECT_EQ(lmrt_context_free(nullptr), LMRT_OK);
  EXPECT_STREQ(lmrt_model_last_error(nullptr), "");
  EXPECT_STREQ(lmrt_context_last_error(nullptr), "");
  ModelPtr m = open("stories260K.gguf");
  ContextPtr c = context(m.get(), 16);
  EXPECT_EQ(lmrt_generate(c.get(), nullptr, nullptr, nullptr, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.max_tokens = 0;
  EXPECT_EQ(lmrt_generate(c.get(), &req, nullptr, nullptr, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(c.get())).find("max_tokens"), std::string::npos);
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.kv_type = 7;
  lmrt_context* bad = nullptr;
  EXPECT_EQ(lmrt_context_create(m.get(), &p, &bad, nullptr, 0), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
}

TEST(CApi, VersionsAndStatusStrings) {
  EXPECT_EQ(lmrt_abi_version(), static_cast<uint32_t>(LMRT_ABI_VERSION));
  EXPECT_EQ(lmrt_version_number(), static_cast<uint32_t>(LMRT_VERSION_NUMBER));
  EXPECT_EQ(std::string(lmrt_version_string()), std::to_string(LMRT_VERSION_MAJOR) + "." +
                                                    std::to_string(LMRT_VERSION_MINOR) + "." +
                                                    std::to_string(LMRT_VERSION_PATCH));
  for (int s = 0; s <= LMRT_ERR_BUFFER_TOO_SMALL; ++s)
    EXPECT_STRNE(lmrt_status_str(static_cast<lmrt_status>(s)), "unknown status") << s;
}

// lmrt_isa names the kernels a context created now runs: the most capable set this CPU has, or the one
// LMRT_ISA names when the CPU has it; an unknown or unavailable name changes nothing.
TEST(CApi, IsaIsTheBestThisCpuRunsOrTheOneLmrtIsaForces) {
  using lmrt::simd::Isa;
  const lmrt::test::ScopedEnv restore("LMRT_ISA");
  unsetenv("LMRT_ISA");
  const std::string best = lmrt_isa();
  std::string expected = "scalar";
  for (Isa isa : {Isa::avx512, Isa::avx2vnni, Isa::avx2, Isa::neon})
    if (lmrt::simd::isa_available(isa)) {
      expected = lmrt::simd::isa_name(isa);
      break;
    }
  EXPECT_EQ(best, expected);
  for (Isa isa : lmrt::simd::kAllIsas) {
    const char* name = lmrt::simd::isa_name(isa);
    setenv("LMRT_ISA", name, 1);
    EXPECT_EQ(std::string(lmrt_isa()), lmrt::simd::isa_available(isa) ? std::string(name) : best) << name;
  }
  setenv("LMRT_ISA", "scalar", 1);
  EXPECT_STREQ(lmrt_isa(), "scalar");  // always available
  setenv("LMRT_ISA", "avx9000", 1);
  EXPECT_EQ(std::string(lmrt_isa()), best);
}

}  // namespace
