#include "runtime/generate/sequence_decoder.h"

#include <algorithm>

namespace lmrt {

namespace {

double ms_between(SequenceDecoder::Clock::time_point a, SequenceDecoder::Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int32_t argmax(const float* x, size_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

}  // namespace

Status SequenceDecoder::validate(const GenerateRequest& req) {
  if (req.max_tokens < 1) return Error(Code::invalid_argument, "max_tokens must be at least 1");
  if (req.top_logprobs > kMaxTopLogprobs)
    return Error(Code::invalid_argument, "top_logprobs must be at most " + std::to_string(kMaxTopLogprobs));
  return Status::Ok();
}

Status SequenceDecoder::start(const Tokenizer& tok, const GenerateRequest& req, const std::vector<int32_t>& prompt,
                              uint32_t n_ctx, TokenSink sink, GenerateResult* result, Clock::time_point t_start) {
  LMRT_RETURN_IF_ERROR(validate(req));
  if (prompt.empty()) return Error(Code::invalid_argument, "the prompt has no tokens");
  tok_ = &tok;
  req_ = &req;
  sink_ = sink;
  r_ = result;
  t_start_ = t_start;
  GenerateResult& r = *r_;
  r = GenerateResult{};
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  n_vocab_ = tok.n_vocab();
  if (req.sampler != nullptr) {
    LMRT_RETURN_IF_ERROR(req.sampler->reserve(n_vocab_));
    for (int32_t t : prompt) LMRT_RETURN_IF_ERROR(req.sampler->accept_prompt(t));
  }
  // Everything step() needs is reserved here (up to n_ctx tokens: more only with context shift,
  // which then grows the buffers; max_tokens alone may be 2^31 - 1, far beyond what should be
  // reserved).
  max_tokens_ = static_cast<size_t>(req.max_tokens);
  const size_t cap = std::min(max_tokens_, static_cast<size_t>(n_ctx));
  r.tokens.reserve(cap);
  r.piece_lengths.reserve(cap + 1);
  r.piece_tokens.reserve(cap + 1);
  if (req.top_logprobs >= 0) r.logprobs.reserve(cap);
  r.text.reserve(cap * 8);
  piece_.clear();
  piece_.reserve(64);
  generated_.clear();
  generated_.reserve(cap * 16 + 64);
  utf8_.clear();
  utf8_.reserve(16);
  stops_.set_stops(req.stop);
  for (StopCriterion* c : req.stop_criteria) c->reset();
  first_unreported_ = 0;
  prev_ = prompt.back();
  return Status::Ok();
}

// Releases generated_[r.text.size(), end) to the sink; false when the sink cancels.
bool SequenceDecoder::release(size_t end, bool final_piece) {
  GenerateResult& r = *r_;
  const size_t begin = r.text.size();
  if (end <= begin && !(final_piece && first_unreported_ < r.tokens.size())) return true;
  const std::string_view piece_text = std::string_view(generated_).substr(begin, end > begin ? end - begin : 0);
  r.text.append(piece_text);
  r.piece_lengths.push_back(static_cast<uint32_t>(piece_text.size()));
  r.piece_tokens.push_back(static_cast<uint32_t>(r.tokens.size() - first_unreported_));
  const size_t first = first_unreported_;
  first_unreported_ = r.tokens.size();
  return sink_.fn == nullptr || sink_.fn(sink_.user, piece_text, r, first, r.tokens.size() - first) == 0;
}

// Decides how much of generated_ may be released after the newest token: *end, and whether a stop
// string or a stop criterion ended the generation (then *end is where the text stops).
Status SequenceDecoder::judge(int32_t last_token, size_t* end, bool* stop) {
  const GenerateResult& r = *r_;
  *stop = false;
  *end = generated_.size();
  const StopMatcher::Scan sc = stops_.scan(generated_, r.text.size());
  if (sc.match != std::string::npos) {
    *stop = true;
    *end = sc.match;
  } else {
    *end = generated_.size() - sc.hold;
  }
  for (StopCriterion* c : req_->stop_criteria) {
    StopVerdict v;
    LMRT_RETURN_IF_ERROR(c->check(generated_, last_token, &v));
    if (v.bytes > generated_.size())
      return Error(Code::plugin, "stop criterion '" + std::string(c->name()) + "' answered " + std::to_string(v.bytes) +
                                     " bytes for a text of " + std::to_string(generated_.size()));
    if (v.action == StopVerdict::Action::stop && (!*stop || v.bytes < *end)) {
      *stop = true;
      *end = std::max(v.bytes, r.text.size());  // released text cannot be taken back
    } else if (v.action == StopVerdict::Action::hold && !*stop) {
      *end = std::min(*end, generated_.size() - v.bytes);
    }
  }
  // Never cut a character: move back to the start of the one the boundary falls in.
  while (*end > r.text.size() && (static_cast<uint8_t>(generated_[*end]) & 0xC0) == 0x80) --*end;
  *end = std::max(*end, r.text.size());
  return Status::Ok();
}

Status SequenceDecoder::step(const float* logits, int32_t* next_out, bool* done) {
  GenerateResult& r = *r_;
  *done = false;
  int32_t next = 0;
  if (req_->sampler != nullptr) {
    LMRT_RETURN_IF_ERROR(req_->sampler->sample(logits, n_vocab_, &next));
  } else {
    next = argmax(logits, static_cast<size_t>(n_vocab_));
  }
  if (r.tokens.empty()) {
    t_first_ = Clock::now();
    r.timings.ttft_ms = ms_between(t_start_, t_first_);
  }
  if (tok_->is_eog(next)) {
    finish(FinishReason::eos);
    *done = true;
    return Status::Ok();
  }
  r.tokens.push_back(next);
  if (req_->top_logprobs >= 0) {
    r.logprobs.emplace_back();
    LMRT_RETURN_IF_ERROR(compute_logprobs(logits, n_vocab_, next, req_->top_logprobs, &r.logprobs.back()));
  }
  if (req_->sampler != nullptr) LMRT_RETURN_IF_ERROR(req_->sampler->accept(next));

  piece_.clear();
  LMRT_RETURN_IF_ERROR(tok_->token_to_bytes(next, &piece_));
  utf8_.push(tok_->visible_piece(prev_, piece_), &generated_);
  prev_ = next;
  size_t end = 0;
  bool stopped = false;
  LMRT_RETURN_IF_ERROR(judge(next, &end, &stopped));
  if (!release(end, false)) {
    r.finish_reason = FinishReason::cancelled;
    complete();
    *done = true;
    return Status::Ok();
  }
  if (stopped) {
    r.finish_reason = FinishReason::stop;
    complete();
    *done = true;
    return Status::Ok();
  }
  if (r.tokens.size() >= max_tokens_) {
    finish(FinishReason::length);
    *done = true;
    return Status::Ok();
  }
  *next_out = next;
  return Status::Ok();
}

void SequenceDecoder::finish(FinishReason why) {
  GenerateResult& r = *r_;
  r.finish_reason = why;
  if (why != FinishReason::cancelled && why != FinishReason::stop) {
    // The end: an unfinished character becomes U+FFFD; held text is released unless a stop string
    // completes with it.
    utf8_.flush(&generated_);
    size_t end = generated_.size();
    const StopMatcher::Scan sc = stops_.scan(generated_, r.text.size());
    if (sc.match != std::string::npos) {
      r.finish_reason = FinishReason::stop;
      end = sc.match;
    }
    (void)release(end, true);
  }
  complete();
}

void SequenceDecoder::complete() {
  GenerateResult& r = *r_;
  r.completion_tokens = static_cast<uint32_t>(r.tokens.size());
  if (!r.tokens.empty()) {
    r.timings.decode_ms = ms_between(t_first_, Clock::now());
    if (r.tokens.size() > 1 && r.timings.decode_ms > 0)
      r.timings.decode_tokens_per_s = (r.tokens.size() - 1) * 1000.0 / r.timings.decode_ms;
  }
}

}  // namespace lmrt
