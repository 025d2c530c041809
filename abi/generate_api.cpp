// lmrt_generate: the request struct translated into a runtime request, results back.
#include "abi/api_support.h"
#include "abi/generate_request.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/generate/beam_search.h"
#include "runtime/generate/cached_generation.h"
#include "runtime/sampling/chain_from_params.h"
#include "runtime/sampling/grammar_sampler.h"
#include "runtime/util/utf8.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

namespace lmrt::abi {
uint64_t resolve_seed(uint64_t seed);  // sampler_api.cpp
Status build_chain(const std::string& spec, uint64_t seed, const lmrt_plugin_host* host,
                   const lmrt::TokenTextSource* vocab, std::unique_ptr<lmrt::SamplerChain>* out,
                   const lmrt::Sampler* grammar = nullptr);
}  // namespace lmrt::abi

namespace {

static_assert(sizeof(lmrt_token_logprobs) == sizeof(lmrt::TokenLogprobs) &&
                  offsetof(lmrt_token_logprobs, top) == offsetof(lmrt::TokenLogprobs, top) &&
                  offsetof(lmrt_token_logprobs, n_top) == offsetof(lmrt::TokenLogprobs, n_top),
              "lmrt_token_logprobs mirrors lmrt::TokenLogprobs so results are handed out without copying");

const lmrt_token_logprobs* as_c(const lmrt::TokenLogprobs* p) {
  return reinterpret_cast<const lmrt_token_logprobs*>(p);
}

// The chain the request's sampler fields ask for, before any grammar.
Status request_chain_without_grammar(const lmrt_generate_request& req, const lmrt_model& model,
                                     const lmrt::Sampler* grammar, std::unique_ptr<lmrt::SamplerChain>* out) {
  if (req.sampler != nullptr) return req.sampler->chain->clone(out);
  const uint64_t seed = resolve_seed(req.seed);
  if (req.samplers != nullptr && req.samplers[0] != '\0')
    return build_chain(req.samplers, seed, req.plugins, model.text_source.get(), out, grammar);
  lmrt::SamplingParams p;
  p.temperature = req.temperature;
  p.top_k = req.top_k;
  p.top_p = req.top_p;
  p.min_p = req.min_p;
  p.typical_p = req.typical_p;
  p.penalties.repeat = req.repeat_penalty;
  p.penalties.last_n = req.repeat_last_n;
  p.penalties.presence = req.presence_penalty;
  p.penalties.frequency = req.frequency_penalty;
  if (req.n_logit_bias > 0 && req.logit_bias == nullptr)
    return lmrt::Error(Code::invalid_argument, "n_logit_bias is set but logit_bias is NULL");
  for (uint32_t i = 0; i < req.n_logit_bias; ++i)
    p.logit_bias.push_back({req.logit_bias[i].token, req.logit_bias[i].bias});
  return lmrt::make_chain_from_params(p, seed, out);
}

// The grammar sampler of a request's grammar or json_schema field; null when it has neither.
Status request_grammar(const lmrt_generate_request& req, lmrt_model& model, std::unique_ptr<lmrt::Sampler>* out) {
  if (req.grammar != nullptr && req.json_schema != nullptr)
    return lmrt::Error(Code::invalid_argument, "give grammar or json_schema, not both");
  if (req.grammar == nullptr && req.json_schema == nullptr) return Status::Ok();
  std::shared_ptr<const lmrt::TokenTrie> trie;
  {
    std::lock_guard<std::mutex> lock(model.token_trie_mu);
    if (model.token_trie == nullptr) LMRT_RETURN_IF_ERROR(lmrt::make_token_trie(*model.tokenizer, &model.token_trie));
    trie = model.token_trie;
  }
  const bool schema = req.json_schema != nullptr;
  return lmrt::make_grammar_sampler_from_text(schema ? req.json_schema : req.grammar, schema, std::move(trie), out);
}

// The chain a request asks for (see lmrt_generate_request), with its grammar sampler first unless
// the spec places it.
Status request_chain(const lmrt_generate_request& req, lmrt_model& model, std::unique_ptr<lmrt::SamplerChain>* out) {
  std::unique_ptr<lmrt::Sampler> grammar;
  LMRT_RETURN_IF_ERROR(request_grammar(req, model, &grammar));
  LMRT_RETURN_IF_ERROR(request_chain_without_grammar(req, model, grammar.get(), out));
  if (grammar != nullptr && !(*out)->contains("grammar"))
    LMRT_RETURN_IF_ERROR((*out)->insert_front(std::move(grammar)));
  return Status::Ok();
}

void fill_result(lmrt_context* ctx, lmrt_generate_result* result, const lmrt::CacheOutcome& cache = {}) {
  const lmrt::GenerateResult& g = ctx->last_result;
  lmrt_generate_result full{};
  full.struct_size = sizeof full;
  full.finish_reason = static_cast<lmrt_finish_reason>(g.finish_reason);
  full.prompt_tokens = g.prompt_tokens;
  full.completion_tokens = g.completion_tokens;
  full.reused_tokens = g.reused_tokens;
  full.n_past = ctx->ctx->n_past();
  full.text = g.text.c_str();
  full.text_len = g.text.size();
  full.tokens = g.tokens.data();
  full.load_ms = ctx->model->load_ms;
  full.prefill_ms = g.timings.prefill_ms;
  full.decode_ms = g.timings.decode_ms;
  full.ttft_ms = g.timings.ttft_ms;
  full.prefill_tokens_per_s = g.timings.prefill_tokens_per_s;
  full.decode_tokens_per_s = g.timings.decode_tokens_per_s;
  full.logprobs = g.logprobs.empty() ? nullptr : as_c(g.logprobs.data());
  full.context_shifts = g.context_shifts;
  full.n_beams = static_cast<uint32_t>(ctx->last_beams.size());
  full.beams = ctx->last_beams.empty() ? nullptr : ctx->last_beams.data();
  full.cache_hit = cache.hit ? 1 : 0;
  full.cache_consulted = cache.consulted ? 1 : 0;
  full.cache_ms = cache.lookup_ms;
  write_prefix(full, result);
}

// Beam search: deterministic, so the sampler fields do not apply; stop strings and logprobs are
// refused rather than silently ignored. The best beam's text is streamed once at the end.
Status run_beam_search(lmrt_context* ctx, const lmrt_generate_request& req, const lmrt::GenerateRequest& base,
                       lmrt_token_callback on_token, void* user_data, lmrt_generate_result* result) {
  if (!base.stop.empty() || base.top_logprobs >= 0 || base.context_shift)
    return lmrt::Error(Code::invalid_argument,
                       "stop strings, logprobs and context shift do not combine with beam search");
  lmrt::BeamSearchRequest br;
  br.base = base;
  br.n_beams = req.n_beams;
  br.length_penalty = req.length_penalty;
  ctx->beams.clear();
  LMRT_RETURN_IF_ERROR(lmrt::beam_search(*ctx->ctx, *ctx->model->tokenizer, br, &ctx->beams, &ctx->last_result));
  ctx->last_beams.clear();
  for (const lmrt::Beam& b : ctx->beams)
    ctx->last_beams.push_back(lmrt_beam{b.tokens.data(), b.tokens.size(), b.text.c_str(), b.text.size(), b.logprob,
                                        b.score, static_cast<lmrt_finish_reason>(b.finish_reason)});
  const lmrt::GenerateResult& g = ctx->last_result;
  if (on_token != nullptr && !g.text.empty()) {
    const lmrt_token_event ev = make_event(g.text, g, 0, g.tokens.size());
    (void)on_token(user_data, &ev);
  }
  if (result != nullptr) fill_result(ctx, result);
  return Status::Ok();
}

}  // namespace

namespace lmrt::abi {

Status translate_request(const lmrt_generate_request* request, lmrt_generate_request* out, lmrt::GenerateRequest* r) {
  lmrt_generate_request& req = *out;
  lmrt_generate_request_init(&req);
  LMRT_RETURN_IF_ERROR(read_params(request, &req));
  if (req.prompt != nullptr)
    r->prompt = req.prompt_len == static_cast<size_t>(-1) ? std::string_view(req.prompt)
                                                          : std::string_view(req.prompt, req.prompt_len);
  if (req.n_prompt_tokens > 0) {
    if (req.prompt_tokens == nullptr)
      return lmrt::Error(Code::invalid_argument, "n_prompt_tokens is set but prompt_tokens is NULL");
    r->prompt_tokens.assign(req.prompt_tokens, req.prompt_tokens + req.n_prompt_tokens);
  }
  r->max_tokens = req.max_tokens;
  r->add_bos = req.add_bos != 0;
  r->parse_special = req.parse_special != 0;
  if (req.n_stop > 0 && req.stop == nullptr)
    return lmrt::Error(Code::invalid_argument, "n_stop is set but stop is NULL");
  for (size_t i = 0; i < req.n_stop; ++i) {
    if (req.stop[i] == nullptr) return lmrt::Error(Code::invalid_argument, "stop[" + std::to_string(i) + "] is NULL");
    // A stop string is matched against valid UTF-8 output, so an invalid one could never match.
    const Status valid = lmrt::validate_utf8(req.stop[i]);
    if (!valid.ok()) return lmrt::Error(valid.code(), "stop[" + std::to_string(i) + "]: " + valid.message());
    r->stop.emplace_back(req.stop[i]);
  }
  if (req.logprobs < -1 || req.logprobs > LMRT_MAX_TOP_LOGPROBS)
    return lmrt::Error(Code::invalid_argument,
                       "logprobs must be -1 (off) or 0.." + std::to_string(LMRT_MAX_TOP_LOGPROBS));
  r->top_logprobs = req.logprobs;
  r->context_shift = req.context_shift != 0;
  r->n_keep = req.n_keep;
  return Status::Ok();
}

Status request_samplers(const lmrt_generate_request& req, lmrt_model& model, lmrt::GenerateRequest* r,
                        std::unique_ptr<lmrt::SamplerChain>* chain,
                        std::vector<std::unique_ptr<lmrt::StopCriterion>>* criteria, std::string* criteria_key) {
  LMRT_RETURN_IF_ERROR(request_chain(req, model, chain));
  r->sampler = chain->get();
  if (req.n_stop_criteria > 0) {
    if (req.stop_criteria == nullptr)
      return lmrt::Error(Code::invalid_argument, "n_stop_criteria is set but stop_criteria is NULL");
    lmrt::StopCriterionRegistry registry;
    if (req.plugins != nullptr)
      LMRT_RETURN_IF_ERROR(req.plugins->host->add_stop_criteria_to(registry, model.text_source.get()));
    for (size_t i = 0; i < req.n_stop_criteria; ++i) {
      if (req.stop_criteria[i] == nullptr)
        return lmrt::Error(Code::invalid_argument, "stop_criteria[" + std::to_string(i) + "] is NULL");
      std::unique_ptr<lmrt::StopCriterion> c;
      LMRT_RETURN_IF_ERROR(registry.create_from_spec(req.stop_criteria[i], &c));
      *criteria_key += ";stop_criterion=" + c->canonical_text();
      r->stop_criteria.push_back(c.get());
      criteria->push_back(std::move(c));
    }
  }
  if (req.plugins != nullptr)
    for (const auto& lib : req.plugins->host->plugins())
      *criteria_key += ";plugin=" + lib->name() + "@" + lib->version();
  return Status::Ok();
}

lmrt_token_event make_event(std::string_view text, const lmrt::GenerateResult& so_far, size_t first, size_t count) {
  lmrt_token_event ev{};
  ev.struct_size = sizeof ev;
  ev.token = so_far.tokens.empty() ? -1 : so_far.tokens.back();
  ev.text = text.data();
  ev.text_len = text.size();
  ev.index = static_cast<uint32_t>(so_far.tokens.size());
  ev.n_tokens = static_cast<uint32_t>(count);
  ev.tokens = so_far.tokens.data() + first;
  ev.logprobs = so_far.logprobs.empty() ? nullptr : as_c(so_far.logprobs.data() + first);
  return ev;
}

}  // namespace lmrt::abi

extern "C" {

lmrt_status lmrt_generate_request_init_sized(lmrt_generate_request* request, size_t struct_size) {
  lmrt_generate_request d = lmrt_generate_request{};
  d.struct_size = sizeof(lmrt_generate_request);
  d.max_tokens = 256;
  d.prompt_len = static_cast<size_t>(-1);
  d.add_bos = 1;
  d.parse_special = 0;
  d.seed = LMRT_SEED_RANDOM;
  d.temperature = 0.0f;
  d.top_p = 1.0f;
  d.typical_p = 1.0f;
  d.repeat_penalty = 1.0f;
  d.repeat_last_n = 64;
  d.logprobs = -1;
  d.length_penalty = 1.0f;
  return init_sized(request, struct_size, d);
}

lmrt_status lmrt_generate(lmrt_context* ctx, const lmrt_generate_request* request, lmrt_token_callback on_token,
                          void* user_data, lmrt_generate_result* result) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (request == nullptr) return lmrt::Error(Code::invalid_argument, "request is NULL");
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_generate"));
        if (result != nullptr && result->struct_size < sizeof(uint32_t))
          return lmrt::Error(Code::invalid_argument, "result->struct_size is not set");
        lmrt_generate_request req;
        lmrt::GenerateRequest r;
        LMRT_RETURN_IF_ERROR(translate_request(request, &req, &r));
        if (req.n_beams >= 1) {
          if (req.grammar != nullptr || req.json_schema != nullptr)
            return lmrt::Error(Code::invalid_argument, "a grammar or json_schema does not combine with beam search");
          return run_beam_search(ctx, req, r, on_token, user_data, result);
        }
        std::unique_ptr<lmrt::SamplerChain> chain;
        std::vector<std::unique_ptr<lmrt::StopCriterion>> criteria;
        std::string criteria_key;  // for the cache key: the criteria and the plugins behind them
        LMRT_RETURN_IF_ERROR(request_samplers(req, *ctx->model, &r, &chain, &criteria, &criteria_key));

        struct Bridge {
          lmrt_token_callback fn;
          void* user;
        } bridge{on_token, user_data};
        lmrt::TokenSink sink;
        if (on_token != nullptr) {
          sink.user = &bridge;
          sink.fn = [](void* u, std::string_view text, const lmrt::GenerateResult& so_far, size_t first,
                       size_t count) -> int {
            const auto* b = static_cast<Bridge*>(u);
            const lmrt_token_event ev = make_event(text, so_far, first, count);
            return b->fn(b->user, &ev);
          };
        }
        lmrt::CacheUse use;
        lmrt_cache* cache = req.cache != nullptr ? req.cache : ctx->cache;
        use.cache = cache != nullptr ? cache->cache.get() : nullptr;
        use.fingerprint = ctx->model->fingerprint;
        use.seeded = req.sampler != nullptr || req.seed != LMRT_SEED_RANDOM;
        use.version = LMRT_VERSION_NUMBER;
        use.extra_key = criteria_key;
        lmrt::CacheOutcome outcome;
        LMRT_RETURN_IF_ERROR(
            lmrt::generate_cached(*ctx->ctx, *ctx->model->tokenizer, r, use, sink, &ctx->last_result, &outcome));
        if (!outcome.warning.empty()) cache->errors.set(outcome.warning);
        ctx->last_beams.clear();
        if (result != nullptr) fill_result(ctx, result, outcome);
        return Status::Ok();
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

}  // extern "C"
