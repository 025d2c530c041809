#include "runtime/tokenizer/bpe_tokenizer.h"

#include <queue>
#include <utility>

#include "runtime/tokenizer/byte_level.h"

namespace lmrt {
namespace {

// One unit of the merge: a byte range of the word in a doubly linked list of symbols.
struct Symbol {
  int32_t prev;
  int32_t next;
  int32_t id;  // symbol id (token id when < n_vocab)
  uint32_t offset;
  uint32_t length;  // 0 once merged into its left neighbour
};

// A candidate merge of two adjacent symbols; stale once either side has changed.
struct Bigram {
  int32_t rank;
  int32_t left;
  int32_t right;
  int32_t left_id;
  int32_t right_id;
  int32_t result;  // symbol id of the merged text
};

// Orders the priority queue: lowest rank first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.left > b.left;
  }
};

bool ignores_merges(std::string_view pre) {
  for (std::string_view p : {"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"}) {
    if (pre == p) return true;
  }
  return false;
}

}  // namespace

BpeTokenizer::BpeTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {}

Status BpeTokenizer::create(Vocab vocab, std::unique_ptr<BpeTokenizer>* out) {
  LMRT_RETURN_IF_ERROR(vocab.validate());
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(vocab)));
  LMRT_RETURN_IF_ERROR(t->build_tables());
  *out = std::move(t);
  return Status::Ok();
}

int32_t BpeTokenizer::symbol_id(std::string_view text) {
  const int32_t id = find_token(text);
  if (id >= 0) return id;
  auto [it, inserted] =
      extra_symbols_.emplace(std::string(text), n_vocab() + static_cast<int32_t>(extra_symbols_.size()));
  return it->second;
}

Status BpeTokenizer::build_tables() {
  build_common_tables();
  LMRT_RETURN_IF_ERROR(BpePretokenizer::create(vocab_.pre, &pre_));
  ignore_merges_ = ignores_merges(vocab_.pre);
  for (int b = 0; b < 256; ++b) byte_symbol_[b] = find_token(byte_level_char(static_cast<uint8_t>(b)));

  // Symbols are ids, so merging compares integers; texts that are no token get ids past the vocabulary.
  merges_.reserve(vocab_.merges.size());
  std::string joined;  // reused: the merges are read without an allocation each
  const int32_t n_merges = static_cast<int32_t>(std::min<size_t>(vocab_.merges.size(), INT32_MAX));
  for (int32_t rank = 0; rank < n_merges; ++rank) {
    const std::string_view m = vocab_.merges[rank];
    const size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) {
      return Error(Code::bad_format, "tokenizer.ggml.merges[" + std::to_string(rank) + "] = \"" + std::string(m) +
                                         "\" is not two texts apart by a space");
    }
    const std::string_view left = m.substr(0, space), right = m.substr(space + 1);
    joined.assign(left).append(right);
    const int32_t l = symbol_id(left), r = symbol_id(right);
    const int32_t merged = symbol_id(joined);
    merges_.add(l, r, {rank, merged});  // a repeated pair keeps its first (best) rank
  }
  // Only ids matter from here on; bytes without a token of their own map to no symbol.
  for (int b = 0; b < 256; ++b) {
    if (byte_symbol_[b] < 0) {
      auto it = extra_symbols_.find(std::string(byte_level_char(static_cast<uint8_t>(b))));
      if (it != extra_symbols_.end()) byte_symbol_[b] = it->second;
    }
  }
  extra_symbols_ = {};
  vocab_.merges.clear();  // only the table above is used from here on
  return Status::Ok();
}

void BpeTokenizer::decode_normal(std::string_view text, std::string* out) const { decode_byte_level(text, out); }

Status BpeTokenizer::encode_text(std::string_view text, bool, std::vector<int32_t>* out) const {
  std::vector<std::pair<size_t, size_t>> words;
  LMRT_RETURN_IF_ERROR(pre_->split(text, &words));
  std::string scratch;
  for (const auto& [offset, length] : words)
    LMRT_RETURN_IF_ERROR(encode_word(text.substr(offset, length), &scratch, out));
  return Status::Ok();
}

Status BpeTokenizer::encode_word(std::string_view word, std::string* scratch, std::vector<int32_t>* out) const {
  if (word.empty()) return Status::Ok();
  if (ignore_merges_) {
    scratch->clear();
    encode_byte_level(word, scratch);
    const int32_t id = find_token(*scratch);
    if (id >= 0) {
      out->push_back(id);
      return Status::Ok();
    }
  }

  // One symbol per byte: each byte is one character of the byte alphabet.
  std::vector<Symbol> symbols(word.size());
  const int32_t n = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {i - 1, i + 1 < n ? i + 1 : -1, byte_symbol_[static_cast<uint8_t>(word[i])], static_cast<uint32_t>(i),
                  1};
  }
  std::vector<Bigram> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue(BigramLess{}, std::move(storage));
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || symbols[left].id < 0 || symbols[right].id < 0) return;
    const BpeMergeTable::Merge* m = merges_.find(symbols[left].id, symbols[right].id);
    if (m == nullptr) return;
    queue.push({m->rank, left, right, symbols[left].id, symbols[right].id, m->result});
  };
  for (int32_t i = 1; i < n; ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.length == 0 || right.length == 0 || left.next != b.right || left.id != b.left_id ||
        right.id != b.right_id) {
      continue;
    }
    left.id = b.result;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  // Every symbol that is a token is emitted; any other falls back to its bytes' tokens.
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const Symbol& s = symbols[i];
    if (s.id >= 0 && s.id < n_vocab()) {
      out->push_back(s.id);
      continue;
    }
    for (uint32_t k = s.offset; k < s.offset + s.length; ++k) {
      const int32_t byte_id = byte_symbol_[static_cast<uint8_t>(word[k])];
      if (byte_id >= 0 && byte_id < n_vocab()) {
        out->push_back(byte_id);
      } else if (vocab_.unk_id >= 0) {
        out->push_back(vocab_.unk_id);
      } else {
        return Error(Code::invalid_argument, "cannot encode byte 0x" +
                                                 std::string(1, "0123456789ABCDEF"[(word[k] >> 4) & 15]) +
                                                 std::string(1, "0123456789ABCDEF"[word[k] & 15]) +
                                                 ": the vocabulary has no token for it and no unknown token");
      }
    }
  }
  return Status::Ok();
}

}  // namespace lmrt
