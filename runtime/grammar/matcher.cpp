// GrammarMatcher: the byte step, rule expansion and the trie walk.
#include "runtime/grammar/matcher.h"

#include <algorithm>

namespace lmrt {
namespace {

constexpr int kMaxExpandDepth = 4000;  // bounds recursion on long chains of rules

}  // namespace

Status GrammarMatcher::create(std::shared_ptr<const Grammar> grammar, std::unique_ptr<GrammarMatcher>* out) {
  if (grammar == nullptr || grammar->rules.empty())
    return Error(Code::invalid_argument, "grammar: the grammar is empty");
  std::unique_ptr<GrammarMatcher> m(new GrammarMatcher(std::move(grammar)));
  m->reset();
  if (m->overflow_ || m->state_.stacks.empty())
    return Error(Code::invalid_argument,
                 "grammar: the root rule expands beyond " + std::to_string(kMaxMatcherStacks) + " parses or too deep");
  *out = std::move(m);
  return Status::Ok();
}

void GrammarMatcher::reset() {
  arena_.clear();
  state_ = State{};
  overflow_ = false;
  // A pseudo element sequence [root-ref, end] does not exist in the grammar, so expand each root
  // alternative with no continuation instead.
  for (uint32_t alt : grammar_->rules[grammar_->root].alternatives) expand(alt, -1, &state_.stacks, 0);
  std::sort(state_.stacks.begin(), state_.stacks.end());
  state_.stacks.erase(std::unique(state_.stacks.begin(), state_.stacks.end()), state_.stacks.end());
  committed_nodes_ = static_cast<int32_t>(arena_.size());
}

void GrammarMatcher::expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, int depth) {
  if (depth > kMaxExpandDepth || out->size() > kMaxMatcherStacks) {
    overflow_ = true;
    return;
  }
  const GrammarElement& e = grammar_->elements[pos];
  switch (e.kind) {
    case GrammarElement::Kind::end:
      if (parent < 0) {
        out->push_back(-1);
      } else {
        const Node p = arena_[static_cast<size_t>(parent)];
        expand(p.pos, p.parent, out, depth + 1);
      }
      return;
    case GrammarElement::Kind::chars:
      arena_.push_back(Node{pos, parent});
      out->push_back(static_cast<int32_t>(arena_.size() - 1));
      return;
    case GrammarElement::Kind::rule: {
      // A call in tail position returns straight to the caller's continuation.
      int32_t cont = parent;
      if (grammar_->elements[pos + 1].kind != GrammarElement::Kind::end) {
        arena_.push_back(Node{pos + 1, parent});
        cont = static_cast<int32_t>(arena_.size() - 1);
      }
      for (uint32_t alt : grammar_->rules[e.rule].alternatives) expand(alt, cont, out, depth + 1);
      return;
    }
  }
}

bool GrammarMatcher::step(const State& from, uint8_t b, State* to) {
  to->stacks.clear();
  uint32_t cp = 0;
  uint8_t need = 0, length = 1;
  if (from.need == 0) {
    if (b < 0x80) {
      cp = b;
    } else if (b >= 0xC2 && b <= 0xDF) {
      cp = b & 0x1Fu;
      need = 1;
    } else if ((b & 0xF0) == 0xE0) {
      cp = b & 0x0Fu;
      need = 2;
    } else if (b >= 0xF0 && b <= 0xF4) {
      cp = b & 0x07u;
      need = 3;
    } else {
      return false;
    }
    length = static_cast<uint8_t>(need + 1);
  } else {
    if ((b & 0xC0) != 0x80) return false;
    cp = (from.partial << 6) | (b & 0x3Fu);
    need = static_cast<uint8_t>(from.need - 1);
    length = from.length;
  }
  to->partial = cp;
  to->need = need;
  to->length = length;
  // The code points this sequence can still become; overlong forms and surrogates are invalid.
  static constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  uint32_t lo = cp << (6 * need);
  uint32_t hi = lo | ((1u << (6 * need)) - 1);
  lo = std::max(lo, kMinOfLength[length]);
  hi = std::min(hi, 0x10FFFFu);
  if (lo > hi || (lo >= 0xD800 && hi <= 0xDFFF)) return false;
  if (need > 0) {
    // Keep the parses whose next character can still start with these bytes.
    for (int32_t s : from.stacks) {
      if (s >= 0 && grammar_->matches_any(grammar_->elements[arena_[static_cast<size_t>(s)].pos], lo, hi))
        to->stacks.push_back(s);
    }
    return !to->stacks.empty();
  }
  overflow_ = false;
  for (int32_t s : from.stacks) {
    if (s < 0) continue;
    const Node n = arena_[static_cast<size_t>(s)];
    if (grammar_->matches(grammar_->elements[n.pos], cp)) expand(n.pos + 1, n.parent, &to->stacks, 0);
  }
  if (overflow_) {
    to->stacks.clear();
    return false;
  }
  if (to->stacks.size() > 1) {
    // Parses that now wait for the same element with the same continuation are one parse.
    auto key = [&](int32_t s) {
      return s < 0 ? std::pair<int64_t, int64_t>{-1, -1}
                   : std::pair<int64_t, int64_t>{arena_[static_cast<size_t>(s)].pos,
                                                 arena_[static_cast<size_t>(s)].parent};
    };
    std::sort(to->stacks.begin(), to->stacks.end(), [&](int32_t a, int32_t c) { return key(a) < key(c); });
    to->stacks.erase(
        std::unique(to->stacks.begin(), to->stacks.end(), [&](int32_t a, int32_t c) { return key(a) == key(c); }),
        to->stacks.end());
  }
  return !to->stacks.empty();
}

bool GrammarMatcher::run(std::string_view bytes, State* a, State* b, State** result) {
  const State* from = &state_;
  State* to = a;
  for (char c : bytes) {
    if (!step(*from, static_cast<uint8_t>(c), to)) return false;
    from = to;
    to = (to == a) ? b : a;
  }
  *result = const_cast<State*>(from);
  return true;
}

bool GrammarMatcher::advance(std::string_view bytes) {
  State* result = nullptr;
  if (bytes.empty()) return false;
  if (!run(bytes, &scratch_[0], &scratch_[1], &result)) {
    arena_.resize(static_cast<size_t>(committed_nodes_));
    return false;
  }
  std::swap(state_, *result);
  committed_nodes_ = static_cast<int32_t>(arena_.size());
  return true;
}

bool GrammarMatcher::allows(std::string_view bytes) {
  State* result = nullptr;
  const bool ok = !bytes.empty() && run(bytes, &scratch_[0], &scratch_[1], &result);
  arena_.resize(static_cast<size_t>(committed_nodes_));
  return ok;
}

bool GrammarMatcher::accepting() const {
  if (state_.need != 0) return false;
  return std::find(state_.stacks.begin(), state_.stacks.end(), -1) != state_.stacks.end();
}

bool GrammarMatcher::can_continue() const {
  for (int32_t s : state_.stacks)
    if (s >= 0) return true;
  return false;
}

// The state as text: the partial character, then each stack's element positions top to bottom.
// False when it is too large to be worth caching.
bool GrammarMatcher::state_key(std::string* key) const {
  key->clear();
  auto put = [&](uint32_t v) { key->append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(state_.partial);
  put(static_cast<uint32_t>(state_.need) << 8 | state_.length);
  for (int32_t s : state_.stacks) {
    for (int32_t n = s; n >= 0; n = arena_[static_cast<size_t>(n)].parent) {
      put(arena_[static_cast<size_t>(n)].pos);
      if (key->size() > kMaxMaskKeyWords * sizeof(uint32_t)) return false;
    }
    put(0xFFFFFFFFu);
  }
  return true;
}

void GrammarMatcher::fill_mask(const TokenTrie& trie, std::vector<uint8_t>* allowed) {
  const bool cacheable = state_key(&key_);
  if (cacheable) {
    auto it = mask_cache_.find(key_);
    if (it != mask_cache_.end()) {
      ++cache_hits_;
      *allowed = it->second;
      return;
    }
  }
  walk_trie(trie, allowed);
  if (cacheable) {
    if (mask_cache_.size() >= kMaxCachedMasks) mask_cache_.clear();
    mask_cache_.emplace(key_, *allowed);
  }
}

void GrammarMatcher::walk_trie(const TokenTrie& trie, std::vector<uint8_t>* allowed) {
  allowed->assign(static_cast<size_t>(trie.n_vocab()), 0);
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  if (by_depth_.size() < trie.max_depth() + 1) by_depth_.resize(trie.max_depth() + 1);
  if (arena_end_.size() < by_depth_.size()) arena_end_.resize(by_depth_.size());
  by_depth_[0] = state_;
  arena_end_[0] = arena_.size();
  for (size_t i = 1; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    // Nodes made for earlier siblings' subtrees are no longer referenced.
    arena_.resize(arena_end_[n.depth - 1]);
    if (!step(by_depth_[n.depth - 1], n.byte, &by_depth_[n.depth])) {
      i = n.skip;
      continue;
    }
    arena_end_[n.depth] = arena_.size();
    const int32_t* ids = trie.tokens_at(n);
    for (uint32_t k = 0; k < n.n_tokens; ++k) (*allowed)[static_cast<size_t>(ids[k])] = 1;
    ++i;
  }
  arena_.resize(static_cast<size_t>(committed_nodes_));
}

}  // namespace lmrt
