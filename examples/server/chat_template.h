// The chat templates the server renders with: the model's Jinja template (GGUF
// tokenizer.chat_template, and tokenizer.chat_template.tool_use for requests with tools), or a
// --chat-template override (a built-in family name or a file of Jinja text), rendered by
// lmrt_chat_apply_template exactly as transformers' apply_chat_template does.
#pragma once

#include <lmrt/lmrt.h>

#include <optional>
#include <string>
#include <vector>

#include "tool_calls.h"

namespace server {

// One piece of a rendered prompt. Request text (from a message, a tool definition) that spells a
// marker is never template text; every marker in template text was written by the template. Only
// template text may hold control tokens (see prompt_tokens.h).
struct PromptPart {
  std::string text;
  bool from_template;
  bool operator==(const PromptPart& o) const { return text == o.text && from_template == o.from_template; }
};

struct ChatTemplates {
  std::string name;           // for the start-up line: "model", "chatml", the file's path, ...
  std::string text;           // Jinja
  std::string tool_use_text;  // the model's tokenizer.chat_template.tool_use; "" when it has none
  // The control-token texts the templates write ("<|im_start|>", the BOS text, ...); only these, and
  // only in the template's own text, become control tokens.
  std::vector<std::string> markers;
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

// Templates from Jinja text (markers found in the text and among the model's BOS/EOS texts; model
// may be NULL).
ChatTemplates chat_templates_from_text(const lmrt_model* model, std::string name, std::string text,
                                       std::string tool_use_text);

struct RenderError {
  bool client_fault;  // the template refused the conversation (raise_exception): 400; else 500
  std::string message;
};

// Renders OpenAI-style `messages_json` (and `tools_json`, "" for none) as parts ending with the
// opening of the assistant's turn. The request's strings are rendered with every marker text
// replaced by a placeholder, so the template's own markers are the only ones in the rendered text;
// the placeholders come back as request parts (other request text stays inside template parts,
// where it holds no marker). A template that inspects a string for a marker text (e.g. splits at
// "</think>") sees the placeholder instead. The tool_use template is used when tools are given
// and the model has one.
std::optional<std::vector<PromptPart>> render_chat_parts(const lmrt_model* model, const ChatTemplates& t,
                                                         const std::string& messages_json,
                                                         const std::string& tools_json, RenderError* error);

}  // namespace server
