// Stop strings over streamed text. The generator keeps all generated text and how much of it was
// released; scan() finds the earliest stop string in the unreleased part, or else how many trailing
// bytes could still begin one (they are held back and released as soon as they cannot). Text is
// complete UTF-8 and stop strings are valid UTF-8, so every boundary falls between characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lmrt {

class StopMatcher {
 public:
  struct Scan {
    size_t match = std::string_view::npos;  // offset of the earliest stop string in text
    size_t matched = 0;                     // index of that stop string
    size_t hold = 0;                        // otherwise: trailing bytes that may begin one
  };

  // Replaces the stop strings; empty ones are ignored.
  void set_stops(const std::vector<std::string>& stops);
  bool empty() const { return stops_.empty(); }
  const std::string& stop(size_t i) const { return stops_[i]; }

  // Scans text[from, end). No stop string can begin before `from` (text before it was released
  // only once it could not begin one). At equal starts the longest stop string wins.
  Scan scan(std::string_view text, size_t from) const;

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
};

}  // namespace lmrt
