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
  held_.clear();
  held_.reserve(2 * max_len_ + 64);
  stopped_ = false;
}

bool StopMatcher::push(std::string_view text, std::string* out) {
  if (stopped_) return true;
  if (stops_.empty()) {
    out->append(text);
    return false;
  }
  held_.append(text);
  // The earliest match wins; at equal starts, the longest stop string.
  size_t best = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t at = held_.find(stops_[i]);
    if (at == std::string::npos) continue;
    if (best == std::string::npos || at < best || (at == best && stops_[i].size() > stops_[matched_].size())) {
      best = at;
      matched_ = i;
    }
  }
  if (best != std::string::npos) {
    out->append(held_, 0, best);
    held_.clear();
    stopped_ = true;
    return true;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  const size_t limit = std::min(held_.size(), max_len_ - 1);
  for (size_t len = limit; len > 0 && keep == 0; --len) {
    const std::string_view suffix = std::string_view(held_).substr(held_.size() - len);
    for (const std::string& s : stops_) {
      if (s.size() > len && s.compare(0, len, suffix) == 0) {
        keep = len;
        break;
      }
    }
  }
  out->append(held_, 0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return false;
}

void StopMatcher::flush(std::string* out) {
  if (!stopped_) out->append(held_);
  held_.clear();
}

}  // namespace lmrt
