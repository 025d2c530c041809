#include "runtime/generate/cached_generation.h"

#include <chrono>

#include "runtime/cache/cache_key.h"
#include "runtime/generate/prefix_state_cache.h"
#include "runtime/kv/kv_arena.h"

namespace lmrt {

namespace {

using Clock = std::chrono::steady_clock;

FinishReason parse_finish(const std::string& s) {
  for (FinishReason r : {FinishReason::eos, FinishReason::stop, FinishReason::length, FinishReason::context_full})
    if (s == finish_reason_name(r)) return r;
  return FinishReason::none;
}

}  // namespace

CachedResponse to_cached(const GenerateResult& r) {
  CachedResponse c;
  c.text = r.text;
  c.tokens = r.tokens;
  c.finish_reason = finish_reason_name(r.finish_reason);
  c.prompt_tokens = static_cast<int32_t>(r.prompt_tokens);
  c.completion_tokens = static_cast<int32_t>(r.completion_tokens);
  c.piece_lengths = r.piece_lengths;
  c.piece_tokens = r.piece_tokens;
  for (const TokenLogprobs& lp : r.logprobs) {
    CachedTokenLogprob t;
    t.token = lp.chosen.token;
    t.logprob = lp.chosen.logprob;
    for (int32_t i = 0; i < lp.n_top; ++i) t.top.push_back({lp.top[i].token, lp.top[i].logprob});
    c.logprobs.push_back(std::move(t));
  }
  return c;
}

bool replay_cached(const CachedResponse& c, TokenSink sink, GenerateResult* out) {
  GenerateResult& r = *out;
  r.finish_reason = parse_finish(c.finish_reason);
  r.prompt_tokens = static_cast<uint32_t>(c.prompt_tokens);
  r.completion_tokens = static_cast<uint32_t>(c.completion_tokens);
  r.tokens = c.tokens;
  r.piece_lengths = c.piece_lengths;
  r.piece_tokens = c.piece_tokens;
  for (const CachedTokenLogprob& t : c.logprobs) {
    TokenLogprobs lp;
    lp.chosen = {t.token, t.logprob};
    lp.n_top = static_cast<int32_t>(std::min<size_t>(t.top.size(), kMaxTopLogprobs));
    for (int32_t i = 0; i < lp.n_top; ++i) lp.top[i] = {t.top[i].token, t.top[i].logprob};
    r.logprobs.push_back(lp);
  }
  r.text.clear();
  size_t offset = 0, first = 0;
  const size_t n_pieces = c.piece_lengths.empty() ? 1 : c.piece_lengths.size();
  for (size_t p = 0; p < n_pieces; ++p) {
    const size_t len = c.piece_lengths.empty() ? c.text.size() : c.piece_lengths[p];
    const size_t count = c.piece_tokens.empty() ? (p == 0 ? c.tokens.size() : 0) : c.piece_tokens[p];
    const std::string_view piece = std::string_view(c.text).substr(offset, len);
    r.text.append(piece);
    if (sink.fn != nullptr && sink.fn(sink.user, piece, r, first, count) != 0) {
      r.finish_reason = FinishReason::cancelled;
      return false;
    }
    offset += len;
    first += count;
  }
  return true;
}

bool cacheable(const GenerateRequest& req, const CacheUse& use) {
  return req.sampler == nullptr || (req.sampler->deterministic() && (!req.sampler->uses_rng() || use.seeded));
}

Status request_cache_key(const GenerateRequest& req, const CacheUse& use, std::vector<int32_t> prompt, uint32_t n_ctx,
                         const char* kv_type, CacheKey* key) {
  CacheKeyFields f;
  f.model_fingerprint = use.fingerprint;
  f.lmrt_version = use.version;
  f.prompt_tokens = std::move(prompt);
  f.sampler_chain = req.sampler != nullptr ? req.sampler->canonical_text() : "greedy";
  f.greedy = req.sampler == nullptr || !req.sampler->uses_rng();
  f.seeded = use.seeded;
  f.seed = req.sampler != nullptr ? req.sampler->seed() : 0;
  f.chain_deterministic = true;
  f.max_tokens = req.max_tokens;
  f.stop = req.stop;
  f.logprobs_n = req.top_logprobs;
  f.kv_type = kv_type;
  f.options = "n_ctx=" + std::to_string(n_ctx) + ";shift=" + (req.context_shift ? "1" : "0") +
              ";keep=" + std::to_string(req.n_keep) + use.extra_key;
  return make_cache_key(f, key);
}

namespace {

// generate() with the cache's prompt-prefix states around it (when the cache keeps them): the longest
// stored prefix of the prompt is loaded before, the prompt's own stored after. Their errors are
// warnings; loading counts as cache time (the result's timings start in generate()).
Status generate_with_prefix_states(Context& ctx, const Tokenizer& tok, const GenerateRequest& req, const CacheUse& use,
                                   TokenSink sink, GenerateResult* result, CacheOutcome* outcome) {
  PrefixStateUse prefix{use.cache, use.fingerprint, use.version};
  if (!prefix.on()) return generate(ctx, tok, req, sink, result);
  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok, req, &prompt));
  uint32_t loaded = 0;
  const auto t0 = Clock::now();
  if (Status s = load_prompt_prefix(ctx, prefix, prompt, &loaded); !s.ok()) outcome->warning = s.message();
  outcome->lookup_ms += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  LMRT_RETURN_IF_ERROR(generate(ctx, tok, req, sink, result));
  if (Status s = store_prompt_prefix(ctx, prefix, prompt); !s.ok()) outcome->warning = s.message();
  return Status::Ok();
}

}  // namespace

Status generate_cached(Context& ctx, const Tokenizer& tok, const GenerateRequest& req, const CacheUse& use,
                       TokenSink sink, GenerateResult* result, CacheOutcome* outcome) {
  *outcome = CacheOutcome{};
  // Stop criteria come from plugins, which may keep state the key cannot see: such requests are
  // cached only through their canonical text, which extra_key carries.
  if (use.cache == nullptr || !cacheable(req, use))
    return generate_with_prefix_states(ctx, tok, req, use, sink, result, outcome);

  const auto t0 = Clock::now();
  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok, req, &prompt));
  CacheKey key;
  LMRT_RETURN_IF_ERROR(
      request_cache_key(req, use, std::move(prompt), ctx.n_ctx(), kv_type_name(ctx.kv().type()), &key));
  outcome->consulted = true;

  CachedResponse cached;
  bool hit = false;
  if (Status s = use.cache->lookup(key, &cached, &hit); !s.ok()) outcome->warning = s.message();
  if (hit) {
    *result = GenerateResult{};
    outcome->hit = true;
    (void)replay_cached(cached, sink, result);
    outcome->lookup_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return Status::Ok();
  }
  outcome->lookup_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  LMRT_RETURN_IF_ERROR(generate_with_prefix_states(ctx, tok, req, use, sink, result, outcome));
  if (result->finish_reason != FinishReason::cancelled && result->finish_reason != FinishReason::error) {
    if (Status s = use.cache->store(key, to_cached(*result)); !s.ok()) outcome->warning = s.message();
  }
  return Status::Ok();
}

}  // namespace lmrt
