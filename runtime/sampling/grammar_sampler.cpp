// grammar sampler: a GrammarMatcher over the shared token trie, see grammar_sampler.h.
#include "runtime/sampling/grammar_sampler.h"

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/grammar/gbnf_parser.h"
#include "runtime/grammar/json_schema.h"
#include "runtime/grammar/matcher.h"

namespace lmrt {
namespace {

// Below this many candidates each is checked alone; above, one trie walk masks the vocabulary.
constexpr size_t kPerCandidateLimit = 64;

class GrammarSampler final : public Sampler {
 public:
  GrammarSampler(std::unique_ptr<GrammarMatcher> matcher, std::shared_ptr<const TokenTrie> vocab, std::string key)
      : matcher_(std::move(matcher)), vocab_(std::move(vocab)), key_(std::move(key)) {}
  GrammarSampler(const GrammarSampler& o)
      : matcher_(std::make_unique<GrammarMatcher>(*o.matcher_)), vocab_(o.vocab_), key_(o.key_) {}

  std::string_view name() const override { return "grammar"; }
  std::string canonical_text() const override { return "grammar(key=" + key_ + ")"; }
  bool learns_prompt() const override { return false; }

  Status reserve(int32_t n_vocab) override {
    if (n_vocab > vocab_->n_vocab())
      return Error(Code::invalid_argument, "grammar: the model has " + std::to_string(n_vocab) +
                                               " tokens but the grammar's vocabulary " +
                                               std::to_string(vocab_->n_vocab()));
    allowed_.reserve(static_cast<size_t>(vocab_->n_vocab()));
    return Status::Ok();
  }

  Status apply(CandidateArray& c, Rng&) override {
    const bool can_end = matcher_->accepting();
    size_t kept = 0;
    if (c.size <= kPerCandidateLimit) {
      for (size_t i = 0; i < c.size; ++i) {
        const int32_t id = c.data[i].id;
        if (allowed_one(id, can_end)) c.data[kept++] = c.data[i];
      }
    } else {
      matcher_->fill_mask(*vocab_, &allowed_);
      for (size_t i = 0; i < c.size; ++i) {
        const int32_t id = c.data[i].id;
        const bool ok = id >= 0 && id < vocab_->n_vocab() &&
                        (vocab_->is_end(id) ? can_end : allowed_[static_cast<size_t>(id)] != 0);
        if (ok) c.data[kept++] = c.data[i];
      }
    }
    if (kept == 0) return Error(Code::invalid_argument, "grammar: no candidate token can continue the grammar here");
    c.size = kept;  // the kept candidates stay in their order, so `sorted` still holds
    return Status::Ok();
  }

  int keeps_token(int32_t token) override { return allowed_one(token, matcher_->accepting()) ? 1 : 0; }

  Status accept(int32_t token) override {
    if (vocab_->is_end(token)) return Status::Ok();
    if (token < 0 || token >= vocab_->n_vocab() || !matcher_->advance(vocab_->piece(token)))
      return Error(Code::invalid_argument,
                   "grammar: token " + std::to_string(token) + " does not continue the grammar");
    return Status::Ok();
  }

  void reset() override { matcher_->reset(); }

  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<GrammarSampler>(*this);
    return Status::Ok();
  }

 private:
  bool allowed_one(int32_t id, bool can_end) {
    if (id < 0 || id >= vocab_->n_vocab()) return false;
    if (vocab_->is_end(id)) return can_end;
    const std::string& piece = vocab_->piece(id);
    return !piece.empty() && matcher_->allows(piece);
  }

  std::unique_ptr<GrammarMatcher> matcher_;
  std::shared_ptr<const TokenTrie> vocab_;
  std::string key_;
  std::vector<uint8_t> allowed_;
};

// FNV-1a, 64 bits: a stable name for a grammar text in chain texts and cache keys.
std::string text_key(std::string_view kind, std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : kind) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  for (char ch : text) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(kind) + "-" + buf;
}

}  // namespace

Status make_grammar_sampler(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                            std::string_view key, std::unique_ptr<Sampler>* out) {
  if (vocab == nullptr) return Error(Code::invalid_argument, "grammar: no vocabulary");
  std::unique_ptr<GrammarMatcher> matcher;
  LMRT_RETURN_IF_ERROR(GrammarMatcher::create(std::move(grammar), &matcher));
  *out = std::make_unique<GrammarSampler>(std::move(matcher), std::move(vocab), std::string(key));
  return Status::Ok();
}

Status make_grammar_sampler_from_text(std::string_view text, bool is_json_schema,
                                      std::shared_ptr<const TokenTrie> vocab, std::unique_ptr<Sampler>* out) {
  auto grammar = std::make_shared<Grammar>();
  std::string gbnf;
  if (is_json_schema)
    LMRT_RETURN_IF_ERROR(json_schema_to_gbnf(text, &gbnf, grammar.get()));  // parsed there
  else
    LMRT_RETURN_IF_ERROR(parse_gbnf(text, grammar.get()));
  return make_grammar_sampler(std::move(grammar), std::move(vocab), text_key(is_json_schema ? "schema" : "gbnf", text),
                              out);
}

}  // namespace lmrt
