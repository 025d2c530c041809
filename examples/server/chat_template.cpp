#include "chat_template.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "prompt_tokens.h"

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

// Texts in a template that look like control tokens: <|...|>, <...> and [UPPER_CASE] without blanks.
std::vector<std::string> marker_candidates(const std::string& text) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    for (const auto& o : out)
      if (o == s) return;
    out.push_back(s);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char open = text[i];
    if (open != '<' && open != '[') continue;
    const char close = open == '<' ? '>' : ']';
    size_t j = i + 1;
    bool ok = true;
    while (j < text.size() && j - i <= 40 && text[j] != close) {
      const char c = text[j];
      if (c == ' ' || c == '\n' || c == '\t' || c == '\'' || c == '"' || c == '{' || c == '}' || c == open) ok = false;
      if (open == '[' && !((c >= 'A' && c <= 'Z') || c == '_' || c == '/')) ok = false;
      if (!ok) break;
      ++j;
    }
    if (ok && j < text.size() && text[j] == close && j > i + 1) add(text.substr(i, j - i + 1));
  }
  return out;
}

std::optional<std::string> render(const lmrt_model* model, const std::string& tmpl, const std::string& messages,
                                  const std::string& tools, std::string* error) {
  lmrt_chat_template_params p;
  lmrt_chat_template_params_init(&p);
  p.template_text = tmpl.c_str();
  p.tools_json = tools.empty() ? nullptr : tools.c_str();
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

std::optional<std::string> model_meta(const lmrt_model* model, const char* key) {
  size_t len = 0;
  if (model == nullptr || lmrt_model_meta_str(model, key, nullptr, 0, &len) == LMRT_ERR_INVALID_ARGUMENT)
    return std::nullopt;
  std::string s(len + 1, '\0');
  if (lmrt_model_meta_str(model, key, s.data(), s.size(), &len) != LMRT_OK) return std::nullopt;
  s.resize(len);
  return s;
}

// Placeholders for marker texts inside the request's strings: U+E000 then U+E100 + the marker's
// index; a U+E000 of the request itself becomes U+E000 U+E0FF.
constexpr const char kLead[] = "\xEE\x80\x80";
constexpr size_t kMaxMarkers = 255;

std::string utf8(unsigned cp) {  // cp in U+0800..U+FFFF
  return {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
          static_cast<char>(0x80 | (cp & 0x3F))};
}

std::string hide_markers(const std::string& s, const std::vector<std::string>& markers) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, kLead) == 0) {
      out += kLead + utf8(0xE0FF);
      i += 3;
      continue;
    }
    size_t best = markers.size();
    for (size_t k = 0; k < markers.size(); ++k)
      if (!markers[k].empty() && s.compare(i, markers[k].size(), markers[k]) == 0 &&
          (best == markers.size() || markers[k].size() > markers[best].size()))
        best = k;
    if (best < markers.size()) {
      out += kLead + utf8(0xE100 + static_cast<unsigned>(best));
      i += markers[best].size();
    } else {
      out += s[i++];
    }
  }
  return out;
}

ojson hide_in(const ojson& j, const std::vector<std::string>& markers) {
  if (j.is_string()) return hide_markers(j.get<std::string>(), markers);
  if (j.is_array()) {
    ojson out = ojson::array();
    for (const auto& e : j) out.push_back(hide_in(e, markers));
    return out;
  }
  if (j.is_object()) {
    ojson out = ojson::object();
    for (auto it = j.begin(); it != j.end(); ++it) out[hide_markers(it.key(), markers)] = hide_in(it.value(), markers);
    return out;
  }
  return j;
}

// The rendered text as parts: placeholders become request text again.
std::vector<PromptPart> reveal(const std::string& text, const std::vector<std::string>& markers) {
  std::vector<PromptPart> parts;
  auto add = [&](const std::string& s, bool from_template) {
    if (s.empty()) return;
    if (!parts.empty() && parts.back().from_template == from_template)
      parts.back().text += s;
    else
      parts.push_back(PromptPart{s, from_template});
  };
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = text.find(kLead, pos);
    if (at == std::string::npos || at + 6 > text.size()) {
      add(text.substr(pos), true);
      break;
    }
    add(text.substr(pos, at - pos), true);
    const auto b = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned cp = ((b(at + 3) & 0x0F) << 12) | ((b(at + 4) & 0x3F) << 6) | (b(at + 5) & 0x3F);
    if (b(at + 3) >> 4 == 0xE && cp == 0xE0FF) {
      add(kLead, false);
    } else if (b(at + 3) >> 4 == 0xE && cp >= 0xE100 && cp - 0xE100 < markers.size()) {
      add(markers[cp - 0xE100], false);
    } else {
      add(kLead, true);  // not one of ours: the template's own character
      pos = at + 3;
      continue;
    }
    pos = at + 6;
  }
  return parts;
}

}  // namespace

std::optional<std::string> builtin_chat_template(const std::string& name) {
  auto it = builtins().find(name);
  if (it == builtins().end()) return std::nullopt;
  return it->second;
}

ChatTemplates chat_templates_from_text(const lmrt_model* model, std::string name, std::string text,
                                       std::string tool_use_text) {
  ChatTemplates t;
  t.name = std::move(name);
  t.text = std::move(text);
  t.tool_use_text = std::move(tool_use_text);
  std::vector<std::string> candidates = marker_candidates(t.text + "\n" + t.tool_use_text);
  if (model != nullptr) {  // the texts of bos_token and eos_token, which templates write as variables
    std::string ignored;
    if (auto special = render(model, "{{ bos_token }}\x1f{{ eos_token }}", "[]", "", &ignored)) {
      const size_t sep = special->find('\x1f');
      for (const std::string& s : {special->substr(0, sep), special->substr(sep + 1)})
        if (!s.empty()) candidates.push_back(s);
    }
  }
  std::vector<std::string> unique;
  for (const std::string& c : candidates)
    if (std::find(unique.begin(), unique.end(), c) == unique.end()) unique.push_back(c);
  t.markers = model != nullptr ? control_token_texts(model, unique) : unique;
  if (t.markers.size() > kMaxMarkers) t.markers.resize(kMaxMarkers);
  t.stops = stops_for(t.text);
  t.tool_format = detect_tool_call_format(t.tool_use_text.empty() ? t.text : t.tool_use_text);
  return t;
}

std::optional<ChatTemplates> load_chat_templates(const lmrt_model* model, const std::string& option,
                                                 std::string* error) {
  if (option == "auto") {
    if (auto text = model_meta(model, "tokenizer.chat_template"))
      return chat_templates_from_text(model, "model", *text,
                                      model_meta(model, "tokenizer.chat_template.tool_use").value_or(""));
    return chat_templates_from_text(model, "plain", *builtin_chat_template("plain"), "");
  }
  if (auto text = builtin_chat_template(option)) return chat_templates_from_text(model, option, *text, "");
  std::ifstream in(option, std::ios::binary);
  if (!in) {
    *error = "--chat-template '" + option +
             "' is neither a built-in template (auto, chatml, llama3, llama2, zephyr, plain) nor a readable file";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return chat_templates_from_text(model, option, ss.str(), "");
}

std::optional<std::vector<PromptPart>> render_chat_parts(const lmrt_model* model, const ChatTemplates& t,
                                                         const std::string& messages_json,
                                                         const std::string& tools_json, RenderError* error) {
  const ojson messages = ojson::parse(messages_json, nullptr, false);
  const ojson tools = tools_json.empty() ? ojson() : ojson::parse(tools_json, nullptr, false);
  if (messages.is_discarded() || tools.is_discarded()) {
    *error = RenderError{true, "messages or tools are not valid JSON"};
    return std::nullopt;
  }
  const std::string& tmpl = !tools_json.empty() && !t.tool_use_text.empty() ? t.tool_use_text : t.text;
  std::string why;
  auto text = render(model, tmpl, hide_in(messages, t.markers).dump(),
                     tools_json.empty() ? "" : hide_in(tools, t.markers).dump(), &why);
  if (!text) {
    const bool refused = why.find("raise_exception") != std::string::npos;
    *error = RenderError{
        refused, "the chat template (" + t.name + ") " + (refused ? "refused the conversation: " : "failed: ") + why};
    return std::nullopt;
  }
  return reveal(*text, t.markers);
}

}  // namespace server
