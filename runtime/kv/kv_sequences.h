// Many sequences in one fixed KV arena. Each cell (arena slot) belongs to the sequences that list it;
// a sequence is the list of its cells in position order, which is exactly the attention view the
// forward pass takes (GraphBatch::views). A cell is written once, when its token is evaluated, and
// never changed after, so a fork shares its parent's cells by reference (copy-on-write with nothing
// ever to copy): both go on appending cells of their own. Every table is sized when the arena is
// created; creating, forking, growing, truncating and freeing sequences allocate nothing.
//
// A sequence grows into the cell after its last one when that is free, and otherwise starts a new run
// in the largest free run of the arena (in its middle when a sequence ends right before it, leaving
// that one room to grow): sequences then stay contiguous runs for as long as the arena allows, and
// attention reads a run in place with the kernels of a single sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

class KvSequences {
 public:
  // n_cells: the arena's slots; max_sequences: sequences that may live at once.
  KvSequences(uint32_t n_cells, uint32_t max_sequences);

  uint32_t n_cells() const { return static_cast<uint32_t>(refs_.size()); }
  uint32_t max_sequences() const { return static_cast<uint32_t>(seqs_.size()); }
  uint32_t n_free_cells() const { return n_free_; }
  uint32_t n_live() const { return n_live_; }

  // A new empty sequence; *id is its index below max_sequences(). Error: context_full (all in use).
  Status create(uint32_t* id);
  // A new sequence holding the first n_shared cells of `parent` (all of them when n_shared is
  // larger), shared rather than copied. Errors: invalid_argument (no such parent), context_full.
  Status fork(uint32_t parent, uint32_t n_shared, uint32_t* child);
  // Appends n fresh cells to sequence id. Error: context_full (fewer than n free cells; nothing
  // changes).
  Status grow(uint32_t id, uint32_t n);
  // Keeps the first n_keep cells of sequence id and releases the rest.
  void truncate(uint32_t id, uint32_t n_keep);
  // Releases every cell of sequence id and the id itself. Unknown ids are ignored.
  void free(uint32_t id);

  bool live(uint32_t id) const { return id < seqs_.size() && seqs_[id].live; }
  // The cells of sequence id in position order (valid until it next changes).
  const uint32_t* cells(uint32_t id) const { return seqs_[id].cells.data(); }
  uint32_t length(uint32_t id) const { return static_cast<uint32_t>(seqs_[id].cells.size()); }
  // Whether the cells of sequence id are one run c, c + 1, ... (AttentionView::contiguous).
  bool contiguous(uint32_t id) const { return seqs_[id].contiguous; }
  // How many sequences list cell c.
  uint32_t refs(uint32_t c) const { return refs_[c]; }

 private:
  struct Sequence {
    bool live = false;
    bool contiguous = true;
    std::vector<uint32_t> cells;  // reserved to n_cells
  };
  // The cell a sequence ending in `last` (or none) takes next; a free one exists.
  uint32_t next_cell(const Sequence& s) const;
  void release(uint32_t cell);
  static bool is_run(const std::vector<uint32_t>& cells);

  std::vector<uint32_t> refs_;  // per cell: sequences listing it (0: free)
  uint32_t n_free_ = 0;
  std::vector<Sequence> seqs_;
  uint32_t n_live_ = 0;
};

}  // namespace lmrt
