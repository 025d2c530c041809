#include "serve_options.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace server {
namespace {

bool to_uint(const char* text, unsigned long lo, unsigned long hi, uint32_t* out) {
  if (text == nullptr || *text == '\0' || *text == '-') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

const char* serve_usage() {
  return "usage: lmrt serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [--queue N]\n"
         "                  [--ctx-size N] [--threads N] [--cache FILE [--prefix-cache N]] [--plugin FILE]\n"
         "                  [--api-key-file FILE] [--allowed-host NAME]... [--cors-origin ORIGIN]\n"
         "                  [--max-tokens-limit N] [--timeout S] [--grace S]\n"
         "                  [--max-connections N] [--max-connections-per-client N] [--max-header-bytes N]\n"
         "                  [--max-body-bytes N] [--header-timeout S] [--body-timeout S] [--idle-timeout S]\n"
         "                  [--no-mmap] [--chat-template auto|chatml|llama3|llama2|zephyr|plain|FILE] [--alias NAME]\n"
         "  OpenAI-compatible HTTP API: POST /v1/completions, POST /v1/chat/completions, GET /v1/models,\n"
         "  GET /health, GET /metrics. --prefix-cache N: prompts of more than N tokens leave their state in\n"
         "  the --cache file and later requests starting with one (after a restart too) load it.\n"
         "  --parallel N requests decode together as N sequences of one context (batched; a request\n"
         "  holds up to --ctx-size cells, the arena N x that; with --prefix-cache, N contexts); --queue\n"
         "  requests wait (default 4 x parallel), more get 429. MODEL may come from $LMRT_MODEL; the API key from\n"
         "  --api-key-file or $LMRT_API_KEY (--api-key KEY works but shows the key to `ps`).\n"
         "  max_tokens is clamped to --max-tokens-limit (default: the context size); a request runs\n"
         "  at most --timeout seconds (default 600, 0 = none); SIGINT/SIGTERM stop accepting, give\n"
         "  in-flight requests --grace seconds (default 10), cancel the rest and exit 0. --no-mmap reads\n"
         "  the model into memory: the file may then be truncated or rewritten while serving.\n";
}

bool parse_serve_options(int argc, char** argv, int first, ServeOptions* out, std::string* error) {
  if (const char* env = std::getenv("LMRT_MODEL")) out->model_path = env;
  if (const char* env = std::getenv("LMRT_API_KEY")) out->api_key = env;
  for (int i = first; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "-h" || opt == "--help") {
      out->help = true;
      continue;
    }
    if (opt == "--no-mmap") {
      out->use_mmap = false;
      continue;
    }
    if (i + 1 >= argc) {
      *error = "unknown option or missing value: " + opt;
      return false;
    }
    const char* value = argv[++i];
    uint32_t n = 0;
    auto number = [&](unsigned long lo, unsigned long hi, uint32_t* dst) {
      if (to_uint(value, lo, hi, dst)) return true;
      *error = opt + " needs a number in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + value + "'";
      return false;
    };
    if (opt == "-m" || opt == "--model") {
      out->model_path = value;
    } else if (opt == "--host") {
      out->host = value;
    } else if (opt == "--port") {
      if (!number(0, 65535, &n)) return false;
      out->port = static_cast<int>(n);
    } else if (opt == "--parallel" || opt == "-np") {
      if (!number(1, 256, &out->parallel)) return false;
    } else if (opt == "--queue") {
      if (!number(0, 100000, &out->queue)) return false;
    } else if (opt == "--ctx-size" || opt == "-c") {
      if (!number(0, 1u << 24, &out->ctx_size)) return false;
    } else if (opt == "--threads" || opt == "-t") {
      if (!number(1, 1024, &out->threads)) return false;
    } else if (opt == "--cache") {
      out->cache_path = value;
    } else if (opt == "--prefix-cache") {
      if (!number(1, 1u << 24, &out->prefix_min_tokens)) return false;
    } else if (opt == "--plugin") {
      out->plugin_path = value;
    } else if (opt == "--api-key") {
      out->api_key = value;
    } else if (opt == "--api-key-file") {
      out->api_key_file = value;
    } else if (opt == "--allowed-host") {
      out->allowed_hosts.push_back(value);
    } else if (opt == "--cors-origin") {
      out->cors_origin = value;
    } else if (opt == "--max-tokens-limit") {
      if (!number(1, INT32_MAX, &out->max_tokens_limit)) return false;
    } else if (opt == "--timeout") {
      if (!number(0, 1u << 24, &out->timeout_s)) return false;
    } else if (opt == "--grace") {
      if (!number(0, 3600, &out->grace_s)) return false;
    } else if (opt == "--max-connections") {
      if (!number(1, 65536, &n)) return false;
      out->http.max_connections = n;
    } else if (opt == "--max-connections-per-client") {
      if (!number(0, 65536, &n)) return false;
      out->http.max_connections_per_client = n;
    } else if (opt == "--max-header-bytes") {
      if (!number(1024, 1u << 20, &n)) return false;
      out->http.max_header_bytes = n;
    } else if (opt == "--max-body-bytes") {
      if (!number(1, 1u << 30, &n)) return false;
      out->http.max_body_bytes = n;
    } else if (opt == "--header-timeout") {
      if (!number(1, 3600, &n)) return false;
      out->http.header_timeout_s = n;
    } else if (opt == "--body-timeout") {
      if (!number(1, 3600, &n)) return false;
      out->http.body_timeout_s = n;
    } else if (opt == "--idle-timeout") {
      if (!number(1, 3600, &n)) return false;
      out->http.idle_timeout_s = n;
    } else if (opt == "--chat-template") {
      out->chat_template = value;
    } else if (opt == "--alias") {
      out->alias = value;
    } else {
      *error = "unknown option: " + opt;
      return false;
    }
  }
  if (!out->help && out->prefix_min_tokens != 0 && out->cache_path.empty()) {
    *error = "--prefix-cache needs --cache FILE (the states are kept in it)";
    return false;
  }
  if (!out->help && out->model_path.empty()) {
    *error = "no model: give -m MODEL or set LMRT_MODEL";
    return false;
  }
  return true;
}

}  // namespace server
