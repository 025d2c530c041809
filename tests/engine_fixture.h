// What the batch engine's runtime-level tests build again and again: a model with its tokenizer,
// context parameters, the sampler chain of a seeded request, the tokens a request gets alone on a
// fresh context (the reference every engine test compares with) and the same request for the engine.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "runtime/engine/batch_engine.h"
#include "runtime/generate/context.h"
#include "runtime/generate/generator.h"
#include "runtime/model/llama_model.h"
#include "runtime/sampling/chain_from_params.h"
#include "runtime/tokenizer/tokenizer.h"
#include "test_support.h"

namespace lmrt::test {

struct LoadedModel {
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<Tokenizer> tok;
};

// ../shared/models/<name> with its tokenizer; a failure is a test failure (and null members).
inline LoadedModel load_model(const std::string& name) {
  LoadedModel l;
  std::unique_ptr<GgufFile> g;
  EXPECT_TRUE(GgufFile::open(model_path(name), true, &g).ok()) << name;
  EXPECT_TRUE(LlamaModel::load(std::move(g), &l.model).ok()) << name;
  EXPECT_TRUE(Tokenizer::from_gguf(l.model->gguf(), &l.tok).ok()) << name;
  return l;
}

inline ContextParams context_params(uint32_t n_ctx, uint32_t threads, simd::Isa isa) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_threads = threads;
  cp.isa = isa;
  return cp;
}

// seed 0: greedy (no chain); else temperature 0.9 and top_k 40 with that seed.
inline std::unique_ptr<SamplerChain> seeded_chain(uint64_t seed) {
  if (seed == 0) return nullptr;
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  std::unique_ptr<SamplerChain> c;
  EXPECT_TRUE(make_chain_from_params(p, seed, &c).ok());
  return c;
}

// What generate() gives `r` (its prompt and max_tokens) with seeded_chain(seed) on a fresh context.
inline GenerateResult generate_alone(const LoadedModel& l, GenerateRequest r, uint64_t seed, const ContextParams& cp) {
  std::unique_ptr<Context> ctx;
  EXPECT_TRUE(Context::create(*l.model, cp, &ctx).ok());
  auto chain = seeded_chain(seed);
  r.sampler = chain.get();
  GenerateResult out;
  const Status s = generate(*ctx, *l.tok, r, {}, &out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// The same request for BatchEngine::submit.
inline EngineRequest engine_request(GenerateRequest r, uint64_t seed) {
  EngineRequest e;
  e.req = std::move(r);
  e.chain = seeded_chain(seed);
  return e;
}

}  // namespace lmrt::test
