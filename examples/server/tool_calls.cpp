#include "tool_calls.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace server {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kHermesOpen = "<tool_call>";
constexpr const char* kHermesClose = "</tool_call>";
constexpr const char* kPythonTag = "<|python_tag|>";
constexpr const char* kMistralOpen = "[TOOL_CALLS]";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(const std::string& s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

// The end (one past) of the JSON object or array starting at `pos`, by bracket balance outside
// strings; npos when it does not close.
size_t json_end(const std::string& s, size_t pos) {
  if (pos >= s.size() || (s[pos] != '{' && s[pos] != '[')) return std::string::npos;
  int depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string::npos;
}

std::optional<json> parse_json_at(const std::string& s, size_t pos, size_t* end) {
  *end = json_end(s, pos);
  if (*end == std::string::npos) return std::nullopt;
  json j = json::parse(s.begin() + static_cast<std::ptrdiff_t>(pos), s.begin() + static_cast<std::ptrdiff_t>(*end),
                       nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// {"name": "f", "arguments"|"parameters": {...} or "{...}"} as a call; nullopt otherwise.
std::optional<ToolCall> call_from(const json& j) {
  if (!j.is_object()) return std::nullopt;
  const json* body = &j;
  if (auto f = j.find("function"); f != j.end() && f->is_object()) body = &*f;  // OpenAI's own shape
  auto name = body->find("name");
  if (name == body->end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  auto args = body->find("arguments");
  if (args == body->end()) args = body->find("parameters");
  ToolCall call{name->get<std::string>(), "{}"};
  if (args != body->end()) {
    if (args->is_string()) {  // some models write the arguments as a JSON string already
      const json inner = json::parse(args->get<std::string>(), nullptr, false);
      if (inner.is_discarded() || !inner.is_object()) return std::nullopt;
      call.arguments = inner.dump();
    } else if (args->is_object()) {
      call.arguments = args->dump();
    } else {
      return std::nullopt;
    }
  }
  return call;
}

// One call or an array of calls; nullopt unless every element is a call.
std::optional<std::vector<ToolCall>> calls_from(const json& j) {
  std::vector<ToolCall> out;
  if (j.is_array()) {
    if (j.empty()) return std::nullopt;
    for (const json& e : j) {
      auto c = call_from(e);
      if (!c) return std::nullopt;
      out.push_back(*c);
    }
    return out;
  }
  if (auto c = call_from(j)) return std::vector<ToolCall>{*c};
  return std::nullopt;
}

// Hermes: every <tool_call>JSON</tool_call> block (a missing close at the very end is forgiven: the
// stop may have eaten it).
std::optional<AssistantReply> parse_hermes(const std::string& text) {
  const size_t first = text.find(kHermesOpen);
  if (first == std::string::npos) return std::nullopt;
  AssistantReply r{text.substr(0, first), {}};
  size_t pos = first;
  while (pos < text.size()) {
    pos = skip_space(text, pos);
    if (pos >= text.size()) break;
    if (text.compare(pos, std::strlen(kHermesOpen), kHermesOpen) != 0) return std::nullopt;
    pos = skip_space(text, pos + std::strlen(kHermesOpen));
    size_t end = 0;
    auto j = parse_json_at(text, pos, &end);
    if (!j) return std::nullopt;
    auto calls = calls_from(*j);
    if (!calls) return std::nullopt;
    r.tool_calls.insert(r.tool_calls.end(), calls->begin(), calls->end());
    pos = skip_space(text, end);
    if (text.compare(pos, std::strlen(kHermesClose), kHermesClose) == 0)
      pos += std::strlen(kHermesClose);
    else if (pos < text.size())
      return std::nullopt;
  }
  return r;
}

// A run of JSON calls from `pos` to the end, separated by blanks or ';' (Llama 3.1 may emit several).
std::optional<std::vector<ToolCall>> json_calls_to_end(const std::string& text, size_t pos) {
  std::vector<ToolCall> out;
  while (true) {
    pos = skip_space(text, pos);
    if (pos >= text.size()) break;
    size_t end = 0;
    auto j = parse_json_at(text, pos, &end);
    if (!j) return std::nullopt;
    auto calls = calls_from(*j);
    if (!calls) {
      // The generic shapes: {"tool_calls": [...]} and {"tool_call": {...}}.
      for (const char* key : {"tool_calls", "tool_call"})
        if (j->is_object() && j->contains(key)) calls = calls_from((*j)[key]);
      if (!calls) return std::nullopt;
    }
    out.insert(out.end(), calls->begin(), calls->end());
    pos = skip_space(text, end);
    if (pos < text.size() && text[pos] == ';') ++pos;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<AssistantReply> parse_llama3(const std::string& text) {
  const size_t tag = text.find(kPythonTag);
  if (tag != std::string::npos) {
    auto calls = json_calls_to_end(text, tag + std::strlen(kPythonTag));
    if (!calls) return std::nullopt;
    return AssistantReply{text.substr(0, tag), *calls};
  }
  const size_t start = skip_space(text, 0);
  if (start >= text.size() || text[start] != '{') return std::nullopt;
  auto calls = json_calls_to_end(text, start);
  if (!calls) return std::nullopt;
  return AssistantReply{"", *calls};
}

// [TOOL_CALLS] is a control token in Mistral's v3+ vocabularies, so its text is empty in the reply:
// a reply that starts with a JSON array of calls counts too.
std::optional<AssistantReply> parse_mistral(const std::string& text) {
  size_t at = text.find(kMistralOpen);
  size_t pos = 0;
  if (at != std::string::npos) {
    pos = skip_space(text, at + std::strlen(kMistralOpen));
  } else {
    at = 0;
    pos = skip_space(text, 0);
    if (pos >= text.size() || text[pos] != '[') return std::nullopt;
  }
  size_t end = 0;
  auto j = parse_json_at(text, pos, &end);
  if (!j) return std::nullopt;
  auto calls = calls_from(*j);
  if (!calls || skip_space(text, end) != text.size()) return std::nullopt;
  return AssistantReply{text.substr(0, at), *calls};
}

// The generic format also takes a reply fenced as ```json ... ```.
std::optional<AssistantReply> parse_generic(const std::string& text) {
  size_t start = skip_space(text, 0);
  std::string body = text;
  if (text.compare(start, 3, "```") == 0) {
    const size_t nl = text.find('\n', start);
    const size_t close = text.rfind("```");
    if (nl == std::string::npos || close <= nl) return std::nullopt;
    if (skip_space(text, close + 3) != text.size()) return std::nullopt;
    body = text.substr(nl + 1, close - nl - 1);
    start = skip_space(body, 0);
  }
  if (start >= body.size() || body[start] != '{') return std::nullopt;
  auto calls = json_calls_to_end(body, start);
  if (!calls) return std::nullopt;
  return AssistantReply{"", *calls};
}

// Where a call could begin in `text` that ends mid-marker: the start of the longest suffix of text
// that is a proper prefix of `marker`; npos when none.
size_t partial_marker_at_end(const std::string& text, const std::string& marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.compare(text.size() - n, n, marker, 0, n) == 0) return text.size() - n;
  return std::string::npos;
}

size_t settled_before_marker(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  if (at != std::string::npos) return at;
  const size_t partial = partial_marker_at_end(text, marker);
  return partial == std::string::npos ? text.size() : partial;
}

}  // namespace

ToolCallFormat detect_tool_call_format(const std::string& t) {
  if (t.find(kHermesOpen) != std::string::npos) return ToolCallFormat::kHermes;
  if (t.find(kMistralOpen) != std::string::npos) return ToolCallFormat::kMistral;
  // Llama 3.1+ writes tool results in an "ipython" turn; 3.0 has headers but no tools. Its
  // <|python_tag|> is a control token, empty in the reply text, so a bare JSON call is read too.
  if (t.find("<|start_header_id|>") != std::string::npos &&
      (t.find("ipython") != std::string::npos || t.find(kPythonTag) != std::string::npos))
    return ToolCallFormat::kLlama3;
  return ToolCallFormat::kGeneric;
}

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
    case ToolCallFormat::kGeneric:
      break;
  }
  return "generic";
}

AssistantReply parse_assistant_reply(ToolCallFormat f, const std::string& text) {
  std::optional<AssistantReply> r;
  switch (f) {
    case ToolCallFormat::kHermes:
      r = parse_hermes(text);
      break;
    case ToolCallFormat::kLlama3:
      r = parse_llama3(text);
      break;
    case ToolCallFormat::kMistral:
      r = parse_mistral(text);
      break;
    case ToolCallFormat::kGeneric:
      r = parse_generic(text);
      break;
  }
  if (!r) return AssistantReply{text, {}};
  return *r;
}

size_t settled_content_length(ToolCallFormat f, const std::string& text) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return settled_before_marker(text, kHermesOpen);
    case ToolCallFormat::kMistral: {
      const size_t start = skip_space(text, 0);
      if (start == text.size() || text[start] == '[') return 0;
      return settled_before_marker(text, kMistralOpen);
    }
    case ToolCallFormat::kLlama3: {
      const size_t start = skip_space(text, 0);
      if (start == text.size() || text[start] == '{') return 0;  // the reply may be a bare JSON call
      return settled_before_marker(text, kPythonTag);
    }
    case ToolCallFormat::kGeneric:
      break;
  }
  const size_t start = skip_space(text, 0);
  if (start == text.size() || text[start] == '{' || text[start] == '`') return 0;
  return text.size();
}

}  // namespace server
