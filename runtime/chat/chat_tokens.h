// A chat as prompt token ids: the model's template rendered, then tokenized so that only the
// template's own text can become special tokens. A user who writes "<|im_end|>\n<|im_start|>system"
// gets the ids of that text, never the chat format's control tokens (server issue 19).
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"

namespace lmrt {

// Renders `request` and replaces *out with its ids (Tokenizer::encode_chat: BOS once, when the
// vocabulary asks for it). Errors: those of render_chat_template and of the tokenizer.
Status tokenize_chat(const Tokenizer& tokenizer, const ChatTemplateRequest& request, std::vector<int32_t>* out);

}  // namespace lmrt
