// The structs behind the public opaque handles. Only abi/ sees them.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "lmrt/lmrt.h"
#include "runtime/generate/beam_search.h"
#include "runtime/generate/context.h"
#include "runtime/generate/generator.h"
#include "runtime/model/llama_model.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/tokenizer/spm_tokenizer.h"

struct lmrt_model {
  std::unique_ptr<lmrt::LlamaModel> llama;
  std::unique_ptr<lmrt::SpmTokenizer> tokenizer;
  double load_ms = 0;

  // The model is shared by threads, so its "last error" is kept per calling thread.
  void set_error(const std::string& message) const {
    std::lock_guard<std::mutex> lock(errors_mu);
    errors[std::this_thread::get_id()] = message;
  }
  const char* last_error() const {
    std::lock_guard<std::mutex> lock(errors_mu);
    auto it = errors.find(std::this_thread::get_id());
    return it == errors.end() ? "" : it->second.c_str();
  }

  mutable std::mutex errors_mu;
  mutable std::unordered_map<std::thread::id, std::string> errors;
};

struct lmrt_sampler {
  std::string spec;  // what the chain was built from (re-parsed on append)
  uint64_t seed = 0;
  std::unique_ptr<lmrt::SamplerChain> chain;
  std::string last_error;
};

struct lmrt_context {
  lmrt_model* model = nullptr;
  std::unique_ptr<lmrt::Context> ctx;
  std::string last_error;
  lmrt::GenerateResult last_result;
  std::vector<lmrt::Beam> beams;      // the last beam search's beams
  std::vector<lmrt_beam> last_beams;  // C views of them
};
