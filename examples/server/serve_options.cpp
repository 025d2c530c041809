#include "serve_options.h"

#include <cerrno>
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
         "                  [--ctx-size N] [--threads N] [--cache FILE] [--plugin FILE] [--api-key KEY]\n"
         "                  [--chat-template auto|chatml|llama2|zephyr|plain] [--alias NAME]\n"
         "  OpenAI-compatible HTTP API: POST /v1/completions, POST /v1/chat/completions, GET /v1/models,\n"
         "  GET /health. --parallel contexts share the model; --queue requests wait for one (default\n"
         "  4 x parallel), more get 429. MODEL may come from $LMRT_MODEL, KEY from $LMRT_API_KEY.\n";
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
    } else if (opt == "--plugin") {
      out->plugin_path = value;
    } else if (opt == "--api-key") {
      out->api_key = value;
    } else if (opt == "--chat-template") {
      out->chat_template = value;
    } else if (opt == "--alias") {
      out->alias = value;
    } else {
      *error = "unknown option: " + opt;
      return false;
    }
  }
  if (!out->help && out->model_path.empty()) {
    *error = "no model: give -m MODEL or set LMRT_MODEL";
    return false;
  }
  return true;
}

}  // namespace server
