// The HTTP routes of the OpenAI-compatible API, installed on an httplib::Server.
#pragma once

#include <httplib.h>
#include <lmrt/lmrt.h>

#include <atomic>
#include <string>

#include "api_request.h"
#include "context_pool.h"

namespace server {

class ApiServer {
 public:
  // model, pool: must outlive the server. api_key: "" for none.
  ApiServer(const lmrt_model* model, ContextPool* pool, ModelFacts facts, std::string model_id, std::string api_key);

  // Registers every route, the 404/405 answers, the API-key check and the exception guard.
  void install(httplib::Server& http);

 private:
  void handle_generate(const httplib::Request& req, httplib::Response& res, Endpoint ep);
  void handle_models(httplib::Response& res) const;
  void handle_health(httplib::Response& res) const;
  std::string next_id(Endpoint ep);

  const lmrt_model* model_;
  ContextPool* pool_;
  ModelFacts facts_;
  std::string model_id_;
  std::string api_key_;
  int64_t started_;
  std::atomic<uint64_t> counter_{0};
};

}  // namespace server
