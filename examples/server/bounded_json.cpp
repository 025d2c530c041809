#include "bounded_json.h"

namespace server {
namespace {

// Thrown from the parser callback to stop at the first level too deep: returning false would only
// discard the value while the parser went on through the rest, keeping a stack entry per level.
struct TooDeep {};

template <typename json>
JsonParse parse(std::string_view text, json* out) {
  // depth is the number of containers around the event; a container starting at depth d is level d + 1.
  const typename json::parser_callback_t limit = [](int depth, typename json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw TooDeep{};
    return true;
  };
  try {
    *out = json::parse(text, limit, /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    return JsonParse::kTooDeep;
  } catch (const std::exception&) {
    return JsonParse::kInvalid;
  }
  return out->is_discarded() ? JsonParse::kInvalid : JsonParse::kOk;
}

}  // namespace

JsonParse parse_bounded_json(std::string_view text, nlohmann::json* out) { return parse(text, out); }

JsonParse parse_bounded_json(std::string_view text, nlohmann::ordered_json* out) { return parse(text, out); }

}  // namespace server
