#include "runtime/engine/prefix_index.h"

#include <algorithm>

namespace lmrt {

PrefixIndex::PrefixIndex(uint32_t n_slots, uint32_t n_cells) : entries_(n_slots) {
  for (Entry& e : entries_) e.tokens.reserve(n_cells);
}

void PrefixIndex::track(uint32_t seq, const std::vector<int32_t>& tokens, uint32_t n_ready) {
  forget(seq);
  Entry& e = entries_[seq];
  e.state = State::live;
  e.tokens.assign(tokens.begin(), tokens.end());
  e.n_ready = std::min(n_ready, static_cast<uint32_t>(tokens.size()));
}

void PrefixIndex::set_ready(uint32_t seq, uint32_t n_ready) {
  Entry& e = entries_[seq];
  e.n_ready = std::min(n_ready, static_cast<uint32_t>(e.tokens.size()));
}

void PrefixIndex::append(uint32_t seq, int32_t token) {
  Entry& e = entries_[seq];
  e.tokens.resize(e.n_ready);  // tokens beyond the evaluated ones were a prompt's, all evaluated by now
  e.tokens.push_back(token);
  e.n_ready = static_cast<uint32_t>(e.tokens.size());
}

void PrefixIndex::retain(uint32_t seq) {
  Entry& e = entries_[seq];
  if (e.state != State::cached) ++n_cached_;
  e.state = State::cached;
  e.tokens.resize(e.n_ready);
  e.last_used = ++clock_;
}

void PrefixIndex::forget(uint32_t seq) {
  Entry& e = entries_[seq];
  if (e.state == State::cached) --n_cached_;
  e.state = State::unused;
  e.tokens.clear();
  e.n_ready = 0;
}

void PrefixIndex::touch(uint32_t seq) { entries_[seq].last_used = ++clock_; }

uint32_t PrefixIndex::least_recent(uint32_t except) const {
  uint32_t best = kNone;
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    if (i == except || entries_[i].state != State::cached) continue;
    if (best == kNone || entries_[i].last_used < entries_[best].last_used) best = i;
  }
  return best;
}

PrefixIndex::Match PrefixIndex::longest(const int32_t* prompt, uint32_t n) const {
  Match m;
  bool whole = false;  // m.seq is a cached sequence matched over all its tokens
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.state == State::unused) continue;
    const uint32_t len = std::min(n, static_cast<uint32_t>(e.tokens.size()));
    uint32_t common = 0;
    while (common < len && e.tokens[common] == prompt[common]) ++common;
    if (e.state == State::live) m.n_coming = std::max(m.n_coming, common);
    const uint32_t ready = std::min(common, e.n_ready);
    const bool is_whole = e.state == State::cached && ready == e.n_ready;
    if (ready > m.n || (ready == m.n && ready > 0 && is_whole && !whole)) {
      m.seq = i;
      m.n = ready;
      whole = is_whole;
    }
  }
  return m;
}

}  // namespace lmrt
