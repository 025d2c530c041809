// The request loop: tokenize -> reuse the KV prefix -> prefill -> decode (greedy for now) ->
// assemble UTF-8 -> stream -> finish with a reason, usage and timings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/generate/context.h"
#include "runtime/tokenizer/spm_tokenizer.h"
#include "runtime/util/status.h"
#include "runtime/util/utf8.h"

namespace lmrt {

enum class FinishReason { none = 0, eos = 1, stop = 2, length = 3, cancelled = 4, context_full = 5, error = 6 };

const char* finish_reason_name(FinishReason r);

struct GenerateRequest {
  std::string_view prompt;
  int32_t max_tokens = 256;
  bool add_bos = true;
  bool parse_special = false;
};

struct GenerateTimings {
  double prefill_ms = 0;
  double decode_ms = 0;
  double ttft_ms = 0;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

struct GenerateResult {
  FinishReason finish_reason = FinishReason::none;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t reused_tokens = 0;
  std::string text;
  std::vector<int32_t> tokens;
  GenerateTimings timings;
};

// Receives each piece of complete UTF-8 text; returns non-zero to cancel.
struct TokenSink {
  int (*fn)(void* user, std::string_view text, int32_t token, uint32_t index) = nullptr;
  void* user = nullptr;
};

// Runs one request on `ctx`. Errors: invalid_argument (max_tokens < 1), bad_utf8 (prompt),
// context_full (the prompt alone does not fit; the context keeps its previous tokens).
Status generate(Context& ctx, const SpmTokenizer& tok, const GenerateRequest& req, TokenSink sink,
                GenerateResult* result);

}  // namespace lmrt
