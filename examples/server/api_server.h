// The routes of the OpenAI-compatible API as an HttpServer handler: access checks, then quick
// answers on the event loop and generations handed to the pool's workers.
#pragma once

#include <lmrt/lmrt.h>

#include <atomic>
#include <string>

#include "access_policy.h"
#include "api_request.h"
#include "context_pool.h"
#include "http_server.h"
#include "server_metrics.h"

namespace server {

class ApiServer {
 public:
  // model, pool, metrics: must outlive the server. timeout_s: per request (0: none).
  ApiServer(const lmrt_model* model, ContextPool* pool, ModelFacts facts, std::string model_id, AccessPolicy policy,
            unsigned timeout_s, ServerMetrics* metrics);

  // The HttpServer handler: never blocks, never throws.
  HttpOutcome handle(const HttpRequest& req);

 private:
  HttpOutcome route(const HttpRequest& req);
  HttpOutcome generate(const HttpRequest& req, Endpoint ep);
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
  std::atomic<uint64_t> counter_{0};
};

}  // namespace server
