// Render with provenance, then tokenize with the caller's bytes as plain text.
#include "runtime/chat/chat_tokens.h"

#include <string>

namespace lmrt {

Status tokenize_chat(const Tokenizer& tokenizer, const ChatTemplateRequest& request, std::vector<int32_t>* out) {
  std::string text;
  ByteRanges caller;
  LMRT_RETURN_IF_ERROR(render_chat_template(request, &text, &caller));
  return tokenizer.encode_chat(text, caller, out);
}

}  // namespace lmrt
