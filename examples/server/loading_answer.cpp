#include "loading_answer.h"

#include "openai_format.h"

namespace server {

HttpOutcome loading_answer(const AccessPolicy& policy, const HttpRequest& req) {
  HttpOutcome out;
  ApiError e;
  if (!host_allowed(policy, req.header("host"))) {
    e.status = 421;
    e.message = "the Host header '" + req.header("host") + "' does not name this server (see --allowed-host)";
    e.type = "invalid_request_error";
    e.code = "host_not_allowed";
    out.response.status = e.status;
    out.response.body = dump_json(error_object(e));
    return out;
  }
  out.response.status = 503;
  out.response.headers.emplace_back("Retry-After", "1");
  if (req.path == "/health") {
    out.response.body = R"({"status":"loading"})";
    return out;
  }
  e.status = 503;
  e.message = "the server is loading the model; retry shortly";
  e.type = "server_error";
  e.code = "loading";
  out.response.body = dump_json(error_object(e));
  return out;
}

}  // namespace server
