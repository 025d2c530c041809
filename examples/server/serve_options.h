// Command-line options of `lmrt serve`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "http_server.h"

namespace server {

struct ServeOptions {
  std::string model_path;  // -m, else $LMRT_MODEL
  std::string host = "127.0.0.1";
  int port = 8080;
  uint32_t parallel = 1;  // contexts, i.e. requests generated at the same time
  uint32_t queue = 0;     // requests that may wait for a context; 0 = 4 x parallel
  uint32_t ctx_size = 0;  // 0: the model's training context
  uint32_t threads = 0;   // per context; 0: online CPUs / parallel (at least 1)
  std::string cache_path;
  uint32_t prefix_min_tokens = 0;  // --prefix-cache N: keep prompt states of more than N tokens in the cache
  std::string plugin_path;
  std::string api_key;  // --api-key, else $LMRT_API_KEY (--api-key-file replaces both)
  std::string api_key_file;
  std::vector<std::string> allowed_hosts;  // --allowed-host, repeatable
  std::string cors_origin;                 // --cors-origin; "" = CORS off
  uint32_t max_tokens_limit = 0;           // 0: the context size
  uint32_t timeout_s = 600;                // per request; 0: none
  uint32_t grace_s = 10;                   // SIGTERM/SIGINT: time in-flight requests get to finish
  HttpLimits http;
  std::string chat_template = "auto";
  std::string alias;     // model id in responses; default the file name without .gguf
  bool use_mmap = true;  // --no-mmap: read the model into memory (safe if the file is truncated)
  bool help = false;
};

// Parses argv[first..argc). Returns false with a message for unknown options, missing or bad values.
bool parse_serve_options(int argc, char** argv, int first, ServeOptions* out, std::string* error);

const char* serve_usage();

}  // namespace server
