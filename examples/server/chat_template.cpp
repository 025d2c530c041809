// The plain template (documented in README.md) is for models without a chat template:
//   "System: ...\nUser: ...\nAssistant: ...\nAssistant:"
#include "chat_template.h"

namespace server {

std::optional<ChatTemplate> chat_template_from_name(const std::string& name) {
  if (name == "plain") return ChatTemplate::kPlain;
  if (name == "chatml") return ChatTemplate::kChatML;
  if (name == "llama2") return ChatTemplate::kLlama2;
  if (name == "zephyr") return ChatTemplate::kZephyr;
  if (name == "llama3") return ChatTemplate::kLlama3;
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
    case ChatTemplate::kLlama3:
      return "llama3";
    case ChatTemplate::kPlain:
      break;
  }
  return "plain";
}

ChatTemplate detect_chat_template(const std::string& jinja) {
  if (jinja.find("<|im_start|>") != std::string::npos) return ChatTemplate::kChatML;
  if (jinja.find("<|start_header_id|>") != std::string::npos) return ChatTemplate::kLlama3;
  if (jinja.find("<|user|>") != std::string::npos && jinja.find("<|assistant|>") != std::string::npos)
    return ChatTemplate::kZephyr;
  if (jinja.find("[INST]") != std::string::npos) return ChatTemplate::kLlama2;
  return ChatTemplate::kPlain;
}

bool chat_template_uses_special_tokens(ChatTemplate t) { return !chat_template_markers(t).empty(); }

std::vector<std::string> chat_template_markers(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kChatML:
      return {"<|im_start|>", "<|im_end|>"};
    case ChatTemplate::kLlama2:
    case ChatTemplate::kZephyr:
      return {"<s>", "</s>"};
    case ChatTemplate::kLlama3:
      return {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    case ChatTemplate::kPlain:
      break;
  }
  return {};
}

std::vector<std::string> chat_template_stops(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::kChatML:
      return {"<|im_end|>", "<|im_start|>"};
    case ChatTemplate::kLlama2:
      return {"</s>", "[INST]"};
    case ChatTemplate::kZephyr:
      return {"</s>", "<|user|>"};
    case ChatTemplate::kLlama3:
      return {"<|eot_id|>", "<|start_header_id|>"};
    case ChatTemplate::kPlain:
      break;
  }
  return {"\nUser:"};
}

namespace {

// Appends template text (t) and message text (m), merging neighbours of the same kind.
class Parts {
 public:
  Parts& t(const std::string& text) { return add(text, true); }
  Parts& m(const std::string& text) { return add(text, false); }
  std::vector<PromptPart> take() { return std::move(parts_); }

 private:
  Parts& add(const std::string& text, bool from_template) {
    if (text.empty()) return *this;
    if (!parts_.empty() && parts_.back().from_template == from_template)
      parts_.back().text += text;
    else
      parts_.push_back(PromptPart{text, from_template});
    return *this;
  }
  std::vector<PromptPart> parts_;
};

std::vector<PromptPart> render_chatml(const std::vector<ChatMessage>& messages) {
  Parts out;
  for (const auto& m : messages) out.t("<|im_start|>" + m.role + "\n").m(m.content).t("<|im_end|>\n");
  return out.t("<|im_start|>assistant\n").take();
}

// Llama 3: BOS (<|begin_of_text|>) is the one lmrt adds.
std::vector<PromptPart> render_llama3(const std::vector<ChatMessage>& messages) {
  Parts out;
  for (const auto& m : messages)
    out.t("<|start_header_id|>" + m.role + "<|end_header_id|>\n\n").m(m.content).t("<|eot_id|>");
  return out.t("<|start_header_id|>assistant<|end_header_id|>\n\n").take();
}

std::vector<PromptPart> render_zephyr(const std::vector<ChatMessage>& messages) {
  Parts out;
  for (const auto& m : messages) {
    const std::string role = m.role == "system" || m.role == "assistant" ? m.role : "user";
    out.t("<|" + role + "|>\n").m(m.content).t("</s>\n");
  }
  return out.t("<|assistant|>\n").take();
}

// Llama 2: the system prompt goes inside the first [INST] block; each finished exchange is closed
// with </s> and the next opens with <s> (the first <s> is the BOS lmrt adds).
std::vector<PromptPart> render_llama2(const std::vector<ChatMessage>& messages) {
  Parts out;
  std::vector<std::string> system;
  bool first_user = true;
  auto open_inst = [&] {
    out.t("[INST] ");
    if (!system.empty()) {
      out.t("<<SYS>>\n");
      for (size_t i = 0; i < system.size(); ++i) out.t(i == 0 ? "" : "\n").m(system[i]);
      out.t("\n<</SYS>>\n\n");
      system.clear();
    }
  };
  for (const auto& m : messages) {
    if (m.role == "system") {
      system.push_back(m.content);
    } else if (m.role == "assistant") {
      out.t(" ").m(m.content).t(" </s>");
    } else {
      if (!first_user) out.t("<s>");
      open_inst();
      out.m(m.content).t(" [/INST]");
      first_user = false;
    }
  }
  if (first_user) {  // no user turn at all: still give the model an instruction block
    open_inst();
    out.t(" [/INST]");
  }
  return out.take();
}

std::vector<PromptPart> render_plain(const std::vector<ChatMessage>& messages) {
  Parts out;
  for (const auto& m : messages) {
    const std::string role = m.role == "system" ? "System" : m.role == "assistant" ? "Assistant" : "User";
    out.t(role + ": ").m(m.content).t("\n");
  }
  return out.t("Assistant:").take();
}

}  // namespace

std::vector<PromptPart> render_chat_parts(ChatTemplate t, const std::vector<ChatMessage>& messages) {
  switch (t) {
    case ChatTemplate::kChatML:
      return render_chatml(messages);
    case ChatTemplate::kLlama2:
      return render_llama2(messages);
    case ChatTemplate::kZephyr:
      return render_zephyr(messages);
    case ChatTemplate::kLlama3:
      return render_llama3(messages);
    case ChatTemplate::kPlain:
      break;
  }
  return render_plain(messages);
}

std::string render_chat(ChatTemplate t, const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const PromptPart& p : render_chat_parts(t, messages)) out += p.text;
  return out;
}

}  // namespace server
