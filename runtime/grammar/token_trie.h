// TokenTrie: the vocabulary's token byte strings as a byte trie, built once per model and shared
// (immutable) by every grammar matcher. Nodes are stored in depth-first preorder, so a walk can
// drop a whole subtree by jumping to `skip` (the first node after it): the matcher computes the
// allowed tokens by walking the trie once, never re-reading each vocabulary entry.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"

namespace lmrt {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte = 0;    // the byte on the edge into this node (unused for the root)
    uint32_t depth = 0;  // root: 0
    uint32_t skip = 0;   // index of the first node after this node's subtree
    uint32_t first_token = 0;
    uint32_t n_tokens = 0;  // tokens_[first_token, +n_tokens) end exactly here
  };

  // pieces[id] is token id's bytes; tokens with an empty piece (control tokens) are left out.
  // end_ids are the end-of-generation tokens (allowed only where the grammar is complete).
  TokenTrie(const std::vector<std::string>& pieces, const std::vector<int32_t>& end_ids);

  const std::vector<Node>& nodes() const { return nodes_; }
  const int32_t* tokens_at(const Node& n) const { return tokens_.data() + n.first_token; }
  int32_t n_vocab() const { return n_vocab_; }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  uint32_t max_depth() const { return max_depth_; }
  bool is_end(int32_t id) const { return id >= 0 && id < n_vocab_ && is_end_[static_cast<size_t>(id)] != 0; }

 private:
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  std::vector<std::string> pieces_;
  std::vector<uint8_t> is_end_;
  int32_t n_vocab_ = 0;
  uint32_t max_depth_ = 0;
};

// The trie of a tokenizer's vocabulary: each token's piece as generate() emits it; control tokens
// have no bytes (they are never allowed by a grammar), end-of-generation tokens are marked.
Status make_token_trie(const Tokenizer& tok, std::shared_ptr<const TokenTrie>* out);

}  // namespace lmrt
