// Tool calls in a model's reply: which output format a chat template teaches (judged by the
// template's text, as llama.cpp's chat.cpp does), and the reply split into content and OpenAI-style
// calls.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
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
// Arguments written as a JSON object are the model's text without blanks outside strings
// (minify_json), so they equal what ToolCallStream streamed. `parallel` false (OpenAI's
// parallel_tool_calls) keeps at most the first call.
AssistantReply parse_assistant_reply(ToolCallFormat f, const std::string& text, bool parallel = true);

// JSON text without the blanks outside strings; every other byte kept. A streaming transform: the
// result of a prefix is a prefix of the result of the whole.
std::string minify_json(std::string_view json_text);

// A reply read while it streams, in OpenAI's streaming shape: settled content as it comes, then for
// each call a first delta with its name (once its head `{"name": "..", "arguments": {` is complete)
// and its arguments in fragments as the model writes them (minified). A reply the stream cannot
// follow (another JSON shape, a fenced block) is held and settled by finish(): text that is not a
// call is content, calls not streamed yet are sent whole. A call already streamed stays a call even
// when the reply ends before it closes (max_tokens), as OpenAI's own streams do.
class ToolCallStream {
 public:
  struct Delta {
    int call = -1;     // -1: content; else the call's index
    std::string name;  // a call's first delta: its name (text then is "")
    std::string text;  // content, or a fragment of the call's arguments
  };

  ToolCallStream(ToolCallFormat f, bool parallel) : format_(f), parallel_(parallel) {}
  // Appends a piece of the reply; *out receives what it settles.
  void push(std::string_view piece, std::vector<Delta>* out);
  // The reply is complete: *out receives everything still owed.
  void finish(std::vector<Delta>* out);
  // Calls sent so far (finish_reason "tool_calls" when any).
  size_t calls_sent() const { return sent_.size(); }
  const std::string& text() const { return text_; }

 private:
  struct Sent {
    std::string name;
    std::string arguments;
  };
  void follow(std::vector<Delta>* out);
  void send_arguments(size_t k, const std::string& arguments, std::vector<Delta>* out);

  ToolCallFormat format_;
  bool parallel_;
  std::string text_;
  size_t content_sent_ = 0;
  std::vector<Sent> sent_;
  bool lost_ = false;  // the reply left the shapes the stream follows: finish() settles the rest
};

// While streaming: how many leading bytes of the reply so far are content whatever comes next
// (a call, or a prefix of its opening marker, begins after them).
size_t settled_content_length(ToolCallFormat f, const std::string& text);

}  // namespace server
