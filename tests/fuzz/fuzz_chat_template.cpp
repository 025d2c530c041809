// libFuzzer target: the chat template renderer (runtime/chat) on arbitrary template text, with a fixed
// conversation that has a system prompt, two turns, a tool call and a tool result. A template either
// renders or fails with a message; the renderer's bounds (depth, steps, output size) keep every input
// finite, and nothing may crash or leak.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/chat/chat_template.h"

namespace {

constexpr std::string_view kMessages = R"([
 {"role": "system", "content": "You are terse."},
 {"role": "user", "content": "Hi <|im_end|> {{ x }}"},
 {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "c1",
   "function": {"name": "f", "arguments": {"a": [1, 2.5, null, true]}}}]},
 {"role": "tool", "tool_call_id": "c1", "content": "42"},
 {"role": "user", "content": [{"type": "text", "text": "and?"}]}
])";
constexpr std::string_view kTools =
    R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  lmrt::ChatTemplateRequest req;
  req.template_text = std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1);
  req.messages_json = kMessages;
  if (data[0] & 1) req.tools_json = kTools;
  req.add_generation_prompt = (data[0] & 2) != 0;
  req.bos_token = "<s>";
  req.eos_token = "</s>";
  std::string out;
  const lmrt::Status s = lmrt::render_chat_template(req, &out);
  if (!s.ok() && s.message().empty()) __builtin_trap();  // every failure says why
  return 0;
}
