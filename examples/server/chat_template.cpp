#include "chat_template.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

namespace server {
namespace {

using ojson = nlohmann::ordered_json;

// The old hard-coded families as Jinja (one line each, so trim_blocks and lstrip_blocks do not
// matter). The BOS that lmrt adds is not written by them.
const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> t = {
      {"chatml",
       "{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + (m['content'] or '') + '<|im_end|>\\n' }}"
       "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}"},
      {"llama3",
       "{%- for m in messages %}{{ '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + (m['content'] or "
       "'') + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}"
       "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"},
      {"zephyr",
       "{%- for m in messages %}{{ '<|' + (m['role'] if m['role'] in ['system', 'assistant'] else 'user') + '|>\\n' + "
       "(m['content'] or '') + '</s>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{ '<|assistant|>\\n' }}"
       "{%- endif %}"},
      // Llama 2: system prompts go inside the next [INST] block; each finished exchange is closed with
      // </s> and the next opens with <s> (the first <s> is the BOS lmrt adds).
      {"llama2",
       "{%- set ns = namespace(sys='', has_sys=false, first=true) %}{%- for m in messages %}"
       "{%- if m['role'] == 'system' %}{%- set ns.sys = (ns.sys + '\\n' if ns.has_sys else '') + (m['content'] or '') "
       "%}{%- set ns.has_sys = true %}"
       "{%- elif m['role'] == 'assistant' %}{{ ' ' + (m['content'] or '') + ' </s>' }}"
       "{%- else %}{{ ('' if ns.first else '<s>') + '[INST] ' }}{%- if ns.has_sys %}"
       "{{ '<<SYS>>\\n' + ns.sys + '\\n<</SYS>>\\n\\n' }}{%- set ns.sys = '' %}{%- set ns.has_sys = false %}"
       "{%- endif %}{{ (m['content'] or '') + ' [/INST]' }}{%- set ns.first = false %}{%- endif %}{%- endfor %}"
       "{%- if ns.first %}{{ '[INST] ' }}{%- if ns.has_sys %}{{ '<<SYS>>\\n' + ns.sys + '\\n<</SYS>>\\n\\n' }}"
       "{%- endif %}{{ ' [/INST]' }}{%- endif %}"},
      {"plain",
       "{%- for m in messages %}{{ ('System' if m['role'] == 'system' else 'Assistant' if m['role'] == 'assistant' "
       "else 'User') + ': ' + (m['content'] or '') + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}"
       "{{ 'Assistant:' }}{%- endif %}"},
  };
  return t;
}

// End-of-turn texts: stop strings for vocabularies that lack them as control tokens (a control
// token's text is empty and never matches).
std::vector<std::string> stops_for(const std::string& text) {
  static const char* const kTurnTexts[] = {"<|im_end|>",    "<|im_start|>",    "<|eot_id|>", "<|start_header_id|>",
                                           "<end_of_turn>", "<start_of_turn>", "<|end|>",    "[INST]",
                                           "<|user|>"};
  std::vector<std::string> out;
  for (const char* s : kTurnTexts)
    if (text.find(s) != std::string::npos) out.push_back(s);
  if (text.find("'Assistant:'") != std::string::npos && out.empty()) out.push_back("\nUser:");  // plain
  return out;
}

std::optional<std::string> render(const lmrt_model* model, const lmrt_chat_template_params& p,
                                  const std::string& messages, std::string* error) {
  char err[1024] = "";
  size_t len = 0;
  std::string out(4096, '\0');
  lmrt_status st = lmrt_chat_apply_template(model, messages.c_str(), &p, out.data(), out.size(), &len, err, sizeof err);
  if (st == LMRT_ERR_BUFFER_TOO_SMALL) {
    out.assign(len + 1, '\0');
    st = lmrt_chat_apply_template(model, messages.c_str(), &p, out.data(), out.size(), &len, err, sizeof err);
  }
  if (st != LMRT_OK) {
    *error = err[0] != '\0' ? err : lmrt_status_str(st);
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::optional<std::vector<int32_t>> tokenize(const lmrt_model* model, const lmrt_chat_template_params& p,
                                             const std::string& messages, std::string* error) {
  char err[1024] = "";
  size_t n = 0;
  std::vector<int32_t> ids(1024);
  lmrt_status st = lmrt_chat_tokenize(model, messages.c_str(), &p, ids.data(), ids.size(), &n, err, sizeof err);
  if (st == LMRT_ERR_BUFFER_TOO_SMALL) {
    ids.resize(n);
    st = lmrt_chat_tokenize(model, messages.c_str(), &p, ids.data(), ids.size(), &n, err, sizeof err);
  }
  if (st != LMRT_OK) {
    *error = err[0] != '\0' ? err : lmrt_status_str(st);
    return std::nullopt;
  }
  ids.resize(n);
  return ids;
}

std::optional<std::string> model_meta(const lmrt_model* model, const char* key) {
  size_t len = 0;
  if (model == nullptr || lmrt_model_meta_str(model, key, nullptr, 0, &len) == LMRT_ERR_INVALID_ARGUMENT)
    return std::nullopt;
  std::string s(len + 1, '\0');
  if (lmrt_model_meta_str(model, key, s.data(), s.size(), &len) != LMRT_OK) return std::nullopt;
  s.resize(len);
  return s;
}

}  // namespace

std::optional<std::string> builtin_chat_template(const std::string& name) {
  auto it = builtins().find(name);
  if (it == builtins().end()) return std::nullopt;
  return it->second;
}

ChatTemplates chat_templates_from_text(std::string name, std::string text, std::string tool_use_text) {
  ChatTemplates t;
  t.name = std::move(name);
  t.text = std::move(text);
  t.tool_use_text = std::move(tool_use_text);
  t.stops = stops_for(t.text);
  t.tool_format = detect_tool_call_format(t.tool_use_text.empty() ? t.text : t.tool_use_text);
  return t;
}

std::optional<ChatTemplates> load_chat_templates(const lmrt_model* model, const std::string& option,
                                                 std::string* error) {
  if (option == "auto") {
    if (auto text = model_meta(model, "tokenizer.chat_template"))
      return chat_templates_from_text("model", *text,
                                      model_meta(model, "tokenizer.chat_template.tool_use").value_or(""));
    return chat_templates_from_text("plain", *builtin_chat_template("plain"), "");
  }
  if (auto text = builtin_chat_template(option)) return chat_templates_from_text(option, *text, "");
  std::ifstream in(option, std::ios::binary);
  if (!in) {
    *error = "--chat-template '" + option +
             "' is neither a built-in template (auto, chatml, llama3, llama2, zephyr, plain) nor a readable file";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return chat_templates_from_text(option, ss.str(), "");
}

std::optional<ChatPrompt> render_chat(const lmrt_model* model, const ChatTemplates& t, const std::string& messages_json,
                                      const std::string& tools_json, RenderError* error) {
  const std::string& tmpl = !tools_json.empty() && !t.tool_use_text.empty() ? t.tool_use_text : t.text;
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  p.template_text = tmpl.c_str();
  p.tools_json = tools_json.empty() ? nullptr : tools_json.c_str();
  std::string why;
  ChatPrompt out;
  bool ok = false;
  if (auto text = render(model, p, messages_json, &why)) {
    out.text = std::move(*text);
    ok = true;
    if (model != nullptr) {
      auto ids = tokenize(model, p, messages_json, &why);
      ok = ids.has_value();
      if (ok) out.tokens = std::move(*ids);
    }
  }
  if (!ok) {
    const bool refused = why.find("raise_exception") != std::string::npos;
    *error = RenderError{
        refused, "the chat template (" + t.name + ") " + (refused ? "refused the conversation: " : "failed: ") + why};
    return std::nullopt;
  }
  return out;
}

}  // namespace server
