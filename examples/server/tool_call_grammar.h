// The GBNF that forces a reply to be a call of one of the given tools in a format's own syntax
// (tool_choice "required" or a named function): each tool's parameter schema becomes its arguments
// grammar (lmrt_json_schema_to_grammar), wrapped in the format's markers.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tool_calls.h"

namespace server {

// `tools`: OpenAI's tools array (already validated: {"type":"function","function":{"name",
// "parameters"?}}). nullopt with a message naming the tool when a parameter schema cannot be
// turned into a grammar.
std::optional<std::string> tool_call_grammar(ToolCallFormat f, const nlohmann::json& tools, std::string* error);

// The GBNF of a JSON Schema's text (lmrt_json_schema_to_grammar); nullopt with the library's message
// (naming the keyword and its path) when the schema is not supported.
std::optional<std::string> json_schema_grammar(const std::string& schema, std::string* error);

// Every rule name of `gbnf` prefixed with `prefix` and `root` renamed to `root_name` (string
// literals, character classes, repetition counts and comments are left alone).
std::string rename_gbnf_rules(const std::string& gbnf, const std::string& prefix, const std::string& root_name);

}  // namespace server
