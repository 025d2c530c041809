// Beam search of width k: every step extends each live beam by its most likely tokens, keeps the
// k most likely continuations (cumulative log-probability) and retires beams that end in EOS.
// Beams share the prompt's KV slots and each other's common history: a beam's KV is a list of
// arena slots, and a continuation inherits its parent's list instead of copying the keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/generate/context.h"
#include "runtime/generate/generator.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"

namespace lmrt {

struct BeamSearchRequest {
  GenerateRequest base;  // prompt, max_tokens, add_bos, parse_special (sampling fields unused)
  uint32_t n_beams = 4;
  float length_penalty = 1.0f;  // score = logprob / n_tokens^length_penalty
};

struct Beam {
  std::vector<int32_t> tokens;
  std::string text;
  double logprob = 0;  // sum of the tokens' log-probabilities (EOS's included when it ended the beam)
  double score = 0;
  FinishReason finish_reason = FinishReason::none;
};

// Runs a beam search on ctx; *beams receives up to n_beams finished beams, best score first, and
// *summary the prompt usage and timings (its text and tokens are those of the best beam).
// Afterwards the context holds the prompt. Errors: invalid_argument (n_beams outside
// 1..LlamaGraph::kMaxLogitRows, max_tokens < 1), bad_utf8, context_full (prompt).
Status beam_search(Context& ctx, const Tokenizer& tok, const BeamSearchRequest& req, std::vector<Beam>* beams,
                   GenerateResult* summary);

// The score of a sequence of n tokens with cumulative log-probability logprob.
double beam_score(double logprob, size_t n_tokens, float length_penalty);

}  // namespace lmrt
