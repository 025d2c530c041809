// The batch engine as C handles: many requests on one context, stepped on the caller's thread or on
// the engine's own (EngineThread holds the lock and the thread).
#include "abi/api_support.h"
#include "abi/generate_request.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

namespace {

static_assert(sizeof(lmrt_token_logprobs) == sizeof(lmrt::TokenLogprobs), "see generate_api.cpp");

// A request's C callbacks, called through the runtime's sinks.
struct Callback {
  lmrt_token_callback fn;
  lmrt_engine_finish_callback on_finish;
  void* user;
};

int call_back(void* user, std::string_view text, const lmrt::GenerateResult& so_far, size_t first, size_t count) {
  const auto* cb = static_cast<const Callback*>(user);
  const lmrt_token_event ev = make_event(text, so_far, first, count);
  return cb->fn(cb->user, &ev);
}

void call_finish(void* user, uint64_t id, lmrt::FinishReason why) {
  const auto* cb = static_cast<const Callback*>(user);
  cb->on_finish(cb->user, id, static_cast<lmrt_finish_reason>(why));
}

}  // namespace

extern "C" {

lmrt_status lmrt_engine_params_init_sized(lmrt_engine_params* params, size_t struct_size) {
  lmrt_engine_params d{sizeof(lmrt_engine_params), 4, 64, 1, 4, 0, nullptr, nullptr};
  return init_sized(params, struct_size, d);
}

lmrt_status lmrt_engine_create(lmrt_context* ctx, const lmrt_engine_params* params, lmrt_engine** out_engine, char* err,
                               size_t err_size) {
  if (out_engine != nullptr) *out_engine = nullptr;
  return guarded(
      [&]() -> Status {
        if (ctx == nullptr || out_engine == nullptr)
          return lmrt::Error(Code::invalid_argument, "ctx and out_engine must not be NULL");
        lmrt_engine_params p;
        lmrt_engine_params_init(&p);
        LMRT_RETURN_IF_ERROR(read_params(params, &p));
        lmrt::EngineParams ep;
        ep.max_sequences = p.max_sequences;
        ep.prefill_chunk = p.prefill_chunk;
        if (p.prefix_reuse > 1) return lmrt::Error(Code::invalid_argument, "prefix_reuse must be 0 or 1");
        // Refused, so that a later version can give it a meaning without old libraries ignoring it.
        if (p.reserved0 != 0) return lmrt::Error(Code::invalid_argument, "reserved0 must be 0");
        ep.prefix_reuse = p.prefix_reuse != 0;
        ep.retained_sequences = p.retained_sequences;
        // Claimed before anything changes, so that of two engines on one context one is refused.
        unsigned unowned = 0;
        if (!ctx->ownership.compare_exchange_strong(unowned, lmrt_context::kEngine))
          return engine_owned(ctx, "lmrt_engine_create");
        struct Claim {
          lmrt_context* ctx;
          ~Claim() {
            if (ctx != nullptr) ctx->ownership.fetch_and(~lmrt_context::kEngine);
          }
        } claim{ctx};
        auto e = std::make_unique<lmrt_engine>();
        e->ctx = ctx;
        e->on_finish = p.on_finish;
        e->cache = p.cache;
        std::unique_ptr<lmrt::BatchEngine> be;
        LMRT_RETURN_IF_ERROR(lmrt::BatchEngine::create(*ctx->ctx, *ctx->model->tokenizer, ep, &be));
        e->engine = std::make_unique<lmrt::EngineThread>(std::move(be));
        claim.ctx = nullptr;  // the engine's until lmrt_engine_free
        *out_engine = e.release();
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_engine_free(lmrt_engine* engine) {
  if (engine == nullptr) return LMRT_OK;
  // A started engine stops first (its destructor joins the thread); from a callback it cannot.
  if (engine->engine->in_sink()) {
    engine->errors.set("lmrt_engine_free called from a callback of the same engine");
    return LMRT_ERR_INVALID_ARGUMENT;
  }
  lmrt_context* ctx = engine->ctx;
  delete engine;  // stops the thread: only then is the context the caller's again
  // A context the caller freed while this engine ran goes with it.
  if ((ctx->ownership.fetch_and(~lmrt_context::kEngine) & lmrt_context::kFreed) != 0) delete ctx;
  return LMRT_OK;
}

const char* lmrt_engine_last_error(const lmrt_engine* engine) { return engine == nullptr ? "" : engine->errors.get(); }

lmrt_status lmrt_engine_submit(lmrt_engine* engine, const lmrt_generate_request* request, lmrt_token_callback on_token,
                               void* user_data, uint64_t* request_id) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded(
      [&]() -> Status {
        if (request == nullptr || request_id == nullptr)
          return lmrt::Error(Code::invalid_argument, "request and request_id must not be NULL");
        lmrt_generate_request req;
        lmrt::EngineRequest er;
        LMRT_RETURN_IF_ERROR(translate_request(request, &req, &er.req));
        if (req.n_beams != 0) return lmrt::Error(Code::invalid_argument, "beam search does not run in an engine");
        std::string criteria_key;  // for the cache key: the criteria and the plugins behind them
        LMRT_RETURN_IF_ERROR(
            request_samplers(req, *engine->ctx->model, &er.req, &er.chain, &er.criteria, &criteria_key));
        // A bias or chain naming a token past the vocabulary is refused now, as lmrt_generate refuses it
        // (the sequence decoder would only find it when the request is admitted).
        if (er.chain != nullptr) LMRT_RETURN_IF_ERROR(er.chain->reserve(engine->ctx->model->tokenizer->n_vocab()));
        // As lmrt_generate does (generate_api.cpp).
        lmrt_cache* cache = req.cache != nullptr ? req.cache : engine->cache;
        er.cache.cache = cache != nullptr ? cache->cache.get() : nullptr;
        er.cache.fingerprint = engine->ctx->model->fingerprint;
        er.cache.seeded = req.sampler != nullptr || req.seed != LMRT_SEED_RANDOM;
        er.cache.version = LMRT_VERSION_NUMBER;
        er.cache.extra_key = criteria_key;
        if (on_token != nullptr || engine->on_finish != nullptr) {
          auto cb = std::make_shared<Callback>(Callback{on_token, engine->on_finish, user_data});
          if (on_token != nullptr) er.sink = lmrt::TokenSink{call_back, cb.get()};
          if (engine->on_finish != nullptr) er.on_finish = lmrt::FinishSink{call_finish, cb.get()};
          er.sink_owner = std::move(cb);
        }
        uint64_t id = 0;
        LMRT_RETURN_IF_ERROR(engine->engine->submit(std::move(er), &id));
        *request_id = id;
        return Status::Ok();
      },
      [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_cancel(lmrt_engine* engine, uint64_t request_id) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded([&]() -> Status { return engine->engine->cancel(request_id); },
                 [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_step(lmrt_engine* engine, uint32_t* n_unfinished) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded(
      [&]() -> Status {
        uint32_t left = 0;
        LMRT_RETURN_IF_ERROR(engine->engine->step(&left));
        if (n_unfinished != nullptr) *n_unfinished = left;
        return Status::Ok();
      },
      [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_run(lmrt_engine* engine) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded([&]() -> Status { return engine->engine->run(); },
                 [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_result(lmrt_engine* engine, uint64_t request_id, lmrt_generate_result* result) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded(
      [&]() -> Status {
        if (result == nullptr || result->struct_size < sizeof(uint32_t))
          return lmrt::Error(Code::invalid_argument, "result is NULL or its struct_size is not set");
        return engine->engine->with_engine([&](lmrt::BatchEngine& be) -> Status {
          const lmrt::GenerateResult* g = be.result(request_id);
          if (g == nullptr) return lmrt::Error(Code::invalid_argument, "no request " + std::to_string(request_id));
          lmrt_generate_result full{};
          full.struct_size = sizeof full;
          full.finish_reason = static_cast<lmrt_finish_reason>(g->finish_reason);
          full.prompt_tokens = g->prompt_tokens;
          full.completion_tokens = static_cast<uint32_t>(g->tokens.size());
          full.reused_tokens = g->reused_tokens;
          full.text = g->text.c_str();
          full.text_len = g->text.size();
          full.tokens = g->tokens.data();
          full.load_ms = engine->ctx->model->load_ms;
          full.prefill_ms = g->timings.prefill_ms;
          full.decode_ms = g->timings.decode_ms;
          full.ttft_ms = g->timings.ttft_ms;
          full.prefill_tokens_per_s = g->timings.prefill_tokens_per_s;
          full.decode_tokens_per_s = g->timings.decode_tokens_per_s;
          full.logprobs =
              g->logprobs.empty() ? nullptr : reinterpret_cast<const lmrt_token_logprobs*>(g->logprobs.data());
          const lmrt::CacheOutcome* cache = be.cache_outcome(request_id);
          full.cache_hit = cache->hit ? 1 : 0;
          full.cache_consulted = cache->consulted ? 1 : 0;
          full.cache_ms = cache->lookup_ms;
          write_prefix(full, result);
          return be.request_status(request_id);
        });
      },
      [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_release(lmrt_engine* engine, uint64_t request_id) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded([&]() -> Status { return engine->engine->release(request_id); },
                 [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_start(lmrt_engine* engine) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded([&]() -> Status { return engine->engine->start(); },
                 [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_stop(lmrt_engine* engine) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded([&]() -> Status { return engine->engine->stop(); },
                 [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_wait(lmrt_engine* engine, uint64_t request_id, int64_t timeout_ms, int* finished) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded(
      [&]() -> Status {
        if (finished == nullptr) return lmrt::Error(Code::invalid_argument, "finished must not be NULL");
        *finished = 0;
        bool done = false;
        LMRT_RETURN_IF_ERROR(engine->engine->wait(request_id, timeout_ms, &done));
        *finished = done ? 1 : 0;
        return Status::Ok();
      },
      [&](const std::string& m) { engine->errors.set(m); });
}

lmrt_status lmrt_engine_get_stats(lmrt_engine* engine, lmrt_engine_stats* stats) {
  if (engine == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  engine->errors.clear();
  return guarded(
      [&]() -> Status {
        if (stats == nullptr || stats->struct_size < sizeof(uint32_t))
          return lmrt::Error(Code::invalid_argument, "stats is NULL or its struct_size is not set");
        lmrt_engine_stats full{};
        full.struct_size = sizeof full;
        full.started = engine->engine->started() ? 1 : 0;
        LMRT_RETURN_IF_ERROR(engine->engine->with_engine([&](lmrt::BatchEngine& be) {
          const lmrt::KvSequences& kv = be.sequences();
          full.n_queued = be.n_queued();
          full.n_running = be.n_running();
          full.max_sequences = be.params().max_sequences;
          full.n_cells = kv.n_cells();
          full.n_cells_used = kv.n_cells() - kv.n_free_cells();
          full.n_cached = be.n_cached();
          return Status::Ok();
        }));
        write_prefix(full, stats);
        return Status::Ok();
      },
      [&](const std::string& m) { engine->errors.set(m); });
}

}  // extern "C"
