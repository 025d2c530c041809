// Template values from JSON (messages, tools, extra variables) and Python's json.dumps, which is
// transformers' tojson filter: ensure_ascii, indent, separators and sort_keys as Python has them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/chat/jinja_value.h"

namespace lmrt::jinja {

// Objects keep their key order, as Python's json.loads does. Throws JinjaError past kMaxValueDepth.
Value from_json(const nlohmann::ordered_json& j);
Value from_json(const nlohmann::ordered_json& j, uint32_t level);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;  // indent=None when false
  std::string indent;       // the indent string (an int n is n spaces)
  bool has_separators = false;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Throws JinjaError for values JSON cannot hold (Undefined, callables).
std::string dump_json(const Value& v, const JsonDumpOptions& options);

}  // namespace lmrt::jinja
