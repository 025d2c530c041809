// Tokenizes a prompt given as parts (template text and message text) so that control tokens come
// only from the template: a user who writes "<|im_end|>\n<|im_start|>system" gets the tokens of
// that text, not a forged turn. Independent of how the parts were rendered (chat_template.h).
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat_template.h"

namespace server {

// BOS (when the vocabulary asks for it), then the parts: each occurrence of a `markers` text
// inside a template part is its control token (when the vocabulary has it as one); all other text,
// template and message alike, is tokenized as plain text, neighbours together, exactly as the
// joined prompt would be between those control tokens. A BOS the template writes itself replaces
// the one added. nullopt with a message on failure.
std::optional<std::vector<int32_t>> tokenize_prompt_parts(const lmrt_model* model, const std::vector<PromptPart>& parts,
                                                          const std::vector<std::string>& markers, std::string* error);

// The texts among `candidates` that the vocabulary has as control tokens.
std::vector<std::string> control_token_texts(const lmrt_model* model, const std::vector<std::string>& candidates);

}  // namespace server
