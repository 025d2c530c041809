// The batch engine's sequences: hands one to each admitted request, already holding the longest
// prefix of its prompt that the arena has (PrefixIndex), and keeps each finished request's sequence
// as a cached prefix until its cells or its id are needed.
//
// A prompt matched by a cached sequence over all of that sequence's tokens takes the sequence over
// (it stays one contiguous run and grows in place: the next turn of a chat). A prompt matched by a
// part of a sequence, live or cached, forks it: the matched cells are shared (KvSequences::fork) and
// the rest is evaluated in cells of its own. The last prompt token is always evaluated again, for its
// logits. A match shorter than min_shared tokens is not forked: a forked sequence's cells are no
// longer one run, attention then gathers them every step, and a few tokens of prefill are cheaper.
//
// Two requests with the same new prefix: while a running prompt will hold at least wait_gain more
// tokens of a queued prompt than the arena has now, the queued one waits (a step at a time) and then
// forks it, so a shared system prompt is evaluated once. A prompt always makes progress, so the wait
// ends.
//
// Cached sequences are evicted least recently used first whenever a request needs their cells or
// ids: a request never waits or fails because of them. Exactness: a cell's keys and values are a
// function of its token and the tokens before it (the arena keeps every position of every layer,
// windowed ones included, and the windowed layers' window is taken over the view), so a shared cell
// holds what the sequence would have computed itself.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/engine/prefix_index.h"
#include "runtime/kv/kv_sequences.h"

namespace lmrt {

class SequencePool {
 public:
  struct Options {
    bool reuse = true;         // false: every request starts from an empty sequence, none is kept
    uint32_t retained = 4;     // finished requests' sequences kept at most
    uint32_t min_shared = 16;  // shortest prefix worth forking
    uint32_t wait_gain = 1;    // tokens a running prompt must add to a queued one's match to be waited for
  };

  // `seqs` must offer the engine's live sequences plus options.retained ids.
  SequencePool(KvSequences& seqs, const Options& options);

  enum class Outcome { admitted, wait };
  // A sequence for `prompt` (at most n_cells tokens) with cells for all of it: its first
  // *reused cells already hold the prompt's first tokens. wait: no sequence id or not enough cells
  // are free (running requests hold them) or a running prompt is computing a longer prefix; nothing
  // changed but cached sequences that were evicted.
  Outcome acquire(const std::vector<int32_t>& prompt, uint32_t* seq, uint32_t* reused);
  // The first n prompt tokens of `seq` are evaluated.
  void prompt_ready(uint32_t seq, uint32_t n) { index_.set_ready(seq, n); }
  // A generated token of `seq` is evaluated in its newest cell.
  void token_ready(uint32_t seq, int32_t token) { index_.append(seq, token); }
  // The request of `seq` ended: its evaluated tokens become a cached prefix, or the sequence is freed.
  void release(uint32_t seq);
  // Evicts cached sequences until n cells are free; false when they do not free enough.
  bool make_room(uint32_t n);
  // Evicts every cached sequence.
  void drop_cached();

  uint32_t n_cached() const { return index_.n_cached(); }
  uint32_t n_running() const { return seqs_.n_live() - index_.n_cached(); }

 private:
  void evict(uint32_t seq);

  KvSequences& seqs_;
  Options opt_;
  PrefixIndex index_;
};

}  // namespace lmrt
