// TokenTrie: sort the pieces, then emit the preorder trie from the sorted list in one pass (each
// piece's shared prefix with the previous one says where its new nodes hang).
#include "runtime/grammar/token_trie.h"

#include <algorithm>
#include <numeric>

namespace lmrt {

TokenTrie::TokenTrie(const std::vector<std::string>& pieces, const std::vector<int32_t>& end_ids)
    : pieces_(pieces), is_end_(pieces.size(), 0), n_vocab_(static_cast<int32_t>(pieces.size())) {
  for (int32_t id : end_ids)
    if (id >= 0 && id < n_vocab_) is_end_[static_cast<size_t>(id)] = 1;
  std::vector<int32_t> order(pieces.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return pieces[static_cast<size_t>(a)] < pieces[static_cast<size_t>(b)] ||
           (pieces[static_cast<size_t>(a)] == pieces[static_cast<size_t>(b)] && a < b);
  });
  nodes_.push_back(Node{});
  std::vector<uint32_t> path{0};  // path[d]: node at depth d on the current branch
  const std::string* prev = nullptr;
  // Tokens are grouped per node in sorted order, so equal pieces land on one node.
  std::vector<std::pair<uint32_t, int32_t>> node_tokens;
  for (int32_t id : order) {
    const std::string& p = pieces[static_cast<size_t>(id)];
    if (p.empty() || is_end_[static_cast<size_t>(id)] != 0) continue;
    size_t common = 0;
    if (prev != nullptr) {
      const size_t n = std::min(prev->size(), p.size());
      while (common < n && (*prev)[common] == p[common]) ++common;
    }
    path.resize(common + 1);
    for (size_t d = common; d < p.size(); ++d) {
      Node n;
      n.byte = static_cast<uint8_t>(p[d]);
      n.depth = static_cast<uint32_t>(d + 1);
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(n);
    }
    max_depth_ = std::max(max_depth_, static_cast<uint32_t>(p.size()));
    node_tokens.push_back({path.back(), id});
    prev = &p;
  }
  // Subtree ends: a node's subtree ends at the next node that is not deeper.
  std::vector<uint32_t> open;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    while (!open.empty() && nodes_[open.back()].depth >= nodes_[i].depth) {
      nodes_[open.back()].skip = i;
      open.pop_back();
    }
    open.push_back(i);
  }
  for (uint32_t i : open) nodes_[i].skip = static_cast<uint32_t>(nodes_.size());
  std::stable_sort(node_tokens.begin(), node_tokens.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  tokens_.reserve(node_tokens.size());
  for (const auto& [node, id] : node_tokens) {
    Node& n = nodes_[node];
    if (n.n_tokens == 0) n.first_token = static_cast<uint32_t>(tokens_.size());
    ++n.n_tokens;
    tokens_.push_back(id);
  }
}

Status make_token_trie(const Tokenizer& tok, std::shared_ptr<const TokenTrie>* out) {
  std::vector<std::string> pieces(static_cast<size_t>(tok.n_vocab()));
  std::vector<int32_t> end_ids;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id)) end_ids.push_back(id);
    if (tok.is_control(id)) continue;
    LMRT_RETURN_IF_ERROR(tok.token_to_bytes(id, &pieces[static_cast<size_t>(id)]));
  }
  *out = std::make_shared<const TokenTrie>(pieces, end_ids);
  return Status::Ok();
}

}  // namespace lmrt
