// Tokenizes a prompt given as parts (marker-bearing text and plain text) so that control tokens
// come only from the marker-bearing parts. Completion prompts are one plain part; chat prompts come
// from lmrt_chat_tokenize instead (chat_template.h).
#pragma once

#include <lmrt/lmrt.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace server {

// One piece of a prompt: text whose `markers` may become control tokens, or plain text.
struct PromptPart {
  std::string text;
  bool from_template;
  bool operator==(const PromptPart& o) const { return text == o.text && from_template == o.from_template; }
};

// BOS (when the vocabulary asks for it), then the parts: each occurrence of a `markers` text
// inside a template part is its control token (when the vocabulary has it as one); all other text,
// template and message alike, is tokenized as plain text, neighbours together, exactly as the
// joined prompt would be between those control tokens. nullopt with a message on failure.
std::optional<std::vector<int32_t>> tokenize_prompt_parts(const lmrt_model* model, const std::vector<PromptPart>& parts,
                                                          const std::vector<std::string>& markers, std::string* error);

// The most bytes of text one token stands for: the longest piece, or one character (4 bytes) where a
// character without a token becomes the unknown token. A text longer than n x this has more than n tokens.
size_t max_text_bytes_per_token(const lmrt_model* model);

}  // namespace server
