// Renders a model's chat template exactly as Hugging Face transformers' apply_chat_template does:
// the Jinja template gets `messages`, `tools` (None when absent), `documents` (None),
// `add_generation_prompt`, the special-token texts (bos_token, eos_token) and any extra variables.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/util/byte_range.h"
#include "runtime/util/status.h"

namespace lmrt {

struct ChatTemplateRequest {
  std::string_view template_text;
  std::string_view messages_json;  // a JSON array of OpenAI-style messages
  std::string_view tools_json;     // a JSON array of tools, or empty for none
  std::string_view extra_json;     // a JSON object of further variables, or empty
  bool add_generation_prompt = true;
  // Special-token texts; nullopt leaves the variable undefined (as transformers does for a token the
  // tokenizer lacks). extra_json may override them.
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
};

// Errors: invalid_argument for malformed JSON or a messages value that is not an array;
// bad_format for a template that does not parse or fails while rendering (the message names the
// line and construct; for the template's own raise_exception it is "raise_exception: <message>").
Status render_chat_template(const ChatTemplateRequest& request, std::string* out);

// The same, and *caller receives the byte ranges of the text that came from the caller's data (every
// string of messages, tools and extra variables, as it went through the template's filters), so that
// only the template's own text becomes special tokens (tokenize_chat).
Status render_chat_template(const ChatTemplateRequest& request, std::string* out, ByteRanges* caller);

}  // namespace lmrt
