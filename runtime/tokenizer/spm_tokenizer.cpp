#include "runtime/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "runtime/util/utf8.h"

namespace lmrt {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // '▁' U+2581

// One unit of the merge: a range of the escaped text in a doubly linked list of symbols.
struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t offset;
  uint32_t length;  // 0 once merged into its left neighbour
};

// A candidate merge of two adjacent symbols into the token of that text.
struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t length;  // combined length when queued; a mismatch later means the pair is stale
};

// Orders the priority queue: highest score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  }
};

std::string escape_spaces(std::string_view text, bool prefix_space) {
  std::string out;
  out.reserve(text.size() + (prefix_space ? 3 : 0) + 8);
  if (prefix_space) out += kSpaceMarker;
  for (char c : text) {
    if (c == ' ') {
      out += kSpaceMarker;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {}

Status SpmTokenizer::create(Vocab vocab, std::unique_ptr<SpmTokenizer>* out) {
  LMRT_RETURN_IF_ERROR(vocab.validate());
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer(std::move(vocab)));
  t->build_tables();
  *out = std::move(t);
  return Status::Ok();
}

void SpmTokenizer::build_tables() {
  build_common_tables();
  for (size_t id = 0; id < vocab_.tokens.size(); ++id)
    max_token_length_ = std::max(max_token_length_, vocab_.tokens[id].size());
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char byte_name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = find_token(std::string_view(byte_name, 6));
    if (id < 0) id = find_token(std::string_view(std::string(1, static_cast<char>(b))));
    byte_to_id_[b] = id;
  }
}

std::string_view SpmTokenizer::visible_piece(int32_t prev, std::string_view bytes) const {
  if (prev == bos() && vocab_.add_space_prefix && !bytes.empty() && bytes[0] == ' ') bytes.remove_prefix(1);
  return bytes;
}

void SpmTokenizer::decode_normal(std::string_view text, std::string* out) const {
  size_t pos = 0;
  while (pos < text.size()) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      *out += ' ';
      pos += kSpaceMarker.size();
    } else {
      *out += text[pos++];
    }
  }
}

Status SpmTokenizer::encode_text(std::string_view text, bool starts_sequence, std::vector<int32_t>* out) const {
  const std::string escaped = escape_spaces(text, vocab_.add_space_prefix && starts_sequence);
  return tokenize_escaped(escaped, out);
}

Status SpmTokenizer::tokenize_escaped(std::string_view text, std::vector<int32_t>* out) const {
  // Start from one symbol per UTF-8 character (text is well-formed: validated before escaping).
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = static_cast<size_t>(std::max(1, utf8_sequence_length(text.substr(pos))));
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back(
        {index - 1, pos + len < text.size() ? index + 1 : -1, static_cast<uint32_t>(pos), static_cast<uint32_t>(len)});
    pos += len;
  }
  if (symbols.empty()) return Status::Ok();

  std::vector<Bigram> storage;
  storage.reserve(symbols.size());
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue(BigramLess{}, std::move(storage));
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t length = symbols[left].length + symbols[right].length;
    if (length > max_token_length_) return;
    const int32_t id = find_token(text.substr(symbols[left].offset, length));
    if (id < 0) return;
    queue.push({vocab_.scores[id], left, right, length});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

  // Merge the best pair until none is left; stale pairs (a side already merged elsewhere) are skipped.
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.length == 0 || right.length == 0 || left.next != b.right || left.length + right.length != b.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  // Every merged symbol is a token; a lone character without one falls back to its bytes.
  for (int32_t i = 0; i >= 0; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].offset, symbols[i].length);
    const int32_t id = find_token(piece);
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    const bool has_bytes =
        std::all_of(piece.begin(), piece.end(), [this](char c) { return byte_to_id_[static_cast<uint8_t>(c)] >= 0; });
    if (has_bytes) {
      for (char c : piece) out->push_back(byte_to_id_[static_cast<uint8_t>(c)]);
    } else if (vocab_.unk_id >= 0) {
      out->push_back(vocab_.unk_id);  // one unknown token per character, as SentencePiece does
    } else {
      return Error(Code::invalid_argument, "cannot encode \"" + std::string(piece) +
                                               "\": the vocabulary has no token for it, no byte tokens "
                                               "and no unknown token");
    }
  }
  return Status::Ok();
}

}  // namespace lmrt
