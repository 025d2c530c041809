// Chat prompt templates: the families the server knows, detection from a GGUF template text, and
// rendering a message list into a prompt.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace server {

enum class ChatTemplate { kPlain, kChatML, kLlama2, kZephyr, kLlama3 };

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" (others are rendered like "user")
  std::string content;
};

// One piece of a rendered prompt: the template's own text, or text that came from a message. Only
// template text may hold control tokens (see prompt_tokens.h).
struct PromptPart {
  std::string text;
  bool from_template;
  bool operator==(const PromptPart& o) const { return text == o.text && from_template == o.from_template; }
};

// "plain", "chatml", "llama2", "zephyr", "llama3"; nullopt for any other name.
std::optional<ChatTemplate> chat_template_from_name(const std::string& name);
const char* chat_template_name(ChatTemplate t);

// The family of a Jinja chat template from GGUF metadata, judged by the markers it writes
// ("<|im_start|>", "[INST]", "<|user|>"); kPlain when none is recognised.
ChatTemplate detect_chat_template(const std::string& jinja);

// The prompt for `messages` as parts, ending where the assistant's reply begins.
std::vector<PromptPart> render_chat_parts(ChatTemplate t, const std::vector<ChatMessage>& messages);

// The parts joined: the prompt as text.
std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages);

// The control-token texts template t writes (e.g. "<|im_start|>"); only these, and only in the
// template's own parts, become control tokens.
std::vector<std::string> chat_template_markers(ChatTemplate t);

// Whether template t writes control tokens at all.
bool chat_template_uses_special_tokens(ChatTemplate t);

// Text that ends an assistant turn in template t (used as extra stop strings).
std::vector<std::string> chat_template_stops(ChatTemplate t);

}  // namespace server
