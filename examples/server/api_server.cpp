#include "api_server.h"

#include <chrono>
#include <cstdio>
#include <memory>

#include "openai_format.h"

namespace server {
namespace {

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(dump_json(error_object(e)), "application/json");
}

ApiError make_error(int status, const std::string& message, const std::string& type, const std::string& code = "") {
  ApiError e;
  e.status = status;
  e.message = message;
  e.type = type;
  e.code = code;
  return e;
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Runs every choice of a request (prompts x n, sequentially on one context), reporting each piece
// and each finished choice. Returns false when the consumer cancelled.
struct ChoiceSink {
  std::function<bool(int index, const Piece& piece, size_t offset)> on_piece;
  std::function<bool(int index, const ChoiceResult& result)> on_done;
};

struct RunTotals {
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  ChoiceResult failure;  // status != OK when a choice failed
};

bool run_all(lmrt_context* ctx, const ApiRequest& r, const ChoiceSink& sink, RunTotals* totals) {
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    for (int j = 0; j < r.n; ++j) {
      const int index = static_cast<int>(p) * r.n + j;
      size_t offset = r.echo ? r.prompts[p].size() : 0;
      bool alive = true;
      auto on_piece = [&](const Piece& piece) {
        if (piece.text.empty() && piece.logprobs.empty()) return true;
        alive = sink.on_piece(index, piece, offset);
        offset += piece.text.size();
        return alive;
      };
      ChoiceResult result = run_choice(ctx, r.prompts[p], r.parse_special, r.sampling, static_cast<uint64_t>(j),
                                       sink.on_piece ? std::function<bool(const Piece&)>(on_piece) : nullptr);
      if (!alive || result.finish == LMRT_FINISH_CANCELLED) return false;
      if (result.status != LMRT_OK) {
        totals->failure = std::move(result);
        return true;
      }
      if (j == 0) totals->prompt_tokens += result.prompt_tokens;
      totals->completion_tokens += result.completion_tokens;
      if (!sink.on_done(index, result)) return false;
    }
  }
  return true;
}

ApiError generation_error(const ChoiceResult& r) {
  const bool client_fault =
      r.status == LMRT_ERR_INVALID_ARGUMENT || r.status == LMRT_ERR_BAD_UTF8 || r.status == LMRT_ERR_CONTEXT_FULL;
  ApiError e = make_error(client_fault ? 400 : 500, std::string(lmrt_status_str(r.status)) + ": " + r.error,
                          client_fault ? "invalid_request_error" : "server_error");
  if (r.status == LMRT_ERR_CONTEXT_FULL) e.code = "context_length_exceeded";
  return e;
}

}  // namespace

ApiServer::ApiServer(const lmrt_model* model, ContextPool* pool, ModelFacts facts, std::string model_id,
                     std::string api_key)
    : model_(model),
      pool_(pool),
      facts_(facts),
      model_id_(std::move(model_id)),
      api_key_(std::move(api_key)),
      started_(now_seconds()) {}

std::string ApiServer::next_id(Endpoint ep) {
  const uint64_t n = counter_.fetch_add(1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%llx%06llx", ep == Endpoint::kChat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(started_), static_cast<unsigned long long>(n));
  return buf;
}

void ApiServer::handle_models(httplib::Response& res) const {
  const json body{{"object", "list"},
                  {"data", json::array({json{{"id", model_id_},
                                             {"object", "model"},
                                             {"created", started_},
                                             {"owned_by", "lmrt"},
                                             {"context_length", facts_.n_ctx}}})}};
  res.set_content(dump_json(body), "application/json");
}

void ApiServer::handle_health(httplib::Response& res) const {
  const ContextPool::Stats s = pool_->stats();
  const json body{{"status", "ok"},
                  {"slots_idle", s.idle},
                  {"slots_busy", s.busy},
                  {"queued", s.queued},
                  {"queue_limit", s.max_queue}};
  res.set_content(dump_json(body), "application/json");
}

void ApiServer::handle_generate(const httplib::Request& req, httplib::Response& res, Endpoint ep) {
  auto request = std::make_shared<ApiRequest>();
  if (auto err = parse_api_request(req.body, ep, facts_, request.get())) return send_error(res, *err);

  // Refuse prompts that cannot fit before taking a context, so the client gets a 400 and not a
  // stream that ends at once.
  for (const std::string& prompt : request->prompts) {
    std::string why;
    const auto n = count_prompt_tokens(model_, prompt, request->parse_special, &why);
    if (!n) return send_error(res, make_error(400, "the prompt cannot be tokenized: " + why, "invalid_request_error"));
    if (*n >= facts_.n_ctx) {
      ApiError e = make_error(400,
                              "the prompt has " + std::to_string(*n) + " tokens but the context holds " +
                                  std::to_string(facts_.n_ctx) + " (and at least one must be generated)",
                              "invalid_request_error", "context_length_exceeded");
      e.param = ep == Endpoint::kChat ? "messages" : "prompt";
      return send_error(res, e);
    }
  }

  std::shared_ptr<ContextPool::Lease> lease = pool_->acquire();
  if (!lease)
    return send_error(res, make_error(429, "the server is busy: every context is in use and the wait queue is full",
                                      "server_busy", "rate_limit_exceeded"));

  const ResponseMeta meta{next_id(ep), now_seconds(), model_id_};
  const LogprobFormatter fmt(model_);
  const bool want_lp = request->sampling.logprobs >= 0;
  auto logprobs_json = [fmt, want_lp, ep](const std::vector<TokenLogprob>& lps, size_t offset) {
    if (!want_lp) return json(nullptr);
    return ep == Endpoint::kChat ? fmt.chat(lps) : fmt.completion(lps, offset);
  };

  if (!request->stream) {
    json choices = json::array();
    ChoiceSink sink;
    sink.on_done = [&](int index, const ChoiceResult& r) {
      const std::string text = request->echo ? request->prompts[index / request->n] + r.text : r.text;
      const json lp = logprobs_json(r.logprobs, request->echo ? request->prompts[index / request->n].size() : 0);
      const char* finish = openai_finish_reason(r.finish);
      choices.push_back(ep == Endpoint::kChat ? chat_choice(index, text, finish, lp)
                                              : completion_choice(index, text, finish, lp));
      return true;
    };
    RunTotals totals;
    run_all(lease->context(), *request, sink, &totals);
    if (totals.failure.status != LMRT_OK) return send_error(res, generation_error(totals.failure));
    res.set_content(
        dump_json(full_response(ep, meta, choices, usage_object(totals.prompt_tokens, totals.completion_tokens))),
        "application/json");
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [request, lease, meta, logprobs_json, ep](
                                                            size_t, httplib::DataSink& out) mutable {
    if (!lease) return false;  // the provider runs once; a second call has nothing to send
    auto send = [&](const std::string& payload) {
      const std::string event = "data: " + payload + "\n\n";
      return out.is_writable() && out.write(event.data(), event.size());
    };
    std::vector<bool> started(request->prompts.size() * request->n, false);
    auto start_choice = [&](int index) {
      if (started[index]) return true;
      started[index] = true;
      bool ok = true;
      if (ep == Endpoint::kChat) {
        const std::string empty;
        ok = send(dump_json(chunk(ep, meta, index, &empty, true, nullptr, nullptr)));
      }
      if (ok && request->echo)
        ok = send(dump_json(chunk(ep, meta, index, &request->prompts[index / request->n], false, nullptr, nullptr)));
      return ok;
    };
    ChoiceSink sink;
    sink.on_piece = [&](int index, const Piece& piece, size_t offset) {
      return start_choice(index) && send(dump_json(chunk(ep, meta, index, &piece.text, false, nullptr,
                                                         logprobs_json(piece.logprobs, offset))));
    };
    sink.on_done = [&](int index, const ChoiceResult& r) {
      return start_choice(index) &&
             send(dump_json(chunk(ep, meta, index, nullptr, false, openai_finish_reason(r.finish), nullptr)));
    };
    RunTotals totals;
    const bool completed = run_all(lease->context(), *request, sink, &totals);
    lease.reset();                 // free the context before the last bytes go out
    if (!completed) return false;  // the client is gone: drop the connection
    if (totals.failure.status != LMRT_OK && !send(dump_json(error_object(generation_error(totals.failure)))))
      return false;
    if (request->include_usage &&
        !send(dump_json(usage_chunk(ep, meta, usage_object(totals.prompt_tokens, totals.completion_tokens)))))
      return false;
    if (!send("[DONE]")) return false;
    out.done();
    return true;
  });
}

void ApiServer::install(httplib::Server& http) {
  auto guarded = [this](auto fn) {
    return [fn](const httplib::Request& req, httplib::Response& res) {
      try {
        fn(req, res);
      } catch (const std::exception& e) {
        send_error(res, make_error(500, std::string("internal error: ") + e.what(), "server_error"));
      } catch (...) {
        send_error(res, make_error(500, "internal error", "server_error"));
      }
    };
  };
  http.Post("/v1/completions",
            guarded([this](const auto& req, auto& res) { handle_generate(req, res, Endpoint::kCompletions); }));
  http.Post("/v1/chat/completions",
            guarded([this](const auto& req, auto& res) { handle_generate(req, res, Endpoint::kChat); }));
  http.Get("/v1/models", guarded([this](const auto&, auto& res) { handle_models(res); }));
  http.Get("/health", guarded([this](const auto&, auto& res) { handle_health(res); }));

  // A known path with another method: 405 with the methods it does take.
  auto not_allowed = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allow);
      send_error(res,
                 make_error(405, "method " + req.method + " is not allowed on " + req.path + " (use " + allow + ")",
                            "invalid_request_error", "method_not_allowed"));
    };
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    http.Get(path, not_allowed("POST"));
    http.Put(path, not_allowed("POST"));
    http.Patch(path, not_allowed("POST"));
    http.Delete(path, not_allowed("POST"));
  }
  for (const char* path : {"/v1/models", "/health"}) {
    http.Post(path, not_allowed("GET"));
    http.Put(path, not_allowed("GET"));
    http.Patch(path, not_allowed("GET"));
    http.Delete(path, not_allowed("GET"));
  }

  if (!api_key_.empty()) {
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
      const std::string got = req.get_header_value("Authorization");
      if (got == "Bearer " + api_key_) return httplib::Server::HandlerResponse::Unhandled;
      send_error(
          res, make_error(401, got.empty() ? "missing API key (send 'Authorization: Bearer KEY')" : "incorrect API key",
                          "invalid_request_error", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    });
  }

  // Anything httplib answers by itself (unknown path, oversized body...) still gets an error object.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return;
    const std::string message = res.status == 404 ? "no route for " + req.method + " " + req.path
                                                  : std::string("request failed: HTTP ") + std::to_string(res.status);
    send_error(res, make_error(res.status, message, "invalid_request_error", res.status == 404 ? "not_found" : ""));
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, make_error(500, "internal error", "server_error"));
  });
}

}  // namespace server
