// lmrt serve: load the model once, create the --parallel sequences (or contexts) and answer the OpenAI-style API until
// SIGINT or SIGTERM.
#include "serve_main.h"

#include <lmrt/lmrt.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "access_policy.h"
#include "api_server.h"
#include "chat_template.h"
#include "context_pool.h"
#include "http_server.h"
#include "loading_answer.h"
#include "serve_options.h"
#include "server_metrics.h"

namespace server {
namespace {

void fail(const std::string& message) { std::fprintf(stderr, "lmrt serve: %s\n", message.c_str()); }

void print_cache_warning(void*, const char* message) { std::fprintf(stderr, "lmrt serve: cache: %s\n", message); }

std::string model_id_from_path(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
  return name;
}

// Owns the model and cache handles for the server's lifetime.
struct Handles {
  lmrt_model* model = nullptr;
  lmrt_cache* cache = nullptr;
  lmrt_plugin_host* plugins = nullptr;
  ~Handles() {
    lmrt_cache_close(cache);
    lmrt_plugin_host_free(plugins);
    lmrt_model_close(model);
  }
};

int serve(ServeOptions opt) {
  if (opt.host == "localhost") opt.host = "127.0.0.1";  // libmicrohttpd binds numeric addresses
  std::string why;
  AccessPolicy policy{opt.host, opt.allowed_hosts, opt.cors_origin, opt.api_key};
  if (!opt.api_key_file.empty()) {
    auto key = read_api_key_file(opt.api_key_file, &why);
    if (!key) {
      fail(why);
      return 2;
    }
    policy.api_key = *key;
  }
  // The port opens first and answers 503 "loading" (same Host rule) until the model and contexts
  // are ready, so that /health tells a loading server from a dead one. Declared before everything
  // the API uses, so that the event loops stop (at the end of serve) before any of it is freed.
  ServerMetrics metrics;
  std::atomic<ApiServer*> ready{nullptr};
  HttpServer http(opt.http, [&ready, &policy](const HttpRequest& req) {
    ApiServer* api = ready.load(std::memory_order_acquire);
    return api != nullptr ? api->handle(req) : loading_answer(policy, req);
  });
  http.set_status_observer([&metrics](int status) { metrics.record_status(status); });
  if (!http.start(opt.host, opt.port, &why)) {
    fail(why);
    return 1;
  }
  // From here every return goes through this: the event loops must not outlive what they use.
  struct StopHttp {
    HttpServer& http;
    std::atomic<ApiServer*>& ready;
    ~StopHttp() {
      ready.store(nullptr);
      http.stop();
    }
  } stop_http{http, ready};

  Handles h;
  char err[1024] = "";
  lmrt_model_params mp;
  lmrt_model_params_init(&mp);
  mp.use_mmap = opt.use_mmap ? 1 : 0;
  if (lmrt_status st = lmrt_model_open(opt.model_path.c_str(), &mp, &h.model, err, sizeof err); st != LMRT_OK) {
    fail("cannot open model " + opt.model_path + ": " + lmrt_status_str(st) + ": " + err);
    return 1;
  }
  const std::optional<ChatTemplates> templates = load_chat_templates(h.model, opt.chat_template, &why);
  if (!templates) {
    fail(why);
    return 2;
  }
  {  // A template that cannot render a one-line chat is worth knowing about before the first request.
    RenderError e;
    if (!render_chat(h.model, *templates, R"([{"role":"user","content":"Hi"}])", "", &e) && !e.client_fault)
      fail("warning: chat requests will fail: " + e.message);
  }
  if (!opt.cache_path.empty()) {
    lmrt_cache_params cp;
    lmrt_cache_params_init(&cp);
    cp.on_warning = print_cache_warning;
    cp.prefix_min_tokens = opt.prefix_min_tokens;
    if (lmrt_cache_open(opt.cache_path.c_str(), &cp, &h.cache, err, sizeof err) != LMRT_OK)
      fail("no response cache (" + std::string(err) + "); going on without one");
  }
  if (!opt.plugin_path.empty()) {
    lmrt_plugin_host_params hp;
    lmrt_plugin_host_params_init(&hp);
    hp.allow_loading = 1;
    if (lmrt_plugin_host_create(&hp, &h.plugins, err, sizeof err) != LMRT_OK) {
      fail(std::string("cannot create the plugin host: ") + err);
      return 1;
    }
    if (lmrt_status st = lmrt_plugin_load(h.plugins, opt.plugin_path.c_str()); st != LMRT_OK) {
      fail("cannot load plugin " + opt.plugin_path + ": " + lmrt_status_str(st) + ": " +
           lmrt_plugin_host_last_error(h.plugins));
      return 1;
    }
  }
  lmrt_model_info info;
  info.struct_size = sizeof info;
  lmrt_model_get_info(h.model, &info);

  // --parallel N: N sequences of one context whose batch engine decodes them in the same forward
  // passes (continuous batching), the response cache in front of it (lmrt_engine_params.cache).
  // The cache's prompt-prefix states are loaded and stored by lmrt_generate on a context, so with
  // --prefix-cache the server keeps N contexts of their own. Either way a request may hold
  // --ctx-size cells: the shared arena has N x that many.
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = opt.ctx_size != 0 ? opt.ctx_size : info.n_ctx_train;
  const bool batched = h.cache == nullptr || opt.prefix_min_tokens == 0;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  cp.n_threads = opt.threads != 0 ? opt.threads : batched ? cpus : std::max(1u, cpus / opt.parallel);
  const size_t queue = opt.queue != 0 ? opt.queue : 4u * opt.parallel;
  std::unique_ptr<ContextPool> pool = batched
                                          ? ContextPool::create_batched(h.model, cp, opt.parallel, queue, h.cache, &why)
                                          : ContextPool::create(h.model, cp, opt.parallel, queue, h.cache, &why);
  if (!pool) {
    fail("cannot create contexts: " + why);
    return 1;
  }
  ModelFacts facts{h.plugins, info.n_vocab, pool->n_ctx(), h.model, &*templates};
  facts.max_tokens_limit = opt.max_tokens_limit != 0 ? opt.max_tokens_limit : pool->n_ctx();
  ApiServer api(h.model, pool.get(), facts, opt.alias.empty() ? model_id_from_path(opt.model_path) : opt.alias, policy,
                opt.timeout_s, &metrics);
  ready.store(&api, std::memory_order_release);
  std::fprintf(
      stderr,
      "lmrt serve: %s on http://%s:%d (parallel %u %s, queue %zu, n_ctx %u, threads %u, chat template %s, tools "
      "%s%s)\n",
      model_id_from_path(opt.model_path).c_str(), opt.host.c_str(), opt.port, opt.parallel,
      batched ? "sequences batched in one context" : "contexts", queue, pool->n_ctx(), cp.n_threads,
      templates->name.c_str(), tool_call_format_name(templates->tool_format),
      h.cache == nullptr           ? ""
      : opt.prefix_min_tokens != 0 ? ", cache and prefix states on"
                                   : ", cache on");

  // SIGINT/SIGTERM are blocked in every thread and taken here: stop accepting, let in-flight
  // requests finish within the grace period, cancel the rest, flush their answers, exit 0.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "lmrt serve: %s: draining (grace %u s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM", opt.grace_s);
  http.stop_accepting();
  pool->stop(int64_t{opt.grace_s} * 1000);
  api.stop_preparing();
  // Every job has answered; give the event loops a moment to write those answers out.
  for (int i = 0; i < 40 && http.active_requests() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  http.stop();
  std::fprintf(stderr, "lmrt serve: stopped\n");
  return 0;
}

}  // namespace
}  // namespace server

int cmd_serve(int argc, char** argv) {
  server::ServeOptions opt;
  std::string error;
  if (!server::parse_serve_options(argc, argv, 2, &opt, &error)) {
    std::fprintf(stderr, "lmrt serve: %s\n%s", error.c_str(), server::serve_usage());
    return 2;
  }
  if (opt.help) {
    std::fputs(server::serve_usage(), stdout);
    return 0;
  }
  // A write to a client that went away must fail with EPIPE, not end the process. Stop signals
  // are blocked before any thread starts so that every thread inherits the mask.
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    return server::serve(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lmrt serve: %s\n", e.what());
    return 1;
  }
}
