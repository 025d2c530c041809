// The model, context and engine setup every C-API test needs, through lmrt.h only: owning handles, and
// opening a shared model / creating a context with the test's failure reported by gtest.
#pragma once

#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <memory>
#include <string>

#include "test_support.h"

namespace lmrt::test {

struct ModelCloser {
  void operator()(lmrt_model* m) const { lmrt_model_close(m); }
};
struct ContextFreer {
  void operator()(lmrt_context* c) const { lmrt_context_free(c); }
};
struct EngineFreer {
  void operator()(lmrt_engine* e) const { lmrt_engine_free(e); }
};
using ModelPtr = std::unique_ptr<lmrt_model, ModelCloser>;
using ContextPtr = std::unique_ptr<lmrt_context, ContextFreer>;
using EnginePtr = std::unique_ptr<lmrt_engine, EngineFreer>;

// Opens ../shared/models/<name>; a failure is a test failure (and a null handle).
inline ModelPtr open_shared_model(const std::string& name) {
  lmrt_model* m = nullptr;
  char err[512] = {0};
  const lmrt_status s = lmrt_model_open(model_path(name).c_str(), nullptr, &m, err, sizeof err);
  EXPECT_EQ(s, LMRT_OK) << name << ": " << err;
  return ModelPtr(m);
}

// A context of n_ctx tokens (0: the model's training context) on `threads` threads.
inline ContextPtr make_context(lmrt_model* m, uint32_t n_ctx, uint32_t threads = 2) {
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = n_ctx;
  p.n_threads = threads;
  lmrt_context* c = nullptr;
  char err[512] = {0};
  EXPECT_EQ(lmrt_context_create(m, &p, &c, err, sizeof err), LMRT_OK) << err;
  return ContextPtr(c);
}

// A greedy request for `prompt` (NUL-terminated) and up to max_tokens tokens.
inline lmrt_generate_request greedy_request(const char* prompt, int32_t max_tokens) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt = prompt;
  r.max_tokens = max_tokens;
  return r;
}

}  // namespace lmrt::test
