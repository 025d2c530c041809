// One sequence's side of decoding, apart from the forward pass: given each step's logits it picks the
// token (sampler chain or argmax), computes logprobs, assembles UTF-8, holds back text that may begin
// a stop string, streams pieces to the sink and decides when the sequence ends. generate() drives one
// over a Context; the batch engine drives one per sequence over a shared arena.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/generate/generator.h"
#include "runtime/generate/stop_matcher.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"
#include "runtime/util/utf8.h"

namespace lmrt {

class SequenceDecoder {
 public:
  using Clock = std::chrono::steady_clock;

  // Checks the request's limits. Errors: invalid_argument (max_tokens < 1, top_logprobs > 20).
  static Status validate(const GenerateRequest& req);

  // Starts a sequence of `req` whose prompt is `prompt` (the request, tokenizer, sink and result must
  // outlive the decoder's use): resets *result, accepts the prompt into the request's sampler and
  // reserves for up to min(max_tokens, n_ctx) tokens, so that step() allocates nothing. t_start is
  // when the request began (its time to first token counts from there).
  Status start(const Tokenizer& tok, const GenerateRequest& req, const std::vector<int32_t>& prompt, uint32_t n_ctx,
               TokenSink sink, GenerateResult* result, Clock::time_point t_start);

  // Picks the next token from the logits of the sequence's last token and streams what it completes.
  // *done: the sequence ended (eos, stop, cancelled or length; result()->finish_reason says which and
  // the result is final); otherwise *next is the token to feed to the model.
  Status step(const float* logits, int32_t* next, bool* done);

  // Ends the sequence for a reason of the caller's (context_full, or length/cancelled from outside):
  // releases the held text as step() does at its end, and completes usage and timings.
  void finish(FinishReason why);

  const GenerateResult& result() const { return *r_; }
  bool finished() const { return r_ != nullptr && r_->finish_reason != FinishReason::none; }

 private:
  bool release(size_t end, bool final_piece);
  Status judge(int32_t last_token, size_t* end, bool* stop);
  void complete();

  const Tokenizer* tok_ = nullptr;
  const GenerateRequest* req_ = nullptr;
  TokenSink sink_;
  GenerateResult* r_ = nullptr;
  int32_t n_vocab_ = 0;
  size_t max_tokens_ = 0;
  int32_t prev_ = 0;
  Clock::time_point t_start_{}, t_first_{};
  std::string piece_;
  std::string generated_;  // every complete character so far; r_->text is its released prefix
  Utf8Assembler utf8_;
  StopMatcher stops_;
  size_t first_unreported_ = 0;
};

}  // namespace lmrt
