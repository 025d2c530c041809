// Parses request JSON with a nesting limit. nlohmann's dump(), copies and destructor recurse once per
// level, so a body of 60,000 nested brackets (120 kB, well under --max-body-bytes) overflowed the
// stack long after parsing had succeeded; a tree deeper than the limit is never built.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace server {

// 256 levels: a JSON Schema as deep as the grammar converter accepts (64 schema levels, each at least
// two JSON levels: "properties" and the name), inside the request's own wrappers, fits; the chat
// template engine allows 512. 256 frames of nlohmann's recursion take a few tens of kB of stack.
constexpr int kMaxJsonDepth = 256;

enum class JsonParse { kOk, kInvalid, kTooDeep };

// *out is the parsed value when kOk, unspecified otherwise. Never throws.
JsonParse parse_bounded_json(std::string_view text, nlohmann::json* out);
JsonParse parse_bounded_json(std::string_view text, nlohmann::ordered_json* out);

}  // namespace server
