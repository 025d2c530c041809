#include "runtime/engine/sequence_pool.h"

#include <algorithm>

namespace lmrt {

SequencePool::SequencePool(KvSequences& seqs, const Options& options)
    : seqs_(seqs), opt_(options), index_(seqs.max_sequences(), seqs.n_cells()) {
  if (!opt_.reuse) opt_.retained = 0;
}

void SequencePool::evict(uint32_t seq) {
  index_.forget(seq);
  seqs_.free(seq);
}

SequencePool::Outcome SequencePool::acquire(const std::vector<int32_t>& prompt, uint32_t* seq, uint32_t* reused) {
  const uint32_t n = static_cast<uint32_t>(prompt.size());
  uint32_t source = PrefixIndex::kNone, shared = 0;
  bool take_over = false;
  if (opt_.reuse && n > 1) {
    // n - 1: the last prompt token is evaluated in any case, for the logits of the first new token.
    const PrefixIndex::Match m = index_.longest(prompt.data(), n - 1);
    const bool whole = index_.cached(m.seq) && m.n == index_.n_ready(m.seq);
    if (m.n > 0 && (m.n >= opt_.min_shared || whole)) {
      source = m.seq;
      shared = m.n;
      take_over = whole;
    }
    if (m.n_coming >= std::max(opt_.min_shared, shared + opt_.wait_gain)) return Outcome::wait;
  }
  if (take_over) {
    *seq = source;
  } else {
    if (seqs_.n_live() == seqs_.max_sequences()) {
      const uint32_t victim = index_.least_recent(source);
      if (victim == PrefixIndex::kNone) return Outcome::wait;
      evict(victim);
    }
    if (!(source != PrefixIndex::kNone ? seqs_.fork(source, shared, seq) : seqs_.create(seq)).ok())
      return Outcome::wait;
    if (index_.cached(source)) index_.touch(source);
  }
  // Cells for the rest, from cached sequences when the free ones are too few (the source too, once
  // forked: the fork holds the shared cells).
  const uint32_t need = n - shared;
  while (seqs_.n_free_cells() < need) {
    const uint32_t victim = index_.least_recent(take_over ? *seq : PrefixIndex::kNone);
    if (victim == PrefixIndex::kNone) break;
    evict(victim);
  }
  if (seqs_.n_free_cells() < need || !seqs_.grow(*seq, need).ok()) {
    if (!take_over) seqs_.free(*seq);
    return Outcome::wait;
  }
  index_.track(*seq, prompt, shared);
  *reused = shared;
  return Outcome::admitted;
}

void SequencePool::release(uint32_t seq) {
  const uint32_t n = index_.n_ready(seq);
  if (opt_.retained == 0 || n == 0) {
    evict(seq);
    return;
  }
  seqs_.truncate(seq, n);  // a prompt cut short by a cancel holds cells it never evaluated
  index_.retain(seq);
  while (index_.n_cached() > opt_.retained) evict(index_.least_recent());
}

bool SequencePool::make_room(uint32_t n) {
  while (seqs_.n_free_cells() < n) {
    const uint32_t victim = index_.least_recent();
    if (victim == PrefixIndex::kNone) return false;
    evict(victim);
  }
  return true;
}

void SequencePool::drop_cached() {
  for (uint32_t v = index_.least_recent(); v != PrefixIndex::kNone; v = index_.least_recent()) evict(v);
}

}  // namespace lmrt
