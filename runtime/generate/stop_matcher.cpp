#include "runtime/generate/stop_matcher.h"

#include <algorithm>

namespace lmrt {

void StopMatcher::set_stops(const std::vector<std::string>& stops) {
  stops_.clear();
  max_len_ = 0;
  for (const std::string& s : stops) {
    if (s.empty()) continue;
    stops_.push_back(s);
    max_len_ = std::max(max_len_, s.size());
  }
}

StopMatcher::Scan StopMatcher::scan(std::string_view text, size_t from) const {
  Scan out;
  if (stops_.empty() || from >= text.size()) return out;
  const std::string_view tail = text.substr(from);
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = tail.find(stops_[i]);
    if (at == std::string_view::npos) continue;
    if (out.match == std::string_view::npos || from + at < out.match ||
        (from + at == out.match && stops_[i].size() > stops_[out.matched].size())) {
      out.match = from + at;
      out.matched = i;
    }
  }
  if (out.match != std::string_view::npos) return out;
  // The longest suffix that is a proper prefix of some stop string.
  for (size_t len = std::min(tail.size(), max_len_ - 1); len > 0; --len) {
    const std::string_view suffix = tail.substr(tail.size() - len);
    for (const std::string& s : stops_) {
      if (s.size() > len && s.compare(0, len, suffix) == 0) {
        out.hold = len;
        return out;
      }
    }
  }
  return out;
}

}  // namespace lmrt
