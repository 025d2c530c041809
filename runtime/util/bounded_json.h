// Parsing JSON a caller hands the library (a JSON Schema, chat messages, tools) with a nesting limit.
// nlohmann's parser keeps its own stack, but dump(), copies and the conversions after it recurse once per
// level: a few hundred kB of brackets parsed fine and then overflowed the stack (a crash inside
// lmrt_json_schema_to_grammar). A tree deeper than the limit is never built. (The server, which uses only
// the public API, bounds its request bodies the same way in examples/server/bounded_json.h.)
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runtime/util/status.h"

namespace lmrt {

// Deeper than any schema the converter takes (64 schema levels, each at least two JSON levels) or any chat
// message; a few tens of kB of stack for nlohmann's recursion.
inline constexpr int kMaxJsonDepth = 256;

// Errors: invalid_argument "`what` is not valid JSON: ..." or "`what` nests JSON deeper than 256 levels".
template <typename Json>
Status parse_bounded_json(std::string_view text, const std::string& what, Json* out) {
  struct TooDeep {};  // thrown from the callback: returning false would go on through every level
  const typename Json::parser_callback_t limit = [](int depth, typename Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    *out = Json::parse(text.begin(), text.end(), limit);
  } catch (const TooDeep&) {
    *out = Json();
    return Error(Code::invalid_argument, what + " nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const nlohmann::json::exception& e) {
    return Error(Code::invalid_argument, what + " is not valid JSON: " + e.what());
  }
  return Status::Ok();
}

}  // namespace lmrt
