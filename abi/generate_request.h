// An lmrt_generate_request turned into a runtime request: shared by lmrt_generate and the engine's
// lmrt_engine_submit, so both read the same fields the same way.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/generate/generator.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/sampling/stop_criterion.h"

namespace lmrt::abi {

// Reads the caller's request over the defaults into *req and its prompt, limits, stop strings and
// logprobs into *r (the prompt text is not copied). Errors: INVALID_ARGUMENT, BAD_UTF8 (a stop).
lmrt::Status translate_request(const lmrt_generate_request* request, lmrt_generate_request* req,
                               lmrt::GenerateRequest* r);
// The request's sampler chain and stop criteria, owned by *chain and *criteria and pointed to from
// *r; *criteria_key names them for the response cache.
lmrt::Status request_samplers(const lmrt_generate_request& req, lmrt_model& model, lmrt::GenerateRequest* r,
                              std::unique_ptr<lmrt::SamplerChain>* chain,
                              std::vector<std::unique_ptr<lmrt::StopCriterion>>* criteria, std::string* criteria_key);
// The event for `text` and the tokens [first, first + count) of the result so far.
lmrt_token_event make_event(std::string_view text, const lmrt::GenerateResult& so_far, size_t first, size_t count);

}  // namespace lmrt::abi
