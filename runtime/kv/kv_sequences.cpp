#include "runtime/kv/kv_sequences.h"

#include <algorithm>
#include <string>

namespace lmrt {

KvSequences::KvSequences(uint32_t n_cells, uint32_t max_sequences)
    : refs_(n_cells, 0), n_free_(n_cells), seqs_(max_sequences) {
  for (Sequence& s : seqs_) s.cells.reserve(n_cells);
}

bool KvSequences::is_run(const std::vector<uint32_t>& cells) {
  for (size_t i = 1; i < cells.size(); ++i)
    if (cells[i] != cells[0] + i) return false;
  return true;
}

Status KvSequences::create(uint32_t* id) {
  for (uint32_t i = 0; i < seqs_.size(); ++i) {
    if (seqs_[i].live) continue;
    seqs_[i].live = true;
    seqs_[i].contiguous = true;
    seqs_[i].cells.clear();
    ++n_live_;
    *id = i;
    return Status::Ok();
  }
  return Error(Code::context_full, "all " + std::to_string(seqs_.size()) + " sequences of the arena are in use");
}

Status KvSequences::fork(uint32_t parent, uint32_t n_shared, uint32_t* child) {
  if (!live(parent)) return Error(Code::invalid_argument, "no sequence " + std::to_string(parent) + " to fork");
  uint32_t id = 0;
  LMRT_RETURN_IF_ERROR(create(&id));
  const std::vector<uint32_t>& from = seqs_[parent].cells;
  const size_t n = std::min<size_t>(n_shared, from.size());
  for (size_t i = 0; i < n; ++i) {
    seqs_[id].cells.push_back(from[i]);
    ++refs_[from[i]];
  }
  seqs_[id].contiguous = is_run(seqs_[id].cells);
  *child = id;
  return Status::Ok();
}

uint32_t KvSequences::next_cell(const Sequence& s) const {
  const uint32_t n = n_cells();
  if (!s.cells.empty() && s.cells.back() + 1 < n && refs_[s.cells.back() + 1] == 0) return s.cells.back() + 1;
  // The largest free run [best, best + best_len).
  uint32_t best = 0, best_len = 0;
  for (uint32_t c = 0; c < n;) {
    if (refs_[c] != 0) {
      ++c;
      continue;
    }
    uint32_t e = c;
    while (e < n && refs_[e] == 0) ++e;
    if (e - c > best_len) best = c, best_len = e - c;
    c = e;
  }
  // A used cell right before the run may be a sequence's last: leave it half the run to grow into.
  return best > 0 ? best + best_len / 2 : best;
}

Status KvSequences::grow(uint32_t id, uint32_t n) {
  if (!live(id)) return Error(Code::invalid_argument, "no sequence " + std::to_string(id));
  if (n > n_free_)
    return Error(Code::context_full, std::to_string(n) + " more KV cells do not fit: " + std::to_string(n_free_) +
                                         " of " + std::to_string(refs_.size()) + " are free");
  Sequence& s = seqs_[id];
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t c = next_cell(s);
    if (!s.cells.empty() && c != s.cells.back() + 1) s.contiguous = false;
    refs_[c] = 1;
    --n_free_;
    s.cells.push_back(c);
  }
  return Status::Ok();
}

void KvSequences::release(uint32_t cell) {
  if (--refs_[cell] == 0) ++n_free_;
}

void KvSequences::truncate(uint32_t id, uint32_t n_keep) {
  if (!live(id)) return;
  Sequence& s = seqs_[id];
  while (s.cells.size() > n_keep) {
    release(s.cells.back());
    s.cells.pop_back();
  }
  if (!s.contiguous) s.contiguous = is_run(s.cells);
}

void KvSequences::free(uint32_t id) {
  if (!live(id)) return;
  truncate(id, 0);
  seqs_[id].live = false;
  --n_live_;
}

}  // namespace lmrt
