// Plugins in the request path through the C API: a plugin sampler by name in the chain spec and a
// plugin stop criterion, on a real model.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <string>
#include <thread>
#include <vector>

#include "c_api_fixture.h"
#include "test_support.h"

namespace {

struct Env {
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  lmrt_plugin_host* host = nullptr;
  ~Env() {
    lmrt_context_free(ctx);
    lmrt_plugin_host_free(host);
    lmrt_model_close(model);
  }
};

void setup(Env* e) {
  e->model = lmrt::test::open_shared_model("TinyStories-656K-Q8_0.gguf").release();
  ASSERT_NE(e->model, nullptr);
  e->ctx = lmrt::test::make_context(e->model, 256).release();
  ASSERT_NE(e->ctx, nullptr);
  char err[512] = {0};
  lmrt_plugin_host_params hp;
  lmrt_plugin_host_params_init(&hp);
  hp.allow_loading = 1;
  ASSERT_EQ(lmrt_plugin_host_create(&hp, &e->host, err, sizeof err), LMRT_OK) << err;
  for (const char* path : {LMRT_TEST_PLUGIN_MIROSTAT, LMRT_TEST_PLUGIN_REGEX_STOP, LMRT_TEST_PLUGIN_DRY})
    ASSERT_EQ(lmrt_plugin_load(e->host, path), LMRT_OK) << lmrt_plugin_host_last_error(e->host);
}

lmrt_generate_request request(Env& e, int32_t n) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt = "Once upon a time";
  r.prompt_len = static_cast<size_t>(-1);
  r.max_tokens = n;
  r.plugins = e.host;
  return r;
}

TEST(PluginGeneration, PluginSamplerByNameIsSeededAndReproducible) {
  Env e;
  setup(&e);
  lmrt_generate_request req = request(e, 40);
  req.samplers = "dry(multiplier=0.8) top_k(40) mirostat_v2(tau=5,eta=0.1)";
  req.seed = 17;
  lmrt_generate_result a, b;
  a.struct_size = b.struct_size = sizeof a;
  ASSERT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &a), LMRT_OK) << lmrt_context_last_error(e.ctx);
  const std::vector<int32_t> first(a.tokens, a.tokens + a.completion_tokens);
  EXPECT_EQ(first.size(), 40u);
  ASSERT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &b), LMRT_OK);
  EXPECT_EQ(std::vector<int32_t>(b.tokens, b.tokens + b.completion_tokens), first);
  // Without the host the plugin's name is unknown.
  req.plugins = nullptr;
  EXPECT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &b), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(e.ctx)).find("unknown sampler 'dry'"), std::string::npos)
      << lmrt_context_last_error(e.ctx);
  // A sampler handle built through the host works the same way.
  lmrt_sampler* chain = nullptr;
  char err[256];
  ASSERT_EQ(lmrt_sampler_create_v2(e.host, e.model, "top_k(40) mirostat_v2(tau=5,eta=0.1)", 3, &chain, err, sizeof err),
            LMRT_OK)
      << err;
  req.plugins = e.host;
  req.samplers = nullptr;
  req.sampler = chain;
  ASSERT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &b), LMRT_OK) << lmrt_context_last_error(e.ctx);
  EXPECT_EQ(b.completion_tokens, 40u);
  lmrt_sampler_free(chain);
}

TEST(PluginGeneration, RegexStopCriterionEndsTheTextAtTheMatch) {
  Env e;
  setup(&e);
  lmrt_generate_request req = request(e, 200);
  lmrt_generate_result plain;
  plain.struct_size = sizeof plain;
  ASSERT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &plain), LMRT_OK);
  const std::string full(plain.text, plain.text_len);
  const size_t dot = full.find('.');
  ASSERT_NE(dot, std::string::npos) << full;

  const char* criteria[] = {"regex(pattern=\"[.!?]\")"};
  req.stop_criteria = criteria;
  req.n_stop_criteria = 1;
  struct Seen {
    std::string text;
  } seen;
  auto on_token = [](void* user, const lmrt_token_event* ev) {
    static_cast<Seen*>(user)->text.append(ev->text, ev->text_len);
    return 0;
  };
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(e.ctx, &req, on_token, &seen, &res), LMRT_OK) << lmrt_context_last_error(e.ctx);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_STOP);
  EXPECT_EQ(std::string(res.text, res.text_len), full.substr(0, dot));
  EXPECT_EQ(seen.text, full.substr(0, dot));
  // An unknown criterion is an error with its name; the context stays usable.
  const char* unknown[] = {"nonesuch(x=1)"};
  req.stop_criteria = unknown;
  EXPECT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &res), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_context_last_error(e.ctx)).find("nonesuch"), std::string::npos);
  req.n_stop_criteria = 0;
  EXPECT_EQ(lmrt_generate(e.ctx, &req, nullptr, nullptr, &res), LMRT_OK);
}

// One plugin host, one model, two contexts generating on two threads at once with the same plugin
// sampler and stop criterion: each thread gets what it gets alone (run under TSan in CI).
TEST(PluginGeneration, TwoContextsOnTwoThreadsShareOnePlugin) {
  Env e;
  setup(&e);
  lmrt_context* second = nullptr;
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 256;
  cp.n_threads = 1;
  char err[256];
  ASSERT_EQ(lmrt_context_create(e.model, &cp, &second, err, sizeof err), LMRT_OK) << err;
  const char* criteria[] = {"regex(pattern=\"!\")"};
  auto run = [&](lmrt_context* ctx, uint64_t seed, std::vector<int32_t>* out) {
    lmrt_generate_request req = request(e, 48);
    req.samplers = "top_k(40) mirostat_v2(tau=5,eta=0.1)";
    req.seed = seed;
    req.stop_criteria = criteria;
    req.n_stop_criteria = 1;
    lmrt_generate_result res;
    res.struct_size = sizeof res;
    if (lmrt_generate(ctx, &req, nullptr, nullptr, &res) == LMRT_OK)
      out->assign(res.tokens, res.tokens + res.completion_tokens);
  };
  std::vector<int32_t> alone_a, alone_b, together_a, together_b;
  run(e.ctx, 1, &alone_a);
  run(second, 2, &alone_b);
  std::thread t1([&] { run(e.ctx, 1, &together_a); });
  std::thread t2([&] { run(second, 2, &together_b); });
  t1.join();
  t2.join();
  EXPECT_FALSE(alone_a.empty());
  EXPECT_EQ(together_a, alone_a);
  EXPECT_EQ(together_b, alone_b);
  lmrt_context_free(second);
}

}  // namespace
