// Tool calls in a model's reply: which output format a chat template teaches (judged by the
// template's text, as llama.cpp's chat.cpp does), and the reply split into content and OpenAI-style
// calls.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace server {

enum class ToolCallFormat {
  kHermes,   // Hermes 2 Pro, Qwen2.5, Qwen3: <tool_call>{"name": .., "arguments": ..}</tool_call>
  kLlama3,   // Llama 3.1/3.2: {"name": .., "parameters": ..}, optionally after <|python_tag|>
  kMistral,  // Mistral v3+: [TOOL_CALLS][{"name": .., "arguments": ..}, ...]
  kGeneric,  // any other template: the whole reply is {"name": .., "arguments": ..} or {"tool_calls": [..]}
};

ToolCallFormat detect_tool_call_format(const std::string& template_text);
const char* tool_call_format_name(ToolCallFormat f);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of an object, as OpenAI's function.arguments
};

struct AssistantReply {
  std::string content;  // the text before the first call (all of it when there is none)
  std::vector<ToolCall> tool_calls;
};

// Splits a finished reply. Text that only looks like a call (malformed JSON, no name) stays content.
AssistantReply parse_assistant_reply(ToolCallFormat f, const std::string& text);

// While streaming: how many leading bytes of the reply so far are content whatever comes next
// (a call, or a prefix of its opening marker, begins after them).
size_t settled_content_length(ToolCallFormat f, const std::string& text);

}  // namespace server
