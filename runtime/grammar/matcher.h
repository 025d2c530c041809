// GrammarMatcher: runs a Grammar over UTF-8 bytes, one byte at a time, as a set of pushdown stacks
// (one per way the text so far can be parsed, as llama.cpp's grammar sampler does). A stack is a
// chain of nodes in an arena, each naming the element to match next and the node to return to, so
// stacks share their tails and advancing a byte adds only the nodes that change. Rules are
// expanded top-down (the parser refuses left recursion); a rule call in tail position returns
// straight to its caller's continuation, so `x*` and right recursion keep stacks flat.
//
// A character split across tokens is matched as far as its leading bytes allow and exactly once
// complete. The mask of allowed tokens comes from one walk of the TokenTrie that carries a state
// per trie depth and drops every subtree the grammar cannot enter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/util/status.h"

namespace lmrt {

inline constexpr size_t kMaxMatcherStacks = 4096;  // parses kept alive at once; more is refused
inline constexpr size_t kMaxCachedMasks = 64;      // masks remembered per matcher
inline constexpr size_t kMaxMaskKeyWords = 256;    // larger states are not cached

class GrammarMatcher {
 public:
  // Errors: invalid_argument when the root cannot be expanded within the limits.
  static Status create(std::shared_ptr<const Grammar> grammar, std::unique_ptr<GrammarMatcher>* out);

  // Advances by `bytes` when the grammar allows them (true); otherwise leaves the state as it was.
  bool advance(std::string_view bytes);
  // Whether advance(bytes) would succeed; the state is unchanged.
  bool allows(std::string_view bytes);
  // The text so far is a complete sentence of the grammar (end of generation may come now).
  bool accepting() const;
  // Some continuation exists (false once the grammar is complete and admits nothing more).
  bool can_continue() const;
  // allowed[id] = 1 for every token of the trie whose bytes the grammar allows next, else 0
  // (allowed is resized to the trie's vocabulary). End-of-generation tokens are the caller's.
  // The mask depends only on the state (every stack's elements and a pending partial character),
  // which recurs often (each character inside a string), so masks of small states are cached.
  // One trie per matcher: the cache assumes the same trie on every call.
  void fill_mask(const TokenTrie& trie, std::vector<uint8_t>* allowed);
  size_t mask_cache_hits() const { return cache_hits_; }
  // Back to the start of the grammar.
  void reset();

  const Grammar& grammar() const { return *grammar_; }

 private:
  struct Node {
    uint32_t pos;    // element to match (top) or to continue at (below the top)
    int32_t parent;  // node below, -1 at the bottom
  };
  struct State {
    std::vector<int32_t> stacks;  // top node of each stack; -1 is a finished parse
    uint32_t partial = 0;         // bits of a character whose UTF-8 sequence is not complete
    uint8_t need = 0;             // its continuation bytes still to come
    uint8_t length = 0;           // its sequence's length in bytes
  };

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {}
  void expand(uint32_t pos, int32_t parent, std::vector<int32_t>* out, int depth);
  bool step(const State& from, uint8_t byte, State* to);
  bool run(std::string_view bytes, State* scratch_a, State* scratch_b, State** result);
  bool state_key(std::string* key) const;
  void walk_trie(const TokenTrie& trie, std::vector<uint8_t>* allowed);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Node> arena_;
  State state_;
  State scratch_[2];
  std::vector<State> by_depth_;    // fill_mask: the state after each trie depth
  std::vector<size_t> arena_end_;  // fill_mask: arena size once by_depth_[d] was made
  std::unordered_map<std::string, std::vector<uint8_t>> mask_cache_;
  std::string key_;
  size_t cache_hits_ = 0;
  bool overflow_ = false;        // the last step went beyond the limits
  int32_t committed_nodes_ = 0;  // arena_ nodes the current state may use
};

}  // namespace lmrt
