// Turns the JSON body of /v1/completions and /v1/chat/completions into a validated request, or an
// OpenAI-style error naming the offending field.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chat_template.h"
#include "generation.h"

namespace server {

enum class Endpoint { kCompletions, kChat };

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // "" when none
  std::string code;   // "" when none
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::vector<std::string> prompts;  // completions: one per prompt; chat: the rendered conversation
  // Chat: the prompt ids from lmrt_chat_tokenize (empty when ModelFacts has no model).
  std::vector<int32_t> chat_tokens;
  // Chat with tools (tool_choice other than "none"): the reply is read back as tool calls.
  bool parse_tool_calls = false;
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;
  // OpenAI's parallel_tool_calls (default true): false reads at most one call from the reply (a
  // forced call's grammar allows exactly one either way).
  bool parallel_tool_calls = true;
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: prepend the prompt to the text
  SamplingParams sampling;
};

// What validation needs to know about the served model.
struct ModelFacts {
  const lmrt_plugin_host* plugins = nullptr;  // from --plugin; NULL: built-in samplers only
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  const lmrt_model* model = nullptr;         // renders chat templates (may be NULL in tests of other fields)
  const ChatTemplates* templates = nullptr;  // NULL: chat requests fail with 500
  uint32_t max_tokens_limit = 0;             // --max-tokens-limit: larger max_tokens are clamped to it; 0: n_ctx
};

// Parses and validates `body`. Unknown fields are ignored; known fields of the wrong type or out of
// range are errors (status 400); a chat template that fails is a 400 when it refused the
// conversation (raise_exception), else a 500. Never throws.
std::optional<ApiError> parse_api_request(const std::string& body, Endpoint endpoint, const ModelFacts& model,
                                          ApiRequest* out);

}  // namespace server
