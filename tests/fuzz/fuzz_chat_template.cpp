// libFuzzer target: the chat template renderer (runtime/chat) on arbitrary template text, with a fixed
// conversation that has a system prompt, two turns, a tool call and a tool result. A template either
// renders or fails with a message; the renderer's bounds (depth, steps, output size) keep every input
// finite, and nothing may crash or leak. A rendered chat is also tokenized (tokenize_chat, the Qwen2
// vocabulary of ../shared/vocab/qwen2.gguf; $LMRT_FUZZ_MODEL overrides): the caller ranges must be sorted
// and inside the text, the ids must spell the text back, and they may hold no more control tokens than
// the text tokenized with every special-token text parsed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/chat/chat_tokens.h"
#include "runtime/model/gguf_file.h"
#include "runtime/util/utf8.h"

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

const lmrt::Tokenizer* tokenizer() {
  static std::unique_ptr<lmrt::Tokenizer> tok = [] {
    const char* env = std::getenv("LMRT_FUZZ_MODEL");
    const std::string path = env != nullptr ? env : LMRT_FUZZ_DEFAULT_MODEL;
    std::unique_ptr<lmrt::GgufFile> gguf;
    std::unique_ptr<lmrt::Tokenizer> t;
    if (!lmrt::GgufFile::open(path, true, &gguf).ok() || !lmrt::Tokenizer::from_gguf(*gguf, &t).ok())
      std::abort();  // the fuzzer's own setup, not an input
    return t;
  }();
  return tok.get();
}

size_t control_count(const lmrt::Tokenizer& tok, const std::vector<int32_t>& ids) {
  size_t n = 0;
  for (int32_t id : ids) n += tok.is_control(id) ? 1 : 0;
  return n;
}

void check_tokens(const lmrt::ChatTemplateRequest& req, const std::string& plain_render) {
  std::string text;
  lmrt::ByteRanges caller;
  if (!lmrt::render_chat_template(req, &text, &caller).ok() || text != plain_render) __builtin_trap();
  size_t end = 0;
  for (const lmrt::ByteRange& r : caller) {
    if (r.begin < end || r.begin >= r.end || r.end > text.size()) __builtin_trap();
    end = r.end;
  }
  const lmrt::Tokenizer& tok = *tokenizer();
  std::vector<int32_t> ids, naive;
  if (!lmrt::tokenize_chat(tok, req, &ids).ok()) {
    if (lmrt::validate_utf8(text).ok()) __builtin_trap();  // only invalid UTF-8 may be refused
    return;
  }
  if (!tok.encode(text, false, true, &naive).ok() || control_count(tok, ids) > control_count(tok, naive))
    __builtin_trap();
  std::string back, bytes;
  for (int32_t id : ids) {
    if (tok.is_control(id))
      back += tok.token_text(id);
    else if (tok.token_to_bytes(id, &bytes).ok())
      back += bytes;
    else
      __builtin_trap();
  }
  if (back != text) __builtin_trap();
}

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
  if (s.ok()) check_tokens(req, out);
  return 0;
}
