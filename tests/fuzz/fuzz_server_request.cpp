// libFuzzer target: the HTTP server's request parsing (examples/server/api_request.cpp) on arbitrary
// bodies, for both endpoints: every body is a request or an OpenAI-style error with a status and a
// message, never a crash, a hang or an exception.
#include <cstddef>
#include <cstdint>
#include <string>

#include "api_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const server::Endpoint endpoint = (data[0] & 1) != 0 ? server::Endpoint::kChat : server::Endpoint::kCompletions;
  server::ModelFacts model;
  model.n_vocab = 512;
  model.n_ctx = 256;
  // Jinja templates rendered without a model (the text alone); tools and tool_choice reach the
  // tool-call grammar builder.
  static const server::ChatTemplates chatml =
      server::chat_templates_from_text("chatml", *server::builtin_chat_template("chatml"), "");
  static const server::ChatTemplates hermes = server::chat_templates_from_text(
      "hermes", "{{ tools | tojson }}{% for m in messages %}<tool_call>{{ m.content }}{% endfor %}", "");
  model.templates = (data[0] & 2) != 0 ? &chatml : &hermes;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  server::ApiRequest out;
  const std::optional<server::ApiError> error = server::parse_api_request(body, endpoint, model, &out);
  if (error && (error->status < 400 || error->status > 599 || error->message.empty())) __builtin_trap();
  if (!error && out.sampling.max_tokens > 256) __builtin_trap();  // clamped to the context
  return 0;
}
