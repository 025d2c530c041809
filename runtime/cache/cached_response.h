// What the response cache stores for one completion, and its compact binary form. The form is
// versioned and checksummed: a damaged or foreign blob is refused with a Status, never trusted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

struct CachedTokenAlternative {
  int32_t token = 0;
  float logprob = 0;
};

struct CachedTokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<CachedTokenAlternative> top;  // the top-n alternatives, most likely first
};

struct CachedResponse {
  std::string text;  // the completion text exactly as delivered (stop strings already removed)
  std::vector<int32_t> tokens;
  std::string finish_reason;  // "eos", "stop", "length"
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  std::vector<CachedTokenLogprob> logprobs;  // empty when logprobs were not asked for
  // Byte lengths of the text pieces as the streaming callback received them, so a hit replays the
  // same chunks; they sum to text.size(). Empty: replay the text as one piece.
  std::vector<uint32_t> piece_lengths;
  // Tokens generated since the previous piece, for each piece (same count as piece_lengths), so a
  // replay hands the callback the same token ids with each piece. Empty: all with the first.
  std::vector<uint32_t> piece_tokens;

  bool operator==(const CachedResponse&) const;
};

bool operator==(const CachedTokenAlternative& a, const CachedTokenAlternative& b);
bool operator==(const CachedTokenLogprob& a, const CachedTokenLogprob& b);

// Errors: invalid_argument when a field is too large for the format (over 4 GiB) or piece_lengths
// do not sum to text.size().
Status serialize_cached_response(const CachedResponse& response, std::string* out);
// Errors: bad_format (truncated, checksum mismatch, counts that overrun, trailing bytes),
// unsupported (a newer format version).
Status deserialize_cached_response(const uint8_t* data, size_t size, CachedResponse* out);

}  // namespace lmrt
