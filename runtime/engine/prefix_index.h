// Which tokens the sequences of a batch engine's arena hold, so that a new request starts from the
// longest prefix already computed (a shared system prompt, the earlier turns of a chat) instead of
// evaluating it again. Sequences are live (a running request's: its prompt, of which the first
// n_ready are evaluated, then its generated tokens as they are evaluated) or cached (a finished
// request's, kept for later requests and evicted least recently used first).
//
// The index is one token list per sequence, searched by comparing the prompt with each. A tree of
// token blocks (vLLM, SGLang) pays off over thousands of cached sequences in fixed-size pages; here the
// arena holds at most 32 sequences, cells are single tokens and KvSequences::fork shares any number of
// them, so a flat scan (a few microseconds per admission) finds the same longest match with nothing
// to rebalance and no block boundary inside which a match would be lost. Every list is reserved to
// the arena's size when the index is made: tracking tokens allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

namespace lmrt {

class PrefixIndex {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // n_slots: the sequence ids of the arena (KvSequences::max_sequences); n_cells: its cells.
  PrefixIndex(uint32_t n_slots, uint32_t n_cells);

  // Sequence `seq` is a running request's, holding (or about to hold) `tokens`, of which the first
  // n_ready are evaluated.
  void track(uint32_t seq, const std::vector<int32_t>& tokens, uint32_t n_ready);
  void set_ready(uint32_t seq, uint32_t n_ready);
  // A generated token of `seq` is evaluated in the next cell.
  void append(uint32_t seq, int32_t token);
  // The request of `seq` ended: its first n_ready tokens stay as a cached prefix (most recently used).
  void retain(uint32_t seq);
  // `seq` is freed (or about to be reused for something else).
  void forget(uint32_t seq);
  // Marks a cached sequence as just used.
  void touch(uint32_t seq);

  bool cached(uint32_t seq) const { return seq < entries_.size() && entries_[seq].state == State::cached; }
  uint32_t n_cached() const { return n_cached_; }
  // Evaluated tokens of `seq`.
  uint32_t n_ready(uint32_t seq) const { return entries_[seq].n_ready; }
  // The least recently used cached sequence other than `except`, or kNone.
  uint32_t least_recent(uint32_t except = kNone) const;

  struct Match {
    uint32_t seq = kNone;  // the sequence whose evaluated tokens match the prompt's first n
    uint32_t n = 0;
    // The longest match with any live sequence's tokens, evaluated or not yet: more than n when a
    // running prompt will soon hold a longer prefix of this one.
    uint32_t n_coming = 0;
  };
  // The longest prefix of prompt[0, n) held by a sequence. Ties go to a cached sequence matched
  // whole (it can be taken over without sharing), then to the lowest id.
  Match longest(const int32_t* prompt, uint32_t n) const;

 private:
  enum class State { unused, live, cached };
  struct Entry {
    State state = State::unused;
    std::vector<int32_t> tokens;  // reserved to n_cells
    uint32_t n_ready = 0;         // tokens[0, n_ready) are in the sequence's cells
    uint64_t last_used = 0;
  };
  std::vector<Entry> entries_;
  uint32_t n_cached_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace lmrt
