// The routes of the OpenAI-compatible API as an HttpServer handler: access checks and quick answers
// on the event loop; generation requests are read on the preparation thread and handed to the pool's
// workers.
#pragma once

#include <lmrt/lmrt.h>

#include <atomic>
#include <memory>
#include <string>

#include "access_policy.h"
#include "api_request.h"
#include "context_pool.h"
#include "http_server.h"
#include "preparation_queue.h"
#include "server_metrics.h"

namespace server {

class ApiServer {
 public:
  // model, pool, metrics: must outlive the server. timeout_s: per request (0: none).
  ApiServer(const lmrt_model* model, ContextPool* pool, ModelFacts facts, std::string model_id, AccessPolicy policy,
            unsigned timeout_s, ServerMetrics* metrics);

  // The HttpServer handler: never blocks, never throws.
  HttpOutcome handle(const HttpRequest& req);
  // At shutdown, after the pool stopped: waits for the request being prepared and answers the waiting ones
  // 503, so that no connection is left suspended (libmicrohttpd aborts when it stops with one).
  void stop_preparing() { preparing_.stop(); }

 private:
  HttpOutcome route(const HttpRequest& req);
  HttpOutcome generate(const HttpRequest& req, Endpoint ep);
  // On the preparation thread: parses, tokenizes and checks the request, then queues its generation.
  void prepare(const std::string& body, Endpoint ep, const std::shared_ptr<Exchange>& exchange);
  HttpResponse models() const;
  HttpResponse health() const;
  HttpResponse metrics() const;
  std::string next_id(Endpoint ep);

  const lmrt_model* model_;
  ContextPool* pool_;
  ModelFacts facts_;
  std::string model_id_;
  AccessPolicy policy_;
  unsigned timeout_s_;
  ServerMetrics* metrics_;
  int64_t started_;
  size_t max_piece_bytes_;  // the most bytes of text one token stands for
  std::atomic<uint64_t> counter_{0};
  PreparationQueue preparing_;  // last: its thread uses the members above and is joined first
};

}  // namespace server
