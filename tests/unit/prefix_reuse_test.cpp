// Prefix reuse in the batch engine (PrefixIndex, SequencePool): a prompt that starts with tokens the
// arena already holds (a shared system prompt, the earlier turns of a chat, the same prompt again)
// takes those cells instead of evaluating them, and every request still gets exactly the tokens it
// gets alone through generate() on a fresh context: greedy and seeded, on the stories models, quantized
// files and every architecture file (gemma's sliding windows included), at 1 to 3 threads, scalar and
// AVX2. A second request with the same new prefix waits for the first's cells (the prefix is computed
// once), cached prefixes give their cells and ids to new requests, and the knob turns reuse off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "runtime/engine/batch_engine.h"
#include "runtime/engine/prefix_index.h"
#include "runtime/engine/sequence_pool.h"
#include "runtime/generate/generator.h"
#include "runtime/kv/kv_sequences.h"

namespace lmrt {
namespace {

// ---- the index and the pool, without a model ------------------------------------------------

TEST(PrefixIndex, FindsTheLongestEvaluatedMatchAndWhatIsComing) {
  PrefixIndex index(4, 64);
  const std::vector<int32_t> a = {1, 5, 6, 7, 8, 9}, b = {1, 5, 6, 20};
  index.track(0, a, 3);  // a prompt of 6 tokens, 3 of them evaluated
  index.track(1, b, 4);
  const std::vector<int32_t> p = {1, 5, 6, 7, 8, 30};
  PrefixIndex::Match m = index.longest(p.data(), static_cast<uint32_t>(p.size()));
  EXPECT_EQ(m.seq, 0u);  // 3 evaluated tokens of a match, and 3 of b: the lower id
  EXPECT_EQ(m.n, 3u);
  EXPECT_EQ(m.n_coming, 5u);  // a will hold 5 tokens of p
  index.set_ready(0, 6);
  m = index.longest(p.data(), static_cast<uint32_t>(p.size()));
  EXPECT_EQ(m.n, 5u);
  // A generated token after the prompt, then the request ends: the sequence is cached.
  index.append(0, 42);
  EXPECT_EQ(index.n_ready(0), 7u);
  index.retain(0);
  EXPECT_TRUE(index.cached(0));
  EXPECT_EQ(index.n_cached(), 1u);
  const std::vector<int32_t> next_turn = {1, 5, 6, 7, 8, 9, 42, 3};
  m = index.longest(next_turn.data(), static_cast<uint32_t>(next_turn.size()));
  EXPECT_EQ(m.seq, 0u);
  EXPECT_EQ(m.n, 7u);
  EXPECT_EQ(m.n_coming, 3u);  // only the live b is still coming
  // Ties go to a cached sequence matched whole (it can be taken over).
  index.track(2, {1, 5, 6}, 3);
  index.retain(2);
  index.retain(1);
  const std::vector<int32_t> short_one = {1, 5, 6, 99};
  m = index.longest(short_one.data(), static_cast<uint32_t>(short_one.size()));
  EXPECT_EQ(m.seq, 2u);
  EXPECT_EQ(m.n, 3u);
  // Least recently used first: 0, then 2, then 1.
  EXPECT_EQ(index.least_recent(), 0u);
  EXPECT_EQ(index.least_recent(0), 2u);
  index.touch(0);
  index.touch(2);
  EXPECT_EQ(index.least_recent(), 1u);
  index.forget(1);
  EXPECT_EQ(index.n_cached(), 2u);
  EXPECT_EQ(index.least_recent(), 0u);
}

std::vector<int32_t> tokens_from(uint32_t n, uint32_t seed, int32_t first = -1) {
  std::vector<int32_t> t(n);
  for (uint32_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(3 + (i * 7919u + seed * 104729u) % 500u);
  if (first >= 0 && n > 0) t[0] = first;
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(SequencePool, TakesOverForksWaitsAndEvicts) {
  KvSequences seqs(64, 2 + 2);
  SequencePool::Options o;
  o.retained = 2;
  o.min_shared = 4;
  o.wait_gain = 4;
  SequencePool pool(seqs, o);
  const std::vector<int32_t> sys = tokens_from(12, 1, 1);
  const std::vector<int32_t> p1 = concat(sys, tokens_from(4, 2)), p2 = concat(sys, tokens_from(6, 3));
  uint32_t s1 = 0, s2 = 0, reused = 0;
  ASSERT_EQ(pool.acquire(p1, &s1, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, 0u);
  EXPECT_EQ(seqs.length(s1), 16u);
  // p2 shares 12 tokens with p1, none evaluated yet: it waits for them.
  EXPECT_EQ(pool.acquire(p2, &s2, &reused), SequencePool::Outcome::wait);
  pool.prompt_ready(s1, 8);  // 8 of 12 there, 4 (wait_gain) still coming: it waits on
  EXPECT_EQ(pool.acquire(p2, &s2, &reused), SequencePool::Outcome::wait);
  pool.prompt_ready(s1, 9);  // 3 still coming: not worth waiting for
  ASSERT_EQ(pool.acquire(p2, &s2, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, 9u);
  EXPECT_EQ(seqs.length(s2), 18u);
  for (uint32_t i = 0; i < 9; ++i) EXPECT_EQ(seqs.cells(s2)[i], seqs.cells(s1)[i]);
  EXPECT_NE(seqs.cells(s2)[9], seqs.cells(s1)[9]);
  EXPECT_EQ(pool.n_running(), 2u);
  // p1 decodes two tokens and ends: it stays cached with the 18 tokens evaluated.
  pool.prompt_ready(s1, 16);
  ASSERT_TRUE(seqs.grow(s1, 1).ok());
  pool.token_ready(s1, 300);
  ASSERT_TRUE(seqs.grow(s1, 1).ok());
  pool.token_ready(s1, 301);
  pool.release(s1);
  EXPECT_EQ(pool.n_cached(), 1u);
  EXPECT_EQ(pool.n_running(), 1u);
  // The next turn takes the cached sequence over: same id, its cells in place.
  const uint32_t first_cell = seqs.cells(s1)[0];
  const std::vector<int32_t> turn2 = concat(concat(p1, {300, 301}), tokens_from(5, 4));
  uint32_t s3 = 0;
  ASSERT_EQ(pool.acquire(turn2, &s3, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(s3, s1);
  EXPECT_EQ(reused, 18u);
  EXPECT_EQ(seqs.cells(s3)[0], first_cell);
  EXPECT_EQ(pool.n_cached(), 0u);
  // A prompt the arena holds whole: all but its last token.
  pool.prompt_ready(s3, static_cast<uint32_t>(turn2.size()));
  uint32_t s4 = 0;
  ASSERT_EQ(pool.acquire(turn2, &s4, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, turn2.size() - 1);
  // A cancelled prompt keeps only what it evaluated.
  pool.release(s2);  // s2's 18 cells: 9 shared, 9 never evaluated
  EXPECT_EQ(pool.n_cached(), 1u);
  EXPECT_EQ(seqs.length(s2), 9u);
  // Cells for a new prompt come from the cached sequences, and ids too.
  pool.release(s3);
  pool.release(s4);
  EXPECT_EQ(pool.n_cached(), 2u);  // at most `retained`: the least recent (s2) went
  EXPECT_FALSE(seqs.live(s2));
  uint32_t big = 0;
  ASSERT_EQ(pool.acquire(tokens_from(64, 9, 1), &big, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, 0u);
  EXPECT_EQ(pool.n_cached(), 0u);
  EXPECT_EQ(seqs.n_free_cells(), 0u);
  pool.release(big);
  pool.drop_cached();
  EXPECT_EQ(seqs.n_free_cells(), 64u);
  EXPECT_EQ(seqs.n_live(), 0u);
}

TEST(SequencePool, TurnedOffStartsEveryPromptEmpty) {
  KvSequences seqs(32, 2);
  SequencePool::Options o;
  o.reuse = false;
  SequencePool pool(seqs, o);
  const std::vector<int32_t> p = tokens_from(20, 1, 1);
  uint32_t a = 0, b = 0, reused = 7;
  ASSERT_EQ(pool.acquire(p, &a, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, 0u);
  pool.prompt_ready(a, 20);
  pool.release(a);
  EXPECT_EQ(pool.n_cached(), 0u);
  EXPECT_EQ(seqs.n_free_cells(), 32u);
  ASSERT_EQ(pool.acquire(p, &b, &reused), SequencePool::Outcome::admitted);
  EXPECT_EQ(reused, 0u);
}

// ---- the engine against generate() on real models -------------------------------------------

using test::context_params;
using Loaded = test::LoadedModel;

Loaded load(const std::string& name) { return test::load_model(name); }

struct Ask {
  std::vector<int32_t> prompt;
  int32_t max_tokens;
  uint64_t seed = 0;  // 0: greedy; else temperature 0.9, top_k 40 with this seed
};

GenerateRequest request_of(const Ask& a) {
  GenerateRequest r;
  r.prompt_tokens = a.prompt;
  r.max_tokens = a.max_tokens;
  return r;
}

GenerateResult alone(const Loaded& l, const Ask& a, const ContextParams& cp) {
  return test::generate_alone(l, request_of(a), a.seed, cp);
}

EngineRequest engine_request(const Ask& a) { return test::engine_request(request_of(a), a.seed); }

// The tokens of a finished request that its sequence evaluated: all but the last one sampled,
// unless EOS (never evaluated, never listed) ended it.
uint32_t evaluated(const GenerateResult& r) {
  const uint32_t n = static_cast<uint32_t>(r.tokens.size());
  return r.finish_reason == FinishReason::eos ? n : n - 1;
}

void expect_same(const GenerateResult& got, const GenerateResult& want, const std::string& what) {
  EXPECT_EQ(got.tokens, want.tokens) << what;
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.finish_reason, want.finish_reason) << what;
  EXPECT_EQ(got.prompt_tokens, want.prompt_tokens) << what;
}

struct ReuseCase {
  const char* model;
  uint32_t threads;
  simd::Isa isa;
};

class PrefixReuseMatchesAlone : public testing::TestWithParam<ReuseCase> {};

// A conversation and its neighbours: R1 and R2 share a 48-token system prompt and are submitted
// together (R2 waits for R1's cells); R3 is R1's next turn (its prompt, its reply, a new message),
// submitted with R4, R1's prompt again; all four get what they get alone.
TEST_P(PrefixReuseMatchesAlone, SharedSystemPromptNextTurnAndTheSamePromptAgain) {
  const ReuseCase c = GetParam();
  if (!simd::isa_available(c.isa)) GTEST_SKIP() << simd::isa_name(c.isa) << " is not available here";
  Loaded l = load(c.model);
  const ContextParams cp = context_params(256, c.threads, c.isa);
  const std::vector<int32_t> sys = tokens_from(48, 1, 1);  // BOS first
  Ask r1{concat(sys, tokens_from(6, 2)), 12}, r2{concat(sys, tokens_from(9, 3)), 14, 5};
  ASSERT_NE(r1.prompt[48], r2.prompt[48]);

  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(Context::create(*l.model, cp, &ctx).ok());
  EngineParams ep;
  ep.prefill_chunk = 8;  // R1's 54 prompt tokens take 7 steps, R2 waits for 6
  std::unique_ptr<BatchEngine> engine;
  ASSERT_TRUE(BatchEngine::create(*ctx, *l.tok, ep, &engine).ok());
  uint64_t id1 = 0, id2 = 0;
  ASSERT_TRUE(engine->submit(engine_request(r1), &id1).ok());
  ASSERT_TRUE(engine->submit(engine_request(r2), &id2).ok());
  ASSERT_TRUE(engine->run().ok());
  const GenerateResult g1 = *engine->result(id1), g2 = *engine->result(id2);
  expect_same(g1, alone(l, r1, cp), "R1");
  expect_same(g2, alone(l, r2, cp), "R2");
  EXPECT_EQ(g1.reused_tokens, 0u);
  EXPECT_EQ(g2.reused_tokens, 48u);  // the system prompt, computed once
  EXPECT_EQ(engine->n_cached(), 2u);

  // The next turn of R1 holds R1's whole sequence; R1's prompt again holds all but its last token.
  Ask r3{concat(concat(r1.prompt, g1.tokens), tokens_from(7, 4)), 10, 9}, r4{r1.prompt, 12, 3};
  uint64_t id3 = 0, id4 = 0;
  ASSERT_TRUE(engine->submit(engine_request(r3), &id3).ok());
  ASSERT_TRUE(engine->submit(engine_request(r4), &id4).ok());
  ASSERT_TRUE(engine->run().ok());
  const GenerateResult& g3 = *engine->result(id3);
  const GenerateResult& g4 = *engine->result(id4);
  expect_same(g3, alone(l, r3, cp), "R3");
  expect_same(g4, alone(l, r4, cp), "R4");
  EXPECT_EQ(g3.reused_tokens, r1.prompt.size() + evaluated(g1));
  EXPECT_EQ(g4.reused_tokens, r1.prompt.size() - 1);

  // Every cell is accounted for: dropping the cache frees the arena.
  EXPECT_EQ(engine->n_running(), 0u);
  engine->drop_cached();
  EXPECT_EQ(engine->sequences().n_free_cells(), cp.n_ctx);
}

INSTANTIATE_TEST_SUITE_P(
    ModelsThreadsAndIsas, PrefixReuseMatchesAlone,
    testing::Values(
        ReuseCase{"stories260K.gguf", 1, simd::Isa::scalar}, ReuseCase{"stories260K.gguf", 2, simd::Isa::avx2},
        ReuseCase{"stories260K.gguf", 3, simd::Isa::avx2}, ReuseCase{"TinyStories-656K-Q8_0.gguf", 1, simd::Isa::avx2},
        ReuseCase{"TinyStories-656K-Q8_0.gguf", 2, simd::Isa::scalar},
        ReuseCase{"quant/base-Q4_K_M.gguf", 2, simd::Isa::avx2},
        ReuseCase{"quant/base-Q4_0.gguf", 1, simd::Isa::scalar}, ReuseCase{"quant/base-Q4_0.gguf", 2, simd::Isa::avx2},
        ReuseCase{"quant/base-Q4_0.gguf", 3, simd::Isa::avx2}, ReuseCase{"quant/w320-Q5_K_M.gguf", 2, simd::Isa::avx2},
        ReuseCase{"quant/base-IQ4_XS.gguf", 1, simd::Isa::avx2}, ReuseCase{"arch/qwen2-f16.gguf", 2, simd::Isa::avx2},
        ReuseCase{"arch/phi3-f16.gguf", 1, simd::Isa::avx2}, ReuseCase{"arch/gemma2-f16.gguf", 2, simd::Isa::avx2},
        ReuseCase{"arch/gemma2-f16.gguf", 1, simd::Isa::scalar}, ReuseCase{"arch/gemma3-f16.gguf", 3, simd::Isa::avx2},
        ReuseCase{"arch/gemma3-f16.gguf", 2, simd::Isa::scalar}),
    [](const testing::TestParamInfo<ReuseCase>& i) {
      std::string name = i.param.model;
      name = name.substr(0, name.find(".gguf"));
      for (char& ch : name)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name + "_" + simd::isa_name(i.param.isa) + "_" + std::to_string(i.param.threads) + "threads";
    });

// Eight requests with the same 64-token system prompt, submitted at once: the prompt is computed
// once (seven requests reuse it) and each gets what it gets alone.
TEST(PrefixReuse, EightRequestsComputeASharedSystemPromptOnce) {
  Loaded l = load("stories260K.gguf");
  const ContextParams cp = context_params(512, 2, simd::best_isa());
  const std::vector<int32_t> sys = tokens_from(64, 11, 1);
  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(Context::create(*l.model, cp, &ctx).ok());
  EngineParams ep;
  ep.max_sequences = 8;
  ep.prefill_chunk = 16;
  std::unique_ptr<BatchEngine> engine;
  ASSERT_TRUE(BatchEngine::create(*ctx, *l.tok, ep, &engine).ok());
  std::vector<Ask> asks;
  std::vector<uint64_t> ids(8);
  for (uint32_t i = 0; i < 8; ++i) {
    asks.push_back(Ask{concat(sys, tokens_from(3 + i, 20 + i)), 8, i % 2 ? 40u + i : 0u});
    ASSERT_TRUE(engine->submit(engine_request(asks.back()), &ids[i]).ok());
  }
  ASSERT_TRUE(engine->run().ok());
  uint32_t computed = 0;
  for (uint32_t i = 0; i < 8; ++i) {
    const GenerateResult& r = *engine->result(ids[i]);
    expect_same(r, alone(l, asks[i], cp), "request " + std::to_string(i));
    EXPECT_EQ(r.reused_tokens, i == 0 ? 0u : 64u) << "request " << i;
    computed += r.prompt_tokens - r.reused_tokens;
  }
  uint32_t suffixes = 0;
  for (uint32_t i = 0; i < 8; ++i) suffixes += 3 + i;
  EXPECT_EQ(computed, 64u + suffixes);
}

// A small arena full of cached prefixes: a new request that needs their cells (for its prompt and
// then for its generated tokens) and a sequence id gets them, and finishes as it does alone.
TEST(PrefixReuse, CachedPrefixesGiveWayToNewRequests) {
  Loaded l = load("stories260K.gguf");
  const uint32_t n_cells = 128;
  const ContextParams cp = context_params(n_cells, 1, simd::best_isa());
  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(Context::create(*l.model, cp, &ctx).ok());
  EngineParams ep;
  ep.max_sequences = 1;
  ep.retained_sequences = 3;
  std::unique_ptr<BatchEngine> engine;
  ASSERT_TRUE(BatchEngine::create(*ctx, *l.tok, ep, &engine).ok());
  for (uint32_t i = 0; i < 4; ++i) {
    uint64_t id = 0;
    ASSERT_TRUE(engine->submit(engine_request(Ask{tokens_from(24, 30 + i, 1), 10}), &id).ok());
    ASSERT_TRUE(engine->run().ok());
    ASSERT_EQ(engine->result(id)->finish_reason, FinishReason::length);
  }
  EXPECT_EQ(engine->n_cached(), 3u);  // the oldest of four gave its id to the newest
  EXPECT_EQ(engine->sequences().n_free_cells(), n_cells - 3 * 33);
  // 70 prompt cells: two cached sequences give theirs; the third gives its cells during decoding.
  const Ask big{tokens_from(70, 50, 1), 50};
  const GenerateResult want = alone(l, big, cp);
  ASSERT_GT(want.tokens.size(), 40u);  // beyond the cells left after admission
  uint64_t id = 0;
  ASSERT_TRUE(engine->submit(engine_request(big), &id).ok());
  bool busy = true;
  ASSERT_TRUE(engine->step(&busy).ok());
  EXPECT_EQ(engine->n_cached(), 1u);
  ASSERT_TRUE(engine->run().ok());
  const GenerateResult& r = *engine->result(id);
  expect_same(r, want, "big");
  EXPECT_EQ(r.reused_tokens, 0u);
  EXPECT_EQ(engine->n_cached(), 1u);  // the big request's own sequence
}

// prefix_reuse off: nothing is reused or kept, and the tokens are the same.
TEST(PrefixReuse, TurnedOffReusesNothing) {
  Loaded l = load("stories260K.gguf");
  const ContextParams cp = context_params(256, 1, simd::best_isa());
  std::unique_ptr<Context> ctx;
  ASSERT_TRUE(Context::create(*l.model, cp, &ctx).ok());
  EngineParams ep;
  ep.prefix_reuse = false;
  std::unique_ptr<BatchEngine> engine;
  ASSERT_TRUE(BatchEngine::create(*ctx, *l.tok, ep, &engine).ok());
  const Ask a{tokens_from(40, 1, 1), 10};
  for (int round = 0; round < 2; ++round) {
    uint64_t id = 0;
    ASSERT_TRUE(engine->submit(engine_request(a), &id).ok());
    ASSERT_TRUE(engine->run().ok());
    expect_same(*engine->result(id), alone(l, a, cp), "round " + std::to_string(round));
    EXPECT_EQ(engine->result(id)->reused_tokens, 0u);
    EXPECT_EQ(engine->n_cached(), 0u);
    EXPECT_EQ(engine->sequences().n_free_cells(), cp.n_ctx);
  }
  ep.prefix_reuse = true;
  ep.retained_sequences = EngineParams::kMaxRetained + 1;
  std::unique_ptr<BatchEngine> refused;
  engine.reset();
  EXPECT_EQ(BatchEngine::create(*ctx, *l.tok, ep, &refused).code(), Code::invalid_argument);
}

// Attention over a view that is not one run of cells, with the gather buffers reserved, gives the
// bits of the same prompt stored as a run, for every architecture's attention path.
TEST(PrefixReuse, ScatteredCellsGiveTheBitsOfARun) {
  for (const char* name : {"stories260K.gguf", "arch/gemma2-f16.gguf", "arch/gemma3-f16.gguf", "arch/qwen3-f16.gguf"}) {
    SCOPED_TRACE(name);
    Loaded l = load(name);
    const ContextParams cp = context_params(64, 2, simd::best_isa());
    const std::vector<int32_t> prompt = tokens_from(24, 3, 1);  // longer than gemma's 16-token window
    const uint32_t n = static_cast<uint32_t>(prompt.size());
    std::unique_ptr<Context> in_order, scattered;
    ASSERT_TRUE(Context::create(*l.model, cp, &in_order).ok());
    ASSERT_TRUE(Context::create(*l.model, cp, &scattered).ok());
    ASSERT_TRUE(scattered->reserve_scattered_views().ok());
    std::vector<uint32_t> pos(n), cells(n), run(n);
    std::vector<AttentionView> views(n), run_views(n);
    for (uint32_t p = 0; p < n; ++p) {
      pos[p] = p;
      cells[p] = p < 10 ? p : 63 - 2 * (p - 10);  // a run of 10, then descending with gaps
      run[p] = p;
    }
    for (uint32_t p = 0; p < n; ++p) {
      views[p] = AttentionView{cells.data(), p + 1, p < 10};
      run_views[p] = AttentionView{run.data(), p + 1, true};
    }
    const uint32_t last = n - 1;
    GraphBatch b;
    b.tokens = prompt.data();
    b.n = n;
    b.pos = pos.data();
    b.slot = cells.data();
    b.views = views.data();
    b.logit_rows = &last;
    b.n_logit_rows = 1;
    GraphBatch in_run = b;
    in_run.slot = run.data();
    in_run.views = run_views.data();
    ASSERT_TRUE(scattered->eval_sequences(b).ok());
    ASSERT_TRUE(in_order->eval_sequences(in_run).ok());
    const uint32_t n_vocab = l.model->hparams().n_vocab;
    EXPECT_EQ(std::memcmp(scattered->batch_logits(0), in_order->batch_logits(0), n_vocab * sizeof(float)), 0);
    // And one more token decoded on each (a single-token step over a scattered view).
    const int32_t next = 7;
    const uint32_t next_pos = n, next_cell = 11, next_run = n;
    cells.push_back(next_cell);
    run.push_back(next_run);
    const AttentionView v1{cells.data(), n + 1, false}, r1{run.data(), n + 1, true};
    GraphBatch d = b, dr = in_run;
    const uint32_t row0 = 0;
    d.tokens = dr.tokens = &next;
    d.n = dr.n = 1;
    d.pos = dr.pos = &next_pos;
    d.slot = &next_cell;
    dr.slot = &next_run;
    d.views = &v1;
    dr.views = &r1;
    d.logit_rows = dr.logit_rows = &row0;
    ASSERT_TRUE(scattered->eval_sequences(d).ok());
    ASSERT_TRUE(in_order->eval_sequences(dr).ok());
    EXPECT_EQ(std::memcmp(scattered->batch_logits(0), in_order->batch_logits(0), n_vocab * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace lmrt
