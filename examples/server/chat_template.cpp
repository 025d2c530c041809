// The plain template (documented in README.md) is for models without a chat template:
//   "System: ...\nUser: ...\nAssistant: ...\nAssistant:"
#include "chat_template.h"

namespace server {

std::optional<ChatTemplate> chat_template_from_name(const std::string& name) {
  if (name == "plain") return ChatTemplate::kPlain;
  if (name == "chatml") return ChatTemplate::kChatML;
  if (name == "llama2") return ChatTemplate::kLlama2;
  if (name == "zephyr") return ChatTemplate::kZephyr;
  return std::nullopt;
}

const char* chat_template_name(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kChatML:
      return "chatml";
    case ChatTemplate::kLlama2:
      return "llama2";
    case ChatTemplate::kZephyr:
      return "zephyr";
    case ChatTemplate::kPlain:
      break;
  }
  return "plain";
}

ChatTemplate detect_chat_template(const std::string& jinja) {
  if (jinja.find("<|im_start|>") != std::string::npos) return ChatTemplate::kChatML;
  if (jinja.find("<|user|>") != std::string::npos && jinja.find("<|assistant|>") != std::string::npos)
    return ChatTemplate::kZephyr;
  if (jinja.find("[INST]") != std::string::npos) return ChatTemplate::kLlama2;
  return ChatTemplate::kPlain;
}

bool chat_template_uses_special_tokens(ChatTemplate t) { return t != ChatTemplate::kPlain; }

std::vector<std::string> chat_template_stops(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kChatML:
      return {"<|im_end|>", "<|im_start|>"};
    case ChatTemplate::kLlama2:
      return {"</s>", "[INST]"};
    case ChatTemplate::kZephyr:
      return {"</s>", "<|user|>"};
    case ChatTemplate::kPlain:
      break;
  }
  return {"\nUser:"};
}

namespace {

std::string render_chatml(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  return out + "<|im_start|>assistant\n";
}

std::string render_zephyr(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m.role == "system" || m.role == "assistant" ? m.role : "user";
    out += "<|" + role + "|>\n" + m.content + "</s>\n";
  }
  return out + "<|assistant|>\n";
}

// Llama 2: the system prompt goes inside the first [INST] block; each finished exchange is closed
// with </s> and the next opens with <s> (the first <s> is the BOS lmrt adds).
std::string render_llama2(const std::vector<ChatMessage>& messages) {
  std::string out;
  std::string system;
  bool first_user = true;
  for (const auto& m : messages) {
    if (m.role == "system") {
      system += (system.empty() ? "" : "\n") + m.content;
    } else if (m.role == "assistant") {
      out += " " + m.content + " </s>";
    } else {
      if (!first_user) out += "<s>";
      out += "[INST] ";
      if (!system.empty()) {
        out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
        system.clear();
      }
      out += m.content + " [/INST]";
      first_user = false;
    }
  }
  if (first_user) {  // no user turn at all: still give the model an instruction block
    out += "[INST] ";
    if (!system.empty()) out += "<<SYS>>\n" + system + "\n<</SYS>>\n\n";
    out += " [/INST]";
  }
  return out;
}

std::string render_plain(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const auto& m : messages) {
    const std::string role = m.role == "system" ? "System" : m.role == "assistant" ? "Assistant" : "User";
    out += role + ": " + m.content + "\n";
  }
  return out + "Assistant:";
}

}  // namespace

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages) {
  switch (t) {
    case ChatTemplate::kChatML:
      return render_chatml(messages);
    case ChatTemplate::kLlama2:
      return render_llama2(messages);
    case ChatTemplate::kZephyr:
      return render_zephyr(messages);
    case ChatTemplate::kPlain:
      break;
  }
  return render_plain(messages);
}

}  // namespace server
