// What the server answers while it is still loading the model and creating its contexts: the HTTP
// port is open from the start so that a supervisor can tell "loading" from "down".
#pragma once

#include "access_policy.h"
#include "http_server.h"

namespace server {

// The same Host rule as the API (421 for a name that is not this server), then 503 with
// Retry-After: /health gets {"status":"loading"}, every other path an OpenAI-style error.
HttpOutcome loading_answer(const AccessPolicy& policy, const HttpRequest& req);

}  // namespace server
