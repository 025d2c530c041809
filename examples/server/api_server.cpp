#include "api_server.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>

#include "batched_choices.h"
#include "openai_format.h"
#include "prompt_tokens.h"

namespace server {
namespace {

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = dump_json(error_object(e));
  return r;
}

HttpResponse json_response(const json& body) {
  HttpResponse r;
  r.body = dump_json(body);
  return r;
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

// Runs every choice of a request (prompts x n: one after another on a context of its own, or all
// at once as requests of the batch engine), reporting each piece and each finished choice. Returns
// false when the consumer cancelled.
struct ChoiceSink {
  std::function<bool()> should_stop;  // polled after every token
  std::function<bool(int index, const Piece& piece, size_t offset)> on_piece;
  std::function<bool(int index, const ChoiceResult& result)> on_done;
  ServerMetrics* metrics = nullptr;  // receives every finished choice
};

// The one place a finished choice reaches the metrics: every choice that ran counts (a cancelled
// one too: its tokens were computed), a failed one does not.
void record_choice(const ChoiceSink& sink, const lmrt_context* ctx, const ChoiceResult& r) {
  if (sink.metrics == nullptr || r.status != LMRT_OK) return;
  sink.metrics->record_choice(ctx, r.prompt_tokens, r.reused_tokens, r.completion_tokens, r.ttft_ms, r.decode_ms,
                              r.kv_cells);
}

struct RunTotals {
  uint64_t prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  ChoiceResult failure;  // status != OK when a choice failed
};

bool run_on_context(lmrt_context* ctx, const ApiRequest& r, const std::vector<std::vector<int32_t>>& prompt_ids,
                    const ChoiceSink& sink, RunTotals* totals) {
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    for (int j = 0; j < r.n; ++j) {
      const int index = static_cast<int>(p) * r.n + j;
      size_t offset = r.echo ? r.prompts[p].size() : 0;
      bool alive = true;
      auto on_piece = [&](const Piece& piece) {
        if (sink.should_stop()) return alive = false;
        if (!sink.on_piece || (piece.text.empty() && piece.logprobs.empty())) return true;
        alive = sink.on_piece(index, piece, offset);
        offset += piece.text.size();
        return alive;
      };
      if (sink.should_stop()) return false;
      ChoiceResult result = run_choice(ctx, prompt_ids[p], r.sampling, static_cast<uint64_t>(j),
                                       std::function<bool(const Piece&)>(on_piece));
      record_choice(sink, ctx, result);
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

bool run_on_engine(lmrt_engine* engine, uint32_t n_ctx, const ApiRequest& r,
                   const std::vector<std::vector<int32_t>>& prompt_ids, const ChoiceSink& sink, RunTotals* totals) {
  std::vector<ChoiceTask> tasks;
  std::vector<size_t> offsets;
  for (size_t p = 0; p < r.prompts.size(); ++p) {
    for (int j = 0; j < r.n; ++j) {
      tasks.push_back(ChoiceTask{static_cast<int>(p) * r.n + j, &prompt_ids[p], static_cast<uint64_t>(j)});
      offsets.push_back(r.echo ? r.prompts[p].size() : 0);
    }
  }
  if (sink.should_stop()) return false;
  BatchedRun run;
  run.engine = engine;
  run.n_ctx = n_ctx;
  run.should_stop = sink.should_stop;
  run.on_piece = [&](int index, const Piece& piece) {
    if (!sink.on_piece || (piece.text.empty() && piece.logprobs.empty())) return true;
    const bool alive = sink.on_piece(index, piece, offsets[index]);
    offsets[index] += piece.text.size();
    return alive;
  };
  bool cancelled = false;
  run.on_done = [&](int index, ChoiceResult&& result) {
    record_choice(sink, nullptr, result);  // the engine's arena: its cells are read from the engine
    if (result.status != LMRT_OK) {
      totals->failure = std::move(result);
      return true;
    }
    if (result.finish == LMRT_FINISH_CANCELLED) return !(cancelled = true);
    if (index % r.n == 0) totals->prompt_tokens += result.prompt_tokens;
    totals->completion_tokens += result.completion_tokens;
    return sink.on_done(index, result);
  };
  return run_batched_choices(run, tasks, r.sampling) && !cancelled;
}

bool run_all(const Lane& lane, uint32_t n_ctx, const ApiRequest& r, const std::vector<std::vector<int32_t>>& prompt_ids,
             const ChoiceSink& sink, RunTotals* totals) {
  if (lane.engine == nullptr) return run_on_context(lane.ctx, r, prompt_ids, sink, totals);
  if (!r.sampling.context_shift) return run_on_engine(lane.engine, n_ctx, r, prompt_ids, sink, totals);
  // Shifting drops the oldest half of a full context: the engine's sequences share one arena,
  // where that is not defined, so these requests take turns on a context of their own.
  std::lock_guard<std::mutex> lock(*lane.shift_mu);
  return run_on_context(lane.shift_ctx, r, prompt_ids, sink, totals);
}

// As many requests as the pool takes (its workers and its queue): the preparation queue's length, so that
// a burst the pool would take is not refused before it.
size_t requests_taken(const ContextPool& pool) {
  const ContextPool::Stats s = pool.stats();
  return s.max_queue + s.idle + s.busy;
}

HttpResponse busy_response() {
  return error_response(make_error(429, "the server is busy: every context is in use and the wait queue is full",
                                   "server_busy", "rate_limit_exceeded"));
}

std::vector<std::pair<std::string, std::string>> cors_headers(const AccessPolicy& policy, const std::string& origin) {
  if (auto allow = cors_allow_origin(policy, origin))
    return {{"Access-Control-Allow-Origin", *allow}, {"Vary", "Origin"}};
  return {};
}

ApiError generation_error(const ChoiceResult& r) {
  const bool client_fault =
      r.status == LMRT_ERR_INVALID_ARGUMENT || r.status == LMRT_ERR_BAD_UTF8 || r.status == LMRT_ERR_CONTEXT_FULL;
  ApiError e = make_error(client_fault ? 400 : 500, std::string(lmrt_status_str(r.status)) + ": " + r.error,
                          client_fault ? "invalid_request_error" : "server_error");
  if (r.status == LMRT_ERR_CONTEXT_FULL) e.code = "context_length_exceeded";
  return e;
}

// Why a generation was stopped before its end, for the answer.
enum class StopCause { kNone, kClientGone, kTimeout, kShutdown };

ApiError stop_error(StopCause cause, unsigned timeout_s) {
  if (cause == StopCause::kTimeout)
    return make_error(503, "the generation took longer than the server's limit of " + std::to_string(timeout_s) + " s",
                      "server_error", "timeout");
  return make_error(503, "the server is shutting down", "server_error", "shutting_down");
}

// The id of call k of a choice: "call_" + the response id's tail + choice + k; Mistral's templates
// accept only 9 letters and digits (they raise_exception otherwise when the call comes back), so
// there a base-62 hash of the same.
std::string call_id(const ResponseMeta& meta, int index, size_t k, ToolCallFormat f) {
  const size_t dash = meta.id.find('-');
  const std::string unique = (dash == std::string::npos ? meta.id : meta.id.substr(dash + 1)) + "_" +
                             std::to_string(index) + "_" + std::to_string(k);
  if (f != ToolCallFormat::kMistral) return "call_" + unique;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char c : unique) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string id;
  for (int i = 0; i < 9; ++i, h /= 62) id += kDigits[h % 62];
  return id;
}

}  // namespace

ApiServer::ApiServer(const lmrt_model* model, ContextPool* pool, ModelFacts facts, std::string model_id,
                     AccessPolicy policy, unsigned timeout_s, ServerMetrics* metrics)
    : model_(model),
      pool_(pool),
      facts_(facts),
      model_id_(std::move(model_id)),
      policy_(std::move(policy)),
      timeout_s_(timeout_s),
      metrics_(metrics),
      started_(now_seconds()),
      max_piece_bytes_(max_text_bytes_per_token(model)),
      preparing_(requests_taken(*pool)) {}

std::string ApiServer::next_id(Endpoint ep) {
  const uint64_t n = counter_.fetch_add(1);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%llx%06llx", ep == Endpoint::kChat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(started_), static_cast<unsigned long long>(n));
  return buf;
}

HttpResponse ApiServer::models() const {
  return json_response(json{{"object", "list"},
                            {"data", json::array({json{{"id", model_id_},
                                                       {"object", "model"},
                                                       {"created", started_},
                                                       {"owned_by", "lmrt"},
                                                       {"context_length", facts_.n_ctx}}})}});
}

HttpResponse ApiServer::health() const {
  const ContextPool::Stats s = pool_->stats();
  json body{{"status", "ok"},
            {"slots_idle", s.idle},
            {"slots_busy", s.busy},
            {"queued", s.queued},
            {"preparing", preparing_.pending()},
            {"queue_limit", s.max_queue}};
  if (pool_->batched()) {
    body["sequences_busy"] = s.sequences_busy;
    body["sequences"] = s.sequences;
    body["kv_cells_used"] = s.kv_cells_used;
    body["kv_cells"] = s.kv_cells;
  }
  return json_response(body);
}

HttpResponse ApiServer::metrics() const {
  const ContextPool::Stats s = pool_->stats();
  MetricsGauges g;
  g.slots_busy = s.busy;
  g.slots_total = s.idle + s.busy;
  g.queued = s.queued + s.engine_queued + preparing_.pending();
  g.queue_limit = s.max_queue;
  g.kv_cells_total = uint64_t{facts_.n_ctx} * g.slots_total;
  if (pool_->batched()) {  // the engine's own view: busy sequences and the shared arena's cells
    g.slots_busy = s.sequences_busy;
    g.slots_total = s.sequences;
    g.kv_cells_used = s.kv_cells_used;
    g.kv_cells_total = s.kv_cells;
  }
  HttpResponse r;
  r.content_type = kMetricsContentType;
  r.body = metrics_->render(g);
  return r;
}

HttpOutcome ApiServer::handle(const HttpRequest& req) {
  HttpOutcome out;
  try {
    out = route(req);
  } catch (const std::exception& e) {
    out = HttpOutcome{};
    out.response = error_response(make_error(500, std::string("internal error: ") + e.what(), "server_error"));
  } catch (...) {
    out = HttpOutcome{};
    out.response = error_response(make_error(500, "internal error", "server_error"));
  }
  for (auto& header : cors_headers(policy_, req.header("origin"))) out.response.headers.push_back(std::move(header));
  return out;
}

HttpOutcome ApiServer::route(const HttpRequest& req) {
  HttpOutcome out;
  // Before anything else, so that a rebound DNS name reads nothing, not even /health.
  if (!host_allowed(policy_, req.header("host"))) {
    out.response = error_response(
        make_error(421, "the Host header '" + req.header("host") + "' does not name this server (see --allowed-host)",
                   "invalid_request_error", "host_not_allowed"));
    return out;
  }
  const bool generate_path = req.path == "/v1/completions" || req.path == "/v1/chat/completions";
  const bool get_path = req.path == "/v1/models" || req.path == "/health" || req.path == "/metrics";
  if (req.method == "OPTIONS" && (generate_path || get_path) && cors_allow_origin(policy_, req.header("origin"))) {
    out.response.status = 204;
    out.response.content_type.clear();
    out.response.headers = {{"Access-Control-Allow-Methods", generate_path ? "POST, OPTIONS" : "GET, OPTIONS"},
                            {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                            {"Access-Control-Max-Age", "600"}};
    return out;
  }
  if (!policy_.api_key.empty() && req.path != "/health" &&
      !api_key_matches(policy_.api_key, req.header("authorization"))) {
    out.response = error_response(make_error(401,
                                             req.header("authorization").empty()
                                                 ? "missing API key (send 'Authorization: Bearer KEY')"
                                                 : "incorrect API key",
                                             "invalid_request_error", "invalid_api_key"));
    return out;
  }
  if (generate_path && req.method == "POST")
    return generate(req, req.path == "/v1/chat/completions" ? Endpoint::kChat : Endpoint::kCompletions);
  if (get_path && (req.method == "GET" || req.method == "HEAD")) {
    out.response = req.path == "/health" ? health() : req.path == "/metrics" ? metrics() : models();
    return out;
  }
  if (generate_path || get_path) {
    const char* allow = generate_path ? "POST" : "GET";
    out.response = error_response(
        make_error(405, "method " + req.method + " is not allowed on " + req.path + " (use " + allow + ")",
                   "invalid_request_error", "method_not_allowed"));
    out.response.headers.emplace_back("Allow", allow);
    return out;
  }
  out.response = error_response(
      make_error(404, "no route for " + req.method + " " + req.path, "invalid_request_error", "not_found"));
  return out;
}

HttpOutcome ApiServer::generate(const HttpRequest& http, Endpoint ep) {
  HttpOutcome out;
  // A form or text/plain body is what a cross-site page can send without asking: refuse it.
  if (!is_json_content_type(http.header("content-type"))) {
    out.response = error_response(make_error(415, "the request body must be sent as 'Content-Type: application/json'",
                                             "invalid_request_error", "unsupported_media_type"));
    return out;
  }
  // Everything else is read on the preparation thread, which answers (errors included) through the exchange.
  auto exchange = std::make_shared<Exchange>(cors_headers(policy_, http.header("origin")));
  auto body = std::make_shared<std::string>(http.body);
  const bool queued = preparing_.submit([this, body, ep, exchange](bool abandon) {
    if (abandon || pool_->stopping())
      return exchange->answer(error_response(stop_error(StopCause::kShutdown, timeout_s_)));
    if (exchange->client_gone()) return exchange->drop();
    prepare(*body, ep, exchange);
  });
  if (!queued) {
    out.response = pool_->stopping() ? error_response(stop_error(StopCause::kShutdown, timeout_s_)) : busy_response();
    return out;
  }
  out.kind = HttpOutcome::kLater;
  out.exchange = exchange;
  return out;
}

void ApiServer::prepare(const std::string& body, Endpoint ep, const std::shared_ptr<Exchange>& exchange) {
  auto request = std::make_shared<ApiRequest>();
  if (auto err = parse_api_request(body, ep, facts_, request.get())) return exchange->answer(error_response(*err));

  // Refuse prompts that cannot fit before queueing, so the client gets a 400 and not a stream
  // that ends at once.
  auto too_long = [&](const std::string& tokens) {
    ApiError e = make_error(400,
                            "the prompt has " + tokens + " tokens but the context holds " +
                                std::to_string(facts_.n_ctx) + " (and at least one must be generated)",
                            "invalid_request_error", "context_length_exceeded");
    e.param = ep == Endpoint::kChat ? "messages" : "prompt";
    exchange->answer(error_response(e));
  };
  auto prompt_ids = std::make_shared<std::vector<std::vector<int32_t>>>();
  for (const std::string& prompt : request->prompts) {
    // Every token stands for at most max_piece_bytes_ of the text: a longer text cannot fit, and is
    // refused without tokenizing it (seconds for 4 MB).
    if (ep != Endpoint::kChat && prompt.size() / max_piece_bytes_ >= facts_.n_ctx)
      return too_long("at least " + std::to_string(prompt.size() / max_piece_bytes_) + " (" +
                      std::to_string(prompt.size()) + " bytes)");
    std::string why;
    auto ids = ep == Endpoint::kChat ? std::optional<std::vector<int32_t>>(request->chat_tokens)
                                     : tokenize_prompt_parts(model_, {PromptPart{prompt, false}}, {}, &why);
    if (!ids)
      return exchange->answer(
          error_response(make_error(400, "the prompt cannot be tokenized: " + why, "invalid_request_error")));
    const size_t n = ids->size();
    prompt_ids->push_back(std::move(*ids));
    if (n >= facts_.n_ctx) return too_long(std::to_string(n));
  }

  const ResponseMeta meta{next_id(ep), now_seconds(), model_id_};
  const LogprobFormatter fmt(model_);
  const bool want_lp = request->sampling.logprobs >= 0;
  auto logprobs_json = [fmt, want_lp, ep](const std::vector<TokenLogprob>& lps, size_t offset) {
    if (!want_lp) return json(nullptr);
    return ep == Endpoint::kChat ? fmt.chat(lps) : fmt.completion(lps, offset);
  };
  const auto deadline = timeout_s_ == 0 ? std::chrono::steady_clock::time_point::max()
                                        : std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_);
  ContextPool* pool = pool_;
  const uint32_t n_ctx = facts_.n_ctx;
  // Shared by both job kinds: why (if at all) the work must stop now.
  auto stop_cause = [exchange, deadline, pool]() {
    if (pool->cancelling()) return StopCause::kShutdown;
    if (exchange->client_gone()) return StopCause::kClientGone;
    if (std::chrono::steady_clock::now() >= deadline) return StopCause::kTimeout;
    return StopCause::kNone;
  };
  const unsigned timeout_s = timeout_s_;
  ServerMetrics* metrics = metrics_;

  ContextPool::Job job;
  if (!request->stream) {
    job = [request, prompt_ids, exchange, meta, logprobs_json, ep, stop_cause, timeout_s, metrics, n_ctx](
              const Lane& lane, bool abandon) {
      if (abandon) return exchange->answer(error_response(stop_error(StopCause::kShutdown, timeout_s)));
      std::vector<json> choices(request->prompts.size() * request->n);  // by index (the engine ends them in any order)
      StopCause cause = StopCause::kNone;
      ChoiceSink sink;
      sink.metrics = metrics;
      sink.should_stop = [&] { return (cause = stop_cause()) != StopCause::kNone; };
      sink.on_done = [&](int index, const ChoiceResult& r) {
        const std::string text = request->echo ? request->prompts[index / request->n] + r.text : r.text;
        const json lp = logprobs_json(r.logprobs, request->echo ? request->prompts[index / request->n].size() : 0);
        const char* finish = openai_finish_reason(r.finish);
        if (request->parse_tool_calls) {
          const AssistantReply reply =
              parse_assistant_reply(request->tool_format, r.text, request->parallel_tool_calls);
          if (!reply.tool_calls.empty()) finish = "tool_calls";
          std::vector<std::string> ids;
          for (size_t k = 0; k < reply.tool_calls.size(); ++k)
            ids.push_back(call_id(meta, index, k, request->tool_format));
          choices[index] = chat_choice_with_tools(index, reply, ids, finish, lp);
          return true;
        }
        choices[index] =
            ep == Endpoint::kChat ? chat_choice(index, text, finish, lp) : completion_choice(index, text, finish, lp);
        return true;
      };
      RunTotals totals;
      if (!run_all(lane, n_ctx, *request, *prompt_ids, sink, &totals)) {
        // Nobody reads an answer to a client that left; counting it as a 503 would blame the server.
        if (cause == StopCause::kClientGone) return exchange->drop();
        return exchange->answer(error_response(stop_error(cause, timeout_s)));
      }
      if (totals.failure.status != LMRT_OK) return exchange->answer(error_response(generation_error(totals.failure)));
      exchange->answer(json_response(full_response(ep, meta, json(std::move(choices)),
                                                   usage_object(totals.prompt_tokens, totals.completion_tokens))));
    };
  } else {
    job = [request, prompt_ids, exchange, meta, logprobs_json, ep, stop_cause, timeout_s, metrics, n_ctx](
              const Lane& lane, bool abandon) {
      auto send = [&](const std::string& payload) { return exchange->write("data: " + payload + "\n\n"); };
      auto finish_with = [&](const ApiError& e) {
        send(dump_json(error_object(e)));
        send("[DONE]");
        exchange->end();
      };
      if (abandon) return finish_with(stop_error(StopCause::kShutdown, timeout_s));
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
      StopCause cause = StopCause::kNone;
      ChoiceSink sink;
      sink.metrics = metrics;
      sink.should_stop = [&] { return (cause = stop_cause()) != StopCause::kNone; };
      // With tools, the reply is read as it streams (ToolCallStream): content until a call may
      // begin, then each call's name and its arguments in fragments.
      std::vector<ToolCallStream> replies(started.size(),
                                          ToolCallStream(request->tool_format, request->parallel_tool_calls));
      std::vector<ToolCallStream::Delta> deltas;
      auto send_deltas = [&](int index, const json& lp) {
        bool first_content = true;
        for (const ToolCallStream::Delta& d : deltas) {
          const bool ok =
              d.call < 0
                  ? send(dump_json(chunk(ep, meta, index, &d.text, false, nullptr, first_content ? lp : json(nullptr))))
                  : send(dump_json(tool_calls_chunk(
                        meta, index,
                        tool_call_delta(d, call_id(meta, index, static_cast<size_t>(d.call), request->tool_format)))));
          if (!ok) return false;
          if (d.call < 0) first_content = false;
        }
        return true;
      };
      sink.on_piece = [&](int index, const Piece& piece, size_t offset) {
        if (!start_choice(index)) return false;
        if (!request->parse_tool_calls)
          return send(
              dump_json(chunk(ep, meta, index, &piece.text, false, nullptr, logprobs_json(piece.logprobs, offset))));
        deltas.clear();
        replies[index].push(piece.text, &deltas);
        return send_deltas(index, logprobs_json(piece.logprobs, offset));
      };
      sink.on_done = [&](int index, const ChoiceResult& r) {
        if (!start_choice(index)) return false;
        const char* finish = openai_finish_reason(r.finish);
        if (request->parse_tool_calls) {
          deltas.clear();
          replies[index].finish(&deltas);
          if (!send_deltas(index, nullptr)) return false;
          if (replies[index].calls_sent() > 0) finish = "tool_calls";
        }
        return send(dump_json(chunk(ep, meta, index, nullptr, false, finish, nullptr)));
      };
      RunTotals totals;
      if (!run_all(lane, n_ctx, *request, *prompt_ids, sink, &totals)) {
        if (cause == StopCause::kTimeout || cause == StopCause::kShutdown)
          return finish_with(stop_error(cause, timeout_s));
        return exchange->end();  // the client is gone
      }
      if (totals.failure.status != LMRT_OK) return finish_with(generation_error(totals.failure));
      if (request->include_usage)
        send(dump_json(usage_chunk(ep, meta, usage_object(totals.prompt_tokens, totals.completion_tokens))));
      send("[DONE]");
      exchange->end();
    };
  }
  if (!pool->submit(std::move(job)))
    return exchange->answer(pool->stopping() ? error_response(stop_error(StopCause::kShutdown, timeout_s_))
                                             : busy_response());
  // The job may have written already: its bytes wait for the head.
  if (request->stream) {
    HttpResponse head;
    head.content_type = "text/event-stream";
    head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    exchange->begin_stream(std::move(head));
  }
}

}  // namespace server
