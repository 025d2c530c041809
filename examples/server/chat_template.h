// The chat templates the server renders with: the model's Jinja template (GGUF
// tokenizer.chat_template, and tokenizer.chat_template.tool_use for requests with tools), or a
// --chat-template override (a built-in family name or a file of Jinja text), rendered by
// lmrt_chat_apply_template exactly as transformers' apply_chat_template does, and turned into prompt
// ids by lmrt_chat_tokenize (only the template's own text can become special tokens).
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tool_calls.h"

namespace server {

struct ChatTemplates {
  std::string name;                // for the start-up line: "model", "chatml", the file's path, ...
  std::string text;                // Jinja
  std::string tool_use_text;       // the model's tokenizer.chat_template.tool_use; "" when it has none
  std::vector<std::string> stops;  // extra stop strings: end-of-turn texts the vocabulary may lack
  ToolCallFormat tool_format = ToolCallFormat::kGeneric;  // from the template used with tools
};

// The Jinja text of a built-in family: "chatml", "llama2", "llama3", "zephyr" and "plain"
// ("System: ...\nUser: ...\nAssistant:", for models without a template); nullopt for other names.
std::optional<std::string> builtin_chat_template(const std::string& name);

// The templates for `option` (--chat-template): "auto" (the model's, else plain), a built-in name,
// or a path to a Jinja file. nullopt with a message when the file cannot be read.
std::optional<ChatTemplates> load_chat_templates(const lmrt_model* model, const std::string& option,
                                                 std::string* error);

// Templates from Jinja text.
ChatTemplates chat_templates_from_text(std::string name, std::string text, std::string tool_use_text);

struct RenderError {
  bool client_fault;  // the template refused the conversation (raise_exception): 400; else 500
  std::string message;
};

// A rendered chat: its text, and its prompt ids when a model was given.
struct ChatPrompt {
  std::string text;
  std::vector<int32_t> tokens;
};

// Renders OpenAI-style `messages_json` (and `tools_json`, "" for none) ending with the opening of the
// assistant's turn, with the tool_use template when tools are given and the model has one. With a
// model (NULL in tests of the text alone) the prompt ids come from lmrt_chat_tokenize: the request's
// strings stay text wherever the template puts them, and BOS comes once.
std::optional<ChatPrompt> render_chat(const lmrt_model* model, const ChatTemplates& t, const std::string& messages_json,
                                      const std::string& tools_json, RenderError* error);

}  // namespace server
