#include "runtime/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>
#include <utility>

#include "runtime/util/utf8.h"

namespace lmrt {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // '▁' U+2581

// Texts that end generation when the vocabulary marks them as control tokens.
constexpr std::string_view kEndMarkers[] = {
    "</s>",    "<|endoftext|>", "<|im_end|>",    "<|eot_id|>", "<|eom_id|>",
    "<|end|>", "<|end_story|>", "<end_of_turn>", "<EOT>",      "<|end_of_text|>",
};

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

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return c - 'a' + 10;  // validated by Vocab::validate
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

Status SpmTokenizer::create(Vocab vocab, std::unique_ptr<SpmTokenizer>* out) {
  LMRT_RETURN_IF_ERROR(vocab.validate());
  const size_t n = vocab.tokens.size();
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].size() > UINT32_MAX) return Error(Code::invalid_argument, "token text too long");
  }
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer(std::move(vocab)));
  t->build_tables();
  *out = std::move(t);
  return Status::Ok();
}

void SpmTokenizer::build_tables() {
  const int32_t n = vocab_.size();
  text_to_id_.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = vocab_.tokens[id];
    if (text.empty()) continue;
    text_to_id_[text] = id;  // a duplicate text maps to its last id, as in llama.cpp
    max_token_length_ = std::max(max_token_length_, text.size());
  }

  static constexpr char kHex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    const char byte_name[6] = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    int32_t id = find_token(std::string_view(byte_name, 6));
    if (id < 0) id = find_token(std::string_view(std::string(1, static_cast<char>(b))));
    byte_to_id_[b] = id;
  }

  for (int32_t id = 0; id < n; ++id) {
    const TokenType type = vocab_.types[id];
    if ((type == TokenType::control || type == TokenType::user_defined || type == TokenType::unknown) &&
        !vocab_.tokens[id].empty()) {
      special_ids_.push_back(id);
    }
  }
  std::stable_sort(special_ids_.begin(), special_ids_.end(),
                   [this](int32_t a, int32_t b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });

  auto add_eog = [this](int32_t id) {
    if (id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) == eog_ids_.end()) eog_ids_.push_back(id);
  };
  add_eog(vocab_.eos_id);
  add_eog(vocab_.eot_id);
  for (std::string_view marker : kEndMarkers) {
    const int32_t id = find_token(marker);
    if (id >= 0 && vocab_.types[id] == TokenType::control) add_eog(id);
  }
}

int32_t SpmTokenizer::find_token(std::string_view text) const {
  auto it = text_to_id_.find(text);
  return it == text_to_id_.end() ? -1 : it->second;
}

std::string_view SpmTokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return vocab_.tokens[id];
}

bool SpmTokenizer::is_eog(int32_t id) const {
  return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

bool SpmTokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && vocab_.types[id] == TokenType::control;
}

Status SpmTokenizer::token_to_piece(int32_t id, std::string* out) const {
  if (id < 0 || id >= n_vocab()) {
    return Error(Code::invalid_argument, "token id " + std::to_string(id) + " is out of range (vocabulary has " +
                                             std::to_string(n_vocab()) + " tokens)");
  }
  out->clear();
  const std::string& text = vocab_.tokens[id];
  switch (vocab_.types[id]) {
    case TokenType::normal: {
      size_t pos = 0;
      while (pos < text.size()) {
        if (text.compare(pos, kSpaceMarker.size(), kSpaceMarker) == 0) {
          *out += ' ';
          pos += kSpaceMarker.size();
        } else {
          *out += text[pos++];
        }
      }
      break;
    }
    case TokenType::byte:
      *out += static_cast<char>(hex_value(text[3]) * 16 + hex_value(text[4]));
      break;
    case TokenType::user_defined:
      *out = text;
      break;
    case TokenType::control:
    case TokenType::unknown:
    case TokenType::unused:
      break;
  }
  return Status::Ok();
}

// Splits the text at every occurrence of a special token's text, longest tokens first, each token's
// occurrences left to right within the text fragments left by the tokens before it (llama.cpp's order).
void SpmTokenizer::split_special(std::string_view text, bool parse_special, std::vector<Fragment>* fragments) const {
  fragments->clear();
  if (text.empty()) return;
  fragments->push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  for (int32_t id : special_ids_) {
    const TokenType type = vocab_.types[id];
    if (!parse_special && type != TokenType::user_defined) continue;
    const std::string_view special = vocab_.tokens[id];
    bool found = false;
    next.clear();
    for (const Fragment& f : *fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view piece = text.substr(f.offset, f.length);
      size_t start = 0;
      for (size_t hit = piece.find(special); hit != std::string_view::npos; hit = piece.find(special, start)) {
        found = true;
        if (hit > start) next.push_back({-1, f.offset + start, hit - start});
        next.push_back({id, 0, 0});
        start = hit + special.size();
      }
      if (start < piece.size()) next.push_back({-1, f.offset + start, piece.size() - start});
    }
    if (found) fragments->swap(next);
  }
}

Status SpmTokenizer::tokenize(std::string_view text, bool add_bos, bool parse_special,
                              std::vector<int32_t>* out) const {
  out->clear();
  LMRT_RETURN_IF_ERROR(validate_utf8(text));
  if (text.size() > UINT32_MAX / 4) {
    return Error(Code::invalid_argument, "text of " + std::to_string(text.size()) + " bytes is too long to tokenize");
  }
  if (add_bos) {
    if (vocab_.bos_id < 0) return Error(Code::invalid_argument, "BOS requested but the vocabulary has no BOS token");
    out->push_back(vocab_.bos_id);
  }
  std::vector<Fragment> fragments;
  split_special(text, parse_special, &fragments);
  bool after_special = true;  // the start of the text counts as following a special token
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out->push_back(f.token);
      after_special = true;
      continue;
    }
    const std::string escaped =
        escape_spaces(text.substr(f.offset, f.length), vocab_.add_space_prefix && after_special);
    Status s = tokenize_escaped(escaped, out);
    if (!s.ok()) {
      out->clear();
      return s;
    }
    after_special = false;
  }
  return Status::Ok();
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
