// Generation controls through the C API: seeded sampling, stop strings, logprobs, UTF-8 streaming
// with byte-fallback tokens, context shift and beam search, on the real test models.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "c_api_fixture.h"
#include "runtime/generate/context.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/utf8.h"
#include "test_support.h"

namespace {

struct Handles {
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  ~Handles() {
    lmrt_context_free(ctx);
    lmrt_model_close(model);
  }
};

void open(Handles* h, const std::string& name, uint32_t n_ctx, uint32_t threads = 2) {
  h->model = lmrt::test::open_shared_model(name).release();
  ASSERT_NE(h->model, nullptr);
  h->ctx = lmrt::test::make_context(h->model, n_ctx, threads).release();
  ASSERT_NE(h->ctx, nullptr);
}

lmrt_generate_request request(const char* prompt, int32_t max_tokens) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt = prompt;
  r.prompt_len = static_cast<size_t>(-1);
  r.max_tokens = max_tokens;
  return r;
}

struct Stream {
  std::string text;
  std::vector<std::string> pieces;
  std::vector<int32_t> tokens;
  std::vector<lmrt_token_logprobs> logprobs;
};

int on_token(void* user, const lmrt_token_event* ev) {
  auto* s = static_cast<Stream*>(user);
  s->pieces.emplace_back(ev->text, ev->text_len);
  s->text.append(ev->text, ev->text_len);
  s->tokens.insert(s->tokens.end(), ev->tokens, ev->tokens + ev->n_tokens);
  if (ev->logprobs != nullptr) s->logprobs.insert(s->logprobs.end(), ev->logprobs, ev->logprobs + ev->n_tokens);
  return 0;
}

std::vector<int32_t> run(Handles& h, const lmrt_generate_request& req, lmrt_generate_result* res, Stream* s = nullptr) {
  res->struct_size = sizeof *res;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, s ? on_token : nullptr, s, res), LMRT_OK) << lmrt_context_last_error(h.ctx);
  return std::vector<int32_t>(res->tokens, res->tokens + res->completion_tokens);
}

TEST(GenerationControls, SeededSamplingIsReproducibleAcrossThreadCounts) {
  std::vector<std::vector<int32_t>> runs;
  for (uint32_t threads : {1u, 2u, 3u}) {
    Handles h;
    open(&h, "TinyStories-656K-Q8_0.gguf", 256, threads);
    lmrt_generate_request req = request("Once upon a time", 60);
    req.temperature = 0.9f;
    req.top_k = 40;
    req.top_p = 0.95f;
    req.seed = 1234;
    lmrt_generate_result res;
    runs.push_back(run(h, req, &res));
    req.seed = 99;
    lmrt_generate_result other;
    EXPECT_NE(run(h, req, &other), runs.back()) << "a different seed gave the same 60 tokens";
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST(GenerationControls, SamplerHandleAndSpecGiveTheSameTokens) {
  Handles h;
  open(&h, "TinyStories-656K-Q8_0.gguf", 256);
  const char* spec = "penalties(repeat=1.1,last_n=64) top_k(40) top_p(0.9) temperature(0.7) dist";
  lmrt_sampler* chain = nullptr;
  char err[256];
  ASSERT_EQ(lmrt_sampler_create(spec, 7, &chain, err, sizeof err), LMRT_OK) << err;
  char text[512];
  size_t len = 0;
  ASSERT_EQ(lmrt_sampler_describe(chain, text, sizeof text, &len), LMRT_OK);
  EXPECT_STREQ(text,
               "penalties(repeat=1.1,presence=0,frequency=0,last_n=64) top_k(k=40) top_p(p=0.9,min_keep=1) "
               "temperature(t=0.7) dist");
  lmrt_generate_request req = request("The dog", 40);
  req.sampler = chain;
  lmrt_generate_result a, b, c;
  const std::vector<int32_t> first = run(h, req, &a);
  EXPECT_EQ(run(h, req, &b), first) << "a request must not change the caller's chain";
  req.sampler = nullptr;
  req.samplers = spec;
  req.seed = 7;
  EXPECT_EQ(run(h, req, &c), first);
  lmrt_sampler_free(chain);
  EXPECT_EQ(lmrt_sampler_create("top_k(40) top_p(1.5)", 1, &chain, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("top_p"), std::string::npos) << err;
  EXPECT_EQ(chain, nullptr);
}

TEST(GenerationControls, StopStringsEndTheTextBeforeThem) {
  Handles h;
  open(&h, "stories260K.gguf", 512);
  lmrt_generate_result plain;
  run(h, request("", 120), &plain);
  const std::string full(plain.text, plain.text_len);  // "Once upon a time, there was a little girl named Lily..."
  const size_t at = full.find("girl named");
  ASSERT_NE(at, std::string::npos) << full;

  for (const std::vector<const char*>& stops :
       {std::vector<const char*>{"girl named"}, std::vector<const char*>{"zebra", "rl nam", "Lily"}}) {
    lmrt_generate_request req = request("", 120);
    req.stop = stops.data();
    req.n_stop = stops.size();
    lmrt_generate_result res;
    Stream s;
    run(h, req, &res, &s);
    const std::string text(res.text, res.text_len);
    EXPECT_EQ(res.finish_reason, LMRT_FINISH_STOP);
    const size_t cut = stops.size() == 1 ? at : at + 2;  // "rl nam" starts 2 bytes into "girl named"
    EXPECT_EQ(text, full.substr(0, cut));
    EXPECT_EQ(s.text, text);
    for (const std::string& p : s.pieces) EXPECT_EQ(p.find("girl"), std::string::npos) << p;
  }
  // A stop string that never appears changes nothing.
  const char* never[] = {"<<never>>"};
  lmrt_generate_request req = request("", 120);
  req.stop = never;
  req.n_stop = 1;
  lmrt_generate_result res;
  run(h, req, &res);
  EXPECT_EQ(std::string(res.text, res.text_len), full);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_LENGTH);
}

TEST(GenerationControls, LogprobsDescribeTheModelDistribution) {
  Handles h;
  open(&h, "TinyStories-656K-Q8_0.gguf", 256);
  lmrt_generate_request req = request("Once upon a time", 30);
  req.logprobs = 5;
  lmrt_generate_result res;
  Stream s;
  const std::vector<int32_t> toks = run(h, req, &res, &s);
  ASSERT_NE(res.logprobs, nullptr);
  ASSERT_EQ(s.logprobs.size(), toks.size());
  for (size_t i = 0; i < toks.size(); ++i) {
    const lmrt_token_logprobs& lp = res.logprobs[i];
    EXPECT_EQ(lp.chosen.token, toks[i]);
    EXPECT_LE(lp.chosen.logprob, 0.0f);
    ASSERT_EQ(lp.n_top, 5u);
    EXPECT_EQ(lp.top[0].token, toks[i]) << "greedy picks the most likely token";
    EXPECT_FLOAT_EQ(lp.top[0].logprob, lp.chosen.logprob);
    double mass = 0;
    for (uint32_t j = 0; j < lp.n_top; ++j) {
      if (j > 0) {
        EXPECT_LE(lp.top[j].logprob, lp.top[j - 1].logprob);
      }
      mass += std::exp(lp.top[j].logprob);
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
    EXPECT_EQ(std::memcmp(&lp, &s.logprobs[i], sizeof lp), 0) << "streamed and final logprobs differ at " << i;
  }
  req.logprobs = 21;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
}

TEST(GenerationControls, StreamingNeverDeliversInvalidUtf8FromByteTokens) {
  Handles h;
  open(&h, "stories260K.gguf", 512);
  // Make the model emit only the byte-fallback tokens of a three-byte character (E2 82 AC, "€"),
  // in random order: most sequences are invalid, some complete the character across tokens.
  std::vector<int32_t> ids;
  for (const char* piece : {"<0xE2>", "<0x82>", "<0xAC>"}) {
    int32_t id = -1;
    for (int32_t t = 0; t < 512 && id < 0; ++t) {
      char buf[16];
      size_t len = 0;
      if (lmrt_token_to_piece(h.model, t, buf, sizeof buf, &len) == LMRT_OK && len == 1 &&
          static_cast<unsigned char>(buf[0]) == std::stoul(std::string(piece).substr(3, 2), nullptr, 16))
        id = t;
    }
    ASSERT_GE(id, 0) << piece;
    ids.push_back(id);
  }
  std::vector<lmrt_logit_bias> bias;
  for (int32_t t = 0; t < 512; ++t)
    if (std::find(ids.begin(), ids.end(), t) == ids.end()) bias.push_back({t, -INFINITY});
  lmrt_generate_request req = request("", 200);
  req.temperature = 50.0f;  // nearly uniform over the three
  req.seed = 5;
  req.logit_bias = bias.data();
  req.n_logit_bias = static_cast<uint32_t>(bias.size());
  lmrt_generate_result res;
  Stream s;
  run(h, req, &res, &s);
  EXPECT_EQ(res.completion_tokens, 200u);
  for (const std::string& p : s.pieces) EXPECT_EQ(lmrt::utf8_find_invalid(p), std::string::npos);
  EXPECT_EQ(s.text, std::string(res.text, res.text_len));
  EXPECT_EQ(s.tokens, std::vector<int32_t>(res.tokens, res.tokens + res.completion_tokens));
  EXPECT_NE(s.text.find("\xE2\x82\xAC"), std::string::npos) << "no character was completed across tokens";
  EXPECT_NE(s.text.find("\xEF\xBF\xBD"), std::string::npos) << "invalid sequences become U+FFFD";
}

TEST(GenerationControls, ContextShiftKeepsGoing) {
  Handles h;
  open(&h, "stories260K.gguf", 64);
  lmrt_generate_request req = request("Once upon a time", 200);
  req.context_shift = 1;
  req.n_keep = 1;
  lmrt_generate_result res;
  Stream s;
  run(h, req, &res, &s);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_LENGTH);
  EXPECT_EQ(res.completion_tokens, 200u);
  EXPECT_GE(res.context_shifts, 3u);
  EXPECT_LE(res.n_past, 64u);
  EXPECT_EQ(s.text, std::string(res.text, res.text_len));
  // Refused before anything runs, also where n_keep + 2 wraps around in 32 bits.
  for (uint32_t keep : {63u, 0xFFFFFFFEu, 0xFFFFFFFFu}) {
    req.n_keep = keep;
    Stream none;
    EXPECT_EQ(lmrt_generate(h.ctx, &req, on_token, &none, &res), LMRT_ERR_INVALID_ARGUMENT) << keep;
    EXPECT_TRUE(none.text.empty()) << keep;
  }
}

// After a shift, the keys of the moved tokens must read as if computed at their new positions.
// Layer 0's keys and values depend only on the token and its position, so there they must equal
// a fresh evaluation of the kept tokens (deeper layers also saw the dropped tokens, as intended).
TEST(GenerationControls, ShiftedKeysEqualKeysComputedAtTheNewPositions) {
  std::unique_ptr<lmrt::GgufFile> g;
  ASSERT_TRUE(lmrt::GgufFile::open(lmrt::test::model_path("stories260K.gguf"), true, &g).ok());
  std::unique_ptr<lmrt::LlamaModel> model;
  ASSERT_TRUE(lmrt::LlamaModel::load(std::move(g), &model).ok());
  lmrt::ContextParams p;
  p.n_ctx = 64;
  p.n_threads = 1;
  p.kv_type = lmrt::KvType::f32;
  std::unique_ptr<lmrt::Context> shifted, fresh;
  ASSERT_TRUE(lmrt::Context::create(*model, p, &shifted).ok());
  ASSERT_TRUE(lmrt::Context::create(*model, p, &fresh).ok());
  std::vector<int32_t> seq;
  for (int i = 0; i < 40; ++i) seq.push_back(i == 0 ? 1 : 260 + (i * 37) % 200);
  ASSERT_TRUE(shifted->eval(seq.data(), seq.size()).ok());
  ASSERT_TRUE(shifted->shift(4, 10).ok());
  std::vector<int32_t> kept(seq.begin(), seq.begin() + 4);
  kept.insert(kept.end(), seq.begin() + 14, seq.end());
  EXPECT_EQ(shifted->tokens(), kept);
  ASSERT_TRUE(fresh->eval(kept.data(), kept.size()).ok());
  const uint32_t kv_dim = model->hparams().kv_dim();
  std::vector<float> a(kv_dim), b(kv_dim), av(kv_dim), bv(kv_dim);
  for (uint32_t pos = 0; pos < kept.size(); ++pos) {
    shifted->kv().load(0, pos, a.data(), av.data());
    fresh->kv().load(0, pos, b.data(), bv.data());
    for (uint32_t i = 0; i < kv_dim; ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-4f) << "key at position " << pos << " dim " << i;
      ASSERT_EQ(av[i], bv[i]) << "value at position " << pos;
    }
  }
  // Generation goes on sensibly: the next token's logits stay close to a fresh evaluation's.
  const int32_t next = 300;
  ASSERT_TRUE(shifted->eval(&next, 1).ok());
  ASSERT_TRUE(fresh->eval(&next, 1).ok());
  double diff = 0, norm = 0;
  for (uint32_t v = 0; v < 512; ++v) {
    diff += std::abs(shifted->logits(0)[v] - fresh->logits(0)[v]);
    norm += std::abs(fresh->logits(0)[v]);
  }
  EXPECT_LT(diff / norm, 0.05);
  EXPECT_EQ(shifted->shift(30, 10).code(), lmrt::Code::invalid_argument);
}

TEST(GenerationControls, BeamSearchOfWidthOneIsGreedy) {
  Handles h;
  open(&h, "stories260K.gguf", 512);
  lmrt_generate_result greedy;
  const std::vector<int32_t> want = run(h, request("Once upon a time", 60), &greedy);
  lmrt_generate_request req = request("Once upon a time", 60);
  req.n_beams = 1;
  lmrt_generate_result res;
  EXPECT_EQ(run(h, req, &res), want);
  ASSERT_EQ(res.n_beams, 1u);
  EXPECT_EQ(std::vector<int32_t>(res.beams[0].tokens, res.beams[0].tokens + res.beams[0].n_tokens), want);
  EXPECT_EQ(std::string(res.beams[0].text, res.beams[0].text_len), std::string(greedy.text, greedy.text_len));
  req.n_beams = 2;
  lmrt_generate_result two;
  run(h, req, &two);
  EXPECT_EQ(two.n_beams, 2u);
  // The limits lmrt.h states: 16 beams, a finite length penalty.
  lmrt_generate_result bad;
  bad.struct_size = sizeof bad;
  req.n_beams = 17;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &bad), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(h.ctx)).find("n_beams must be 1 to 16"), std::string::npos);
  req.n_beams = 16;
  req.length_penalty = std::nanf("");
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &bad), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(h.ctx)).find("length_penalty must be finite"), std::string::npos);
}

TEST(GenerationControls, BeamSearchScoresAtLeastGreedyAndReportsTrueLogprobs) {
  Handles h;
  open(&h, "stories260K.gguf", 512);
  lmrt_generate_request greedy_req = request("Once upon a time", 40);
  greedy_req.logprobs = 0;
  lmrt_generate_result greedy;
  const std::vector<int32_t> g = run(h, greedy_req, &greedy);
  double greedy_logprob = 0;
  for (size_t i = 0; i < g.size(); ++i) greedy_logprob += greedy.logprobs[i].chosen.logprob;
  // The greedy run's score as beam search would count it (a greedy EOS would add its logprob).
  ASSERT_EQ(greedy.finish_reason, LMRT_FINISH_LENGTH);
  const double greedy_score = greedy_logprob / g.size();

  lmrt_generate_request req = request("Once upon a time", 40);
  req.n_beams = 4;
  lmrt_generate_result res;
  Stream s;
  run(h, req, &res, &s);
  ASSERT_GE(res.n_beams, 1u);
  ASSERT_LE(res.n_beams, 4u);
  EXPECT_GE(res.beams[0].score, greedy_score - 1e-4);
  EXPECT_EQ(s.text, std::string(res.beams[0].text, res.beams[0].text_len));
  for (uint32_t b = 1; b < res.n_beams; ++b) EXPECT_LE(res.beams[b].score, res.beams[b - 1].score);

  // Re-evaluate each beam from scratch: the summed logprobs must equal what beam search reported,
  // which checks that beams read the right (shared) KV slots.
  for (uint32_t b = 0; b < res.n_beams; ++b) {
    const lmrt_beam& beam = res.beams[b];
    std::vector<int32_t> seq(beam.tokens, beam.tokens + beam.n_tokens);
    ASSERT_EQ(lmrt_context_reset(h.ctx), LMRT_OK);
    size_t n_prompt = 0;
    int32_t prompt[32];
    ASSERT_EQ(lmrt_tokenize(h.model, "Once upon a time", 16, LMRT_TOKENIZE_ADD_BOS, prompt, 32, &n_prompt), LMRT_OK);
    ASSERT_EQ(lmrt_eval(h.ctx, prompt, n_prompt), LMRT_OK);
    double sum = 0;
    for (size_t i = 0; i < seq.size(); ++i) {
      const float* logits = nullptr;
      size_t n_vocab = 0;
      ASSERT_EQ(lmrt_get_logits(h.ctx, i == 0 ? n_prompt - 1 : 0, &logits, &n_vocab), LMRT_OK);
      double mx = logits[0], z = 0;
      for (size_t v = 1; v < n_vocab; ++v) mx = std::max<double>(mx, logits[v]);
      for (size_t v = 0; v < n_vocab; ++v) z += std::exp(logits[v] - mx);
      sum += logits[seq[i]] - mx - std::log(z);
      ASSERT_EQ(lmrt_eval(h.ctx, &seq[i], 1), LMRT_OK);
    }
    if (beam.finish_reason == LMRT_FINISH_EOS) continue;  // its logprob also counts the EOS token
    EXPECT_NEAR(sum, beam.logprob, 2e-2) << "beam " << b;
  }
}

TEST(GenerationControls, BeamSearchRefusesWhatItCannotHonour) {
  Handles h;
  open(&h, "stories260K.gguf", 128);
  lmrt_generate_request req = request("Once", 10);
  req.n_beams = 4;
  const char* stop[] = {"x"};
  req.stop = stop;
  req.n_stop = 1;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  req.n_stop = 0;
  req.n_beams = 99;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  req.n_beams = 4;
  EXPECT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_OK);
}

// max_tokens may be 2^31 - 1 (a server passes what a client asked for): what a request reserves up
// front must be bounded by the context, not by max_tokens (this asked for hundreds of GB before).
// The process's peak virtual size in kB (VmPeak), 0 where /proc is missing.
size_t vm_peak_kb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmPeak:", 0) == 0) return std::stoul(line.substr(7));
  return 0;
}

TEST(GenerationControls, HugeMaxTokensReservesOnlyTheContext) {
  const size_t peak_before = vm_peak_kb();
  Handles h;
  open(&h, "stories260K.gguf", 64);
  lmrt_generate_request req = request("Once upon a time", INT32_MAX);
  req.logprobs = 5;
  const lmrt_logit_bias no_eos{2, -INFINITY};
  req.logit_bias = &no_eos;
  req.n_logit_bias = 1;
  lmrt_generate_result res;
  Stream s;
  run(h, req, &res, &s);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_CONTEXT_FULL);
  EXPECT_EQ(res.prompt_tokens + res.completion_tokens, 64u + 1u);  // the last sampled token is not fed back
  EXPECT_EQ(s.logprobs.size(), res.completion_tokens);
  // Reserving for max_tokens asked for hundreds of GB (an allocator that overcommits hides it).
  EXPECT_LT(vm_peak_kb(), peak_before + (size_t{1} << 20)) << "kB of peak virtual memory";
}

// A prompt given as token ids generates what the same prompt as text does; bad ids are refused.
TEST(GenerationControls, PromptTokensStandInForThePromptText) {
  Handles h;
  open(&h, "stories260K.gguf", 128);
  lmrt_generate_request req = request("Once upon a time", 12);
  lmrt_generate_result res;
  const std::vector<int32_t> from_text = run(h, req, &res);
  const uint32_t prompt_tokens = res.prompt_tokens;
  std::vector<int32_t> ids(64);
  size_t n = 0;
  ASSERT_EQ(lmrt_tokenize(h.model, "Once upon a time", 16, LMRT_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n), LMRT_OK);
  ids.resize(n);
  lmrt_generate_request by_ids = request("ignored when prompt_tokens is set", 12);
  by_ids.prompt_tokens = ids.data();
  by_ids.n_prompt_tokens = ids.size();
  EXPECT_EQ(run(h, by_ids, &res), from_text);
  EXPECT_EQ(res.prompt_tokens, prompt_tokens);
  const int32_t bad = 1 << 20;
  by_ids.prompt_tokens = &bad;
  by_ids.n_prompt_tokens = 1;
  EXPECT_EQ(lmrt_generate(h.ctx, &by_ids, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  by_ids.prompt_tokens = nullptr;
  EXPECT_EQ(lmrt_generate(h.ctx, &by_ids, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
}

}  // namespace
