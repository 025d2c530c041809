// Sampler chains as C handles.
#include <random>

#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/sampler_registry.h"
#include "runtime/sampling/sampler_spec.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

namespace lmrt::abi {

uint64_t resolve_seed(uint64_t seed) {
  if (seed != LMRT_SEED_RANDOM) return seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Status build_chain(const std::string& spec, uint64_t seed, const lmrt_plugin_host* host,
                   const lmrt::TokenTextSource* vocab, std::unique_ptr<lmrt::SamplerChain>* out,
                   const lmrt::Sampler* grammar = nullptr) {
  lmrt::SamplerRegistry registry;
  if (host != nullptr) {
    LMRT_RETURN_IF_ERROR(host->host->make_sampler_registry(vocab, &registry));
  } else {
    LMRT_RETURN_IF_ERROR(lmrt::register_builtin_samplers(registry));
  }
  // `grammar` in a spec marks where the request's grammar sampler goes.
  LMRT_RETURN_IF_ERROR(
      registry.add("grammar", [grammar](const lmrt::SamplerSpec& item, std::unique_ptr<lmrt::Sampler>* s) -> Status {
        if (!item.args.empty()) return lmrt::Error(Code::invalid_argument, "grammar: takes no parameters");
        if (grammar == nullptr)
          return lmrt::Error(Code::invalid_argument,
                             "grammar: the chain names 'grammar' but the request gives no grammar or json_schema");
        return grammar->clone(s);
      }));
  return lmrt::SamplerChain::parse(spec, registry, seed, out);
}

}  // namespace lmrt::abi

extern "C" {

lmrt_status lmrt_sampler_create(const char* spec, uint64_t seed, lmrt_sampler** out_sampler, char* err,
                                size_t err_size) {
  return lmrt_sampler_create_v2(nullptr, nullptr, spec, seed, out_sampler, err, err_size);
}

lmrt_status lmrt_sampler_create_v2(const lmrt_plugin_host* host, const lmrt_model* model, const char* spec,
                                   uint64_t seed, lmrt_sampler** out_sampler, char* err, size_t err_size) {
  if (out_sampler != nullptr) *out_sampler = nullptr;
  return guarded(
      [&]() -> Status {
        if (out_sampler == nullptr) return lmrt::Error(Code::invalid_argument, "out_sampler is NULL");
        auto s = std::make_unique<lmrt_sampler>();
        s->spec = spec != nullptr ? spec : "";
        s->seed = resolve_seed(seed);
        s->host = host;
        s->vocab = model != nullptr ? model->text_source.get() : nullptr;
        LMRT_RETURN_IF_ERROR(build_chain(s->spec, s->seed, s->host, s->vocab, &s->chain));
        *out_sampler = s.release();
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_sampler_append(lmrt_sampler* sampler, const char* spec) {
  if (sampler == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  sampler->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (spec == nullptr) return lmrt::Error(Code::invalid_argument, "spec is NULL");
        const std::string joined = sampler->spec.empty() ? std::string(spec) : sampler->spec + " " + spec;
        std::unique_ptr<lmrt::SamplerChain> chain;
        LMRT_RETURN_IF_ERROR(build_chain(joined, sampler->seed, sampler->host, sampler->vocab, &chain));
        sampler->spec = joined;
        sampler->chain = std::move(chain);
        return Status::Ok();
      },
      [&](const std::string& m) { sampler->last_error = m; });
}

lmrt_status lmrt_sampler_free(lmrt_sampler* sampler) {
  delete sampler;
  return LMRT_OK;
}

lmrt_status lmrt_sampler_describe(const lmrt_sampler* sampler, char* buf, size_t capacity, size_t* len) {
  if (sampler == nullptr || len == nullptr || (buf == nullptr && capacity != 0)) return LMRT_ERR_INVALID_ARGUMENT;
  const std::string& text = sampler->chain->canonical_text();
  *len = text.size();
  if (text.size() + 1 > capacity) return LMRT_ERR_BUFFER_TOO_SMALL;
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return LMRT_OK;
}

lmrt_status lmrt_sampler_sample(lmrt_sampler* sampler, const float* logits, size_t n_vocab, int32_t* token) {
  if (sampler == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  sampler->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (logits == nullptr || token == nullptr || n_vocab == 0 || n_vocab > (1u << 24))
          return lmrt::Error(Code::invalid_argument, "logits or token is NULL, or n_vocab is out of range");
        return sampler->chain->sample(logits, static_cast<int32_t>(n_vocab), token);
      },
      [&](const std::string& m) { sampler->last_error = m; });
}

lmrt_status lmrt_sampler_accept(lmrt_sampler* sampler, int32_t token) {
  if (sampler == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  sampler->last_error.clear();
  return guarded([&]() -> Status { return sampler->chain->accept(token); },
                 [&](const std::string& m) { sampler->last_error = m; });
}

lmrt_status lmrt_sampler_reset(lmrt_sampler* sampler) {
  if (sampler == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  sampler->chain->reset();
  return LMRT_OK;
}

const char* lmrt_sampler_last_error(const lmrt_sampler* sampler) {
  return sampler == nullptr ? "" : sampler->last_error.c_str();
}

}  // extern "C"
