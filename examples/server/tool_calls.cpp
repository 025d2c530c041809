#include "tool_calls.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "bounded_json.h"

namespace server {
namespace {

using json = nlohmann::ordered_json;

constexpr const char* kHermesOpen = "<tool_call>";
constexpr const char* kHermesClose = "</tool_call>";
constexpr const char* kPythonTag = "<|python_tag|>";
constexpr const char* kMistralOpen = "[TOOL_CALLS]";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s, size_t pos) {
  while (pos < s.size() && is_space(s[pos])) ++pos;
  return pos;
}

// The end (one past) of the JSON object or array starting at `pos`, by bracket balance outside
// strings; npos when it does not close.
size_t json_end(std::string_view s, size_t pos) {
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
  // The model's text is as hostile as a request: a deep tree would overflow the stack when dumped.
  json j;
  if (parse_bounded_json(std::string_view(s).substr(pos, *end - pos), &j) != JsonParse::kOk) return std::nullopt;
  return j;
}

// One past the closing quote of the JSON string opening at `pos`; npos when it does not close.
size_t string_end(std::string_view s, size_t pos) {
  for (size_t i = pos + 1; i < s.size(); ++i) {
    if (s[i] == '\\')
      ++i;
    else if (s[i] == '"')
      return i + 1;
  }
  return std::string::npos;
}

// The end of the JSON value at `pos` of text known to be valid JSON.
size_t value_end(std::string_view s, size_t pos) {
  if (s[pos] == '{' || s[pos] == '[') return json_end(s, pos);
  if (s[pos] == '"') return string_end(s, pos);
  size_t i = pos;
  while (i < s.size() && std::strchr(",]} \t\n\r", s[i]) == nullptr) ++i;
  return i;
}

// The raw text of each member value (object) or element (array) of valid JSON text, in order,
// with the member names (empty for array elements).
std::vector<std::pair<std::string, std::string_view>> raw_items(std::string_view v) {
  std::vector<std::pair<std::string, std::string_view>> out;
  const bool object = !v.empty() && v[0] == '{';
  size_t p = 1;
  while (true) {
    p = skip_space(v, p);
    if (p >= v.size() || v[p] == '}' || v[p] == ']') break;
    std::string key;
    if (object) {
      const size_t k_end = string_end(v, p);
      if (k_end == std::string::npos) break;
      const json k = json::parse(v.begin() + static_cast<std::ptrdiff_t>(p),
                                 v.begin() + static_cast<std::ptrdiff_t>(k_end), nullptr, false);
      if (k.is_string()) key = k.get<std::string>();
      p = skip_space(v, k_end);
      p = skip_space(v, p + 1);  // past the ':'
    }
    if (p >= v.size()) break;
    const size_t e = value_end(v, p);
    if (e == std::string::npos) break;
    out.emplace_back(std::move(key), v.substr(p, e - p));
    p = skip_space(v, e);
    if (p < v.size() && v[p] == ',') ++p;
  }
  return out;
}

// The raw text of member `key` (the last one, as the parsed object keeps); empty when absent.
std::string_view raw_member(std::string_view object, const std::string& key) {
  std::string_view found;
  for (const auto& [k, v] : raw_items(object))
    if (k == key) found = v;
  return found;
}

// {"name": "f", "arguments"|"parameters": {...} or "{...}"} as a call; nullopt otherwise. `raw` is
// the model's text of `j`: arguments written as an object are kept as written (minified), so a
// streamed call (ToolCallStream) and the complete one agree byte for byte.
std::optional<ToolCall> call_from(const json& j, std::string_view raw) {
  if (!j.is_object()) return std::nullopt;
  const json* body = &j;
  if (auto f = j.find("function"); f != j.end() && f->is_object()) {  // OpenAI's own shape
    body = &*f;
    raw = raw_member(raw, "function");
  }
  auto name = body->find("name");
  if (name == body->end() || !name->is_string() || name->get<std::string>().empty()) return std::nullopt;
  std::string key = "arguments";
  auto args = body->find(key);
  if (args == body->end()) args = body->find(key = "parameters");
  ToolCall call{name->get<std::string>(), "{}"};
  if (args != body->end()) {
    if (args->is_string()) {  // some models write the arguments as a JSON string already
      json inner;
      if (parse_bounded_json(args->get_ref<const std::string&>(), &inner) != JsonParse::kOk || !inner.is_object())
        return std::nullopt;
      call.arguments = inner.dump();
    } else if (args->is_object()) {
      call.arguments = minify_json(raw_member(raw, key));
    } else {
      return std::nullopt;
    }
  }
  return call;
}

// One call or an array of calls; nullopt unless every element is a call. `raw`: j's text.
std::optional<std::vector<ToolCall>> calls_from(const json& j, std::string_view raw) {
  std::vector<ToolCall> out;
  if (j.is_array()) {
    if (j.empty()) return std::nullopt;
    const auto items = raw_items(raw);
    if (items.size() != j.size()) return std::nullopt;
    for (size_t i = 0; i < j.size(); ++i) {
      auto c = call_from(j[i], items[i].second);
      if (!c) return std::nullopt;
      out.push_back(*c);
    }
    return out;
  }
  if (auto c = call_from(j, raw)) return std::vector<ToolCall>{*c};
  return std::nullopt;
}

std::string_view raw_at(const std::string& text, size_t pos, size_t end) {
  return std::string_view(text).substr(pos, end - pos);
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
    auto calls = calls_from(*j, raw_at(text, pos, end));
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
    auto calls = calls_from(*j, raw_at(text, pos, end));
    if (!calls) {
      // The generic shapes: {"tool_calls": [...]} and {"tool_call": {...}}.
      for (const char* key : {"tool_calls", "tool_call"})
        if (j->is_object() && j->contains(key)) calls = calls_from((*j)[key], raw_member(raw_at(text, pos, end), key));
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
  auto calls = calls_from(*j, raw_at(text, pos, end));
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

enum class Scan { kMore, kYes, kNo };  // the text may still become it / is it / cannot be it

// s[*p..] against the literal `lit`: kYes moves *p past it; kMore when s ends inside it.
Scan expect(const std::string& s, size_t* p, std::string_view lit) {
  const size_t n = std::min(lit.size(), s.size() - *p);
  if (std::string_view(s).substr(*p, n) != lit.substr(0, n)) return Scan::kNo;
  if (n < lit.size()) return Scan::kMore;
  *p += lit.size();
  return Scan::kYes;
}

// A call's head at p, in the shape the models write and the tool-call grammar forces:
// {"name": "NAME", "arguments"|"parameters": {  -- *name, and *args at the arguments' '{'.
Scan call_head(const std::string& s, size_t p, std::string* name, size_t* args) {
  auto literal = [&](std::string_view lit) {
    p = skip_space(s, p);
    return p >= s.size() ? Scan::kMore : expect(s, &p, lit);
  };
  Scan r = Scan::kYes;
  if ((r = literal("{")) != Scan::kYes || (r = literal("\"name\"")) != Scan::kYes || (r = literal(":")) != Scan::kYes)
    return r;
  p = skip_space(s, p);
  if (p >= s.size()) return Scan::kMore;
  if (s[p] != '"') return Scan::kNo;
  const size_t name_end = string_end(s, p);
  if (name_end == std::string::npos) return Scan::kMore;
  const json n = json::parse(s.begin() + static_cast<std::ptrdiff_t>(p),
                             s.begin() + static_cast<std::ptrdiff_t>(name_end), nullptr, false);
  if (!n.is_string() || n.get<std::string>().empty()) return Scan::kNo;
  p = name_end;
  if ((r = literal(",")) != Scan::kYes) return r;
  p = skip_space(s, p);
  if (p >= s.size()) return Scan::kMore;
  size_t pa = p, pp = p;
  const Scan a = expect(s, &pa, "\"arguments\""), b = expect(s, &pp, "\"parameters\"");
  if (a != Scan::kYes && b != Scan::kYes) return a == Scan::kMore || b == Scan::kMore ? Scan::kMore : Scan::kNo;
  p = a == Scan::kYes ? pa : pp;
  if ((r = literal(":")) != Scan::kYes) return r;
  p = skip_space(s, p);
  if (p >= s.size()) return Scan::kMore;
  if (s[p] != '{') return Scan::kNo;  // arguments as a string are read whole at the end
  *name = n.get<std::string>();
  *args = p;
  return Scan::kYes;
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

AssistantReply parse_assistant_reply(ToolCallFormat f, const std::string& text, bool parallel) {
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
  if (!parallel && r->tool_calls.size() > 1) r->tool_calls.resize(1);
  return *r;
}

std::string minify_json(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  bool in_string = false, escaped = false;
  for (char c : t) {
    if (in_string) {
      out += c;
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (!is_space(c)) {
      out += c;
    }
  }
  return out;
}

void ToolCallStream::push(std::string_view piece, std::vector<Delta>* out) {
  text_.append(piece);
  if (sent_.empty()) {  // content ends where the first call begins
    const size_t settled = settled_content_length(format_, text_);
    if (settled > content_sent_) {
      out->push_back(Delta{-1, "", text_.substr(content_sent_, settled - content_sent_)});
      content_sent_ = settled;
    }
  }
  if (!lost_) follow(out);
}

// Reads the calls from where content ends, in the format's framing, and sends what is new. The
// whole reply is read again on each piece (replies are short; the state stays trivially right).
void ToolCallStream::follow(std::vector<Delta>* out) {
  const std::string& s = text_;
  size_t p = settled_content_length(format_, s);
  auto stop = [&](Scan r) { lost_ = r == Scan::kNo; };
  auto at_end = [&] {
    p = skip_space(s, p);
    return p >= s.size();
  };
  Scan r = Scan::kYes;
  if (format_ == ToolCallFormat::kLlama3 || format_ == ToolCallFormat::kMistral) {
    size_t q = p;
    r = expect(s, &q, format_ == ToolCallFormat::kLlama3 ? kPythonTag : kMistralOpen);
    if (r == Scan::kMore) return;
    if (r == Scan::kYes) p = q;
    if (format_ == ToolCallFormat::kMistral) {
      if (at_end()) return;
      if ((r = expect(s, &p, "[")) != Scan::kYes) return stop(r);
    }
  }
  for (size_t k = 0; parallel_ || k < 1; ++k) {
    if (format_ == ToolCallFormat::kHermes) {
      if (at_end()) return;
      if ((r = expect(s, &p, kHermesOpen)) != Scan::kYes) return stop(r);
    }
    std::string name;
    size_t args = 0;
    if (at_end()) return;
    const size_t call_start = p;
    if ((r = call_head(s, p, &name, &args)) != Scan::kYes) return stop(r);
    if (k == sent_.size()) {
      out->push_back(Delta{static_cast<int>(k), name, ""});
      sent_.push_back(Sent{name, ""});
    } else if (sent_[k].name != name) {
      return stop(Scan::kNo);
    }
    const size_t end = json_end(s, args);
    send_arguments(
        k, minify_json(std::string_view(s).substr(args, end == std::string::npos ? s.size() - args : end - args)), out);
    if (end == std::string::npos) return;
    p = json_end(s, call_start);  // members after the arguments (an id) are the final parse's
    if (p == std::string::npos) return;
    // What separates this call from the next one.
    if (at_end()) return;
    if (format_ == ToolCallFormat::kHermes) {
      if ((r = expect(s, &p, kHermesClose)) != Scan::kYes) return stop(r);
    } else if (format_ == ToolCallFormat::kMistral) {
      if (s[p] == ']') return;
      if ((r = expect(s, &p, ",")) != Scan::kYes) return stop(r);
    } else if (s[p] == ';') {
      ++p;
    }
  }
}

void ToolCallStream::send_arguments(size_t k, const std::string& arguments, std::vector<Delta>* out) {
  std::string& sent = sent_[k].arguments;
  // What was sent cannot be taken back: only a continuation of it is sent.
  if (arguments.size() <= sent.size() || arguments.compare(0, sent.size(), sent) != 0) return;
  out->push_back(Delta{static_cast<int>(k), "", arguments.substr(sent.size())});
  sent = arguments;
}

void ToolCallStream::finish(std::vector<Delta>* out) {
  const AssistantReply r = parse_assistant_reply(format_, text_, parallel_);
  // Content not sent yet: the text before the calls, or the whole reply when it holds none (unless
  // a call was streamed already: its text is that call's, cut short).
  if ((sent_.empty() || !r.tool_calls.empty()) && r.content.size() > content_sent_) {
    out->push_back(Delta{-1, "", r.content.substr(content_sent_)});
    content_sent_ = r.content.size();
  }
  for (size_t k = 0; k < r.tool_calls.size(); ++k) {
    const ToolCall& c = r.tool_calls[k];
    if (k == sent_.size()) {
      out->push_back(Delta{static_cast<int>(k), c.name, ""});
      sent_.push_back(Sent{c.name, ""});
    }
    if (sent_[k].name == c.name) send_arguments(k, c.arguments, out);
  }
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
