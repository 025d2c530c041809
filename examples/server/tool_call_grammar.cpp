#include "tool_call_grammar.h"

#include <lmrt/lmrt.h>

namespace server {
namespace {

using json = nlohmann::json;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A GBNF string literal holding `text` exactly.
std::string literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out + "\"";
}

}  // namespace

std::optional<std::string> json_schema_grammar(const std::string& schema, std::string* error) {
  size_t len = 0;
  char err[512] = "";
  lmrt_status st = lmrt_json_schema_to_grammar(schema.c_str(), nullptr, 0, &len, err, sizeof err);
  if (st == LMRT_ERR_BUFFER_TOO_SMALL) {
    std::string out(len + 1, '\0');
    st = lmrt_json_schema_to_grammar(schema.c_str(), out.data(), out.size(), &len, err, sizeof err);
    if (st == LMRT_OK) {
      out.resize(len);
      return out;
    }
  }
  *error = err[0] != '\0' ? err : lmrt_status_str(st);
  return std::nullopt;
}

std::string rename_gbnf_rules(const std::string& gbnf, const std::string& prefix, const std::string& root_name) {
  std::string out;
  out.reserve(gbnf.size() * 2);
  size_t i = 0;
  auto copy_quoted = [&](char close) {  // from the opening character through `close`, escapes kept
    out += gbnf[i++];
    while (i < gbnf.size() && gbnf[i] != close) {
      if (gbnf[i] == '\\' && i + 1 < gbnf.size()) out += gbnf[i++];
      out += gbnf[i++];
    }
    if (i < gbnf.size()) out += gbnf[i++];
  };
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    if (c == '"') {
      copy_quoted('"');
    } else if (c == '[') {
      copy_quoted(']');
    } else if (c == '{') {
      copy_quoted('}');
    } else if (c == '#') {
      while (i < gbnf.size() && gbnf[i] != '\n') out += gbnf[i++];
    } else if (is_name_char(c)) {
      size_t end = i;
      while (end < gbnf.size() && is_name_char(gbnf[end])) ++end;
      const std::string name = gbnf.substr(i, end - i);
      out += name == "root" ? root_name : prefix + name;
      i = end;
    } else {
      out += gbnf[i++];
    }
  }
  return out;
}

std::optional<std::string> tool_call_grammar(ToolCallFormat f, const json& tools, std::string* error) {
  std::string rules, alternatives;
  for (size_t i = 0; i < tools.size(); ++i) {
    const json& fn = tools[i]["function"];
    const std::string name = fn["name"].get<std::string>();
    json params = json{{"type", "object"}};
    if (auto p = fn.find("parameters"); p != fn.end() && !p->is_null()) params = *p;
    std::string why;
    auto gbnf = json_schema_grammar(params.dump(), &why);
    if (!gbnf) {
      *error = "tools[" + std::to_string(i) + "] (" + name + ") parameters: " + why;
      return std::nullopt;
    }
    const std::string prefix = "t" + std::to_string(i) + "-";
    rules += rename_gbnf_rules(*gbnf, prefix, prefix + "args");
    if (!rules.empty() && rules.back() != '\n') rules += '\n';
    const std::string args = prefix + "args";
    std::string call;
    switch (f) {
      case ToolCallFormat::kHermes:
        call = literal("<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": ") + " " + args + " " +
               literal("}\n</tool_call>");
        break;
      case ToolCallFormat::kLlama3:
        call = literal("{\"name\": \"" + name + "\", \"parameters\": ") + " " + args + " " + literal("}");
        break;
      case ToolCallFormat::kMistral:
        call = literal("[TOOL_CALLS][{\"name\": \"" + name + "\", \"arguments\": ") + " " + args + " " + literal("}]");
        break;
      case ToolCallFormat::kGeneric:
        call = literal("{\"name\": \"" + name + "\", \"arguments\": ") + " " + args + " " + literal("}");
        break;
    }
    alternatives += (alternatives.empty() ? "" : " | ") + std::string("(") + call + ")";
  }
  return "root ::= " + alternatives + "\n" + rules;
}

}  // namespace server
