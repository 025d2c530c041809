// Chat prompt templates: the families the server knows, detection from a GGUF template text, and
// rendering a message list into a prompt.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace server {

enum class ChatTemplate { kPlain, kChatML, kLlama2, kZephyr };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others are rendered like "user")
  std::string content;
};

// "plain", "chatml", "llama2", "zephyr"; nullopt for any other name.
std::optional<ChatTemplate> chat_template_from_name(const std::string& name);
const char* chat_template_name(ChatTemplate t);

// The family of a Jinja chat template from GGUF metadata, judged by the markers it writes
// ("<|im_start|>", "[INST]", "<|user|>"); kPlain when none is recognised.
ChatTemplate detect_chat_template(const std::string& jinja);

// The prompt for `messages`, ending where the assistant's reply begins. Templates other than plain
// contain control-token texts, so the prompt is tokenized with special-token parsing.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages);

// Whether render_chat's output for t needs special-token parsing.
bool chat_template_uses_special_tokens(ChatTemplate t);

// Text that ends an assistant turn in template t (used as extra stop strings).
std::vector<std::string> chat_template_stops(ChatTemplate t);

}  // namespace server
