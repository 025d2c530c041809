// Stop strings over streamed text: text that could still become a stop string is held back and
// released as soon as it cannot; a matched stop string and everything after it are never released.
// Input is complete UTF-8 (from Utf8Assembler) and stop strings are valid UTF-8, so every release
// point falls on a character boundary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lmrt {

class StopMatcher {
 public:
  // Replaces the stop strings (empty ones are ignored) and reserves the hold-back buffer.
  void set_stops(const std::vector<std::string>& stops);
  // Appends `text` to the held text. Appends to *out what can be released. Returns true when a
  // stop string matched: *out then ends just before it, and nothing more will be released.
  bool push(std::string_view text, std::string* out);
  // Releases whatever is still held (generation ended for another reason).
  void flush(std::string* out);
  void reset() {
    held_.clear();
    stopped_ = false;
  }
  size_t held() const { return held_.size(); }
  bool stopped() const { return stopped_; }
  // The stop string that matched (valid when stopped()).
  const std::string& matched() const { return stops_[matched_]; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  size_t matched_ = 0;
  size_t max_len_ = 0;
  bool stopped_ = false;
};

}  // namespace lmrt
