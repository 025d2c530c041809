#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>
#include <utility>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/spm_tokenizer.h"
#include "runtime/util/utf8.h"

namespace lmrt {
namespace {

// Texts that end generation when the vocabulary marks them as control tokens (llama.cpp's list,
// plus TinyStories' "<|end_story|>").
constexpr std::string_view kEndMarkers[] = {
    "</s>",          "<|endoftext|>", "<|im_end|>", "<|eot_id|>",      "<|eom_id|>",         "<|end|>",
    "<|end_story|>", "<end_of_turn>", "<EOT>",      "<|end_of_text|>", "<end_of_utterance>",
};

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

Status Tokenizer::create(Vocab vocab, std::unique_ptr<Tokenizer>* out) {
  if (vocab.kind == TokenizerKind::bpe) {
    std::unique_ptr<BpeTokenizer> t;
    LMRT_RETURN_IF_ERROR(BpeTokenizer::create(std::move(vocab), &t));
    *out = std::move(t);
  } else {
    std::unique_ptr<SpmTokenizer> t;
    LMRT_RETURN_IF_ERROR(SpmTokenizer::create(std::move(vocab), &t));
    *out = std::move(t);
  }
  return Status::Ok();
}

Status Tokenizer::from_gguf(const GgufFile& gguf, std::unique_ptr<Tokenizer>* out) {
  Vocab vocab;
  LMRT_RETURN_IF_ERROR(Vocab::from_gguf(gguf, &vocab));
  return create(std::move(vocab), out);
}

void Tokenizer::build_common_tables() {
  const int32_t n = vocab_.size();
  text_to_id_.build(vocab_.tokens);

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
  add_eog(vocab_.eom_id);
  for (std::string_view marker : kEndMarkers) {
    const int32_t id = find_token(marker);
    if (id >= 0 && vocab_.types[id] == TokenType::control) add_eog(id);
  }
}

int32_t Tokenizer::find_token(std::string_view text) const { return text_to_id_.find(text, vocab_.tokens); }

std::string_view Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return vocab_.tokens[id];
}

Status Tokenizer::token_to_bytes(int32_t id, std::string* out) const {
  if (id < 0 || id >= n_vocab()) {
    return Error(Code::invalid_argument, "token id " + std::to_string(id) + " is out of range (vocabulary has " +
                                             std::to_string(n_vocab()) + " tokens)");
  }
  out->clear();
  const std::string_view text = vocab_.tokens[id];
  switch (vocab_.types[id]) {
    case TokenType::normal:
      decode_normal(text, out);
      break;
    case TokenType::byte:
      *out += static_cast<char>(byte_token_value(text));
      break;
    case TokenType::user_defined:
      out->assign(text);
      break;
    case TokenType::control:
    case TokenType::unknown:
    case TokenType::unused:
      break;
  }
  return Status::Ok();
}

bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

bool Tokenizer::is_control(int32_t id) const {
  return id >= 0 && id < n_vocab() && vocab_.types[id] == TokenType::control;
}

// Splits the text at every occurrence of a special token's text, longest tokens first, each token's
// occurrences left to right within the text fragments left by the tokens before it (llama.cpp's order).
// Without parse_special nothing is split: unlike llama.cpp, which always matches user-defined tokens
// (e.g. Qwen's "<tool_call>"), text from a user can then never become a token of the chat format.
// An occurrence overlapping one of `plain` (when given) is left as text.
void Tokenizer::split_special(std::string_view text, bool parse_special, const ByteRanges* plain,
                              std::vector<Fragment>* fragments) const {
  fragments->clear();
  if (text.empty()) return;
  fragments->push_back({-1, 0, text.size()});
  if (!parse_special) return;
  std::vector<Fragment> next;
  for (int32_t id : special_ids_) {
    const std::string_view special = vocab_.tokens[id];
    bool found = false;
    next.clear();
    for (const Fragment& f : *fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      const std::string_view piece = text.substr(f.offset, f.length);
      size_t start = 0;  // the piece's text before `start` is in `next` already
      size_t from = 0;   // where to look for the next occurrence
      for (size_t hit = piece.find(special); hit != std::string_view::npos; hit = piece.find(special, from)) {
        if (plain != nullptr && overlaps(*plain, f.offset + hit, f.offset + hit + special.size())) {
          from = hit + 1;
          continue;
        }
        found = true;
        if (hit > start) next.push_back({-1, f.offset + start, hit - start});
        next.push_back({id, f.offset + hit, special.size()});
        start = from = hit + special.size();
      }
      if (start < piece.size()) next.push_back({-1, f.offset + start, piece.size() - start});
    }
    if (found) fragments->swap(next);
  }
}

Status Tokenizer::encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>* out) const {
  return encode_fragments(text, add_special, parse_special, nullptr, out);
}

Status Tokenizer::encode_chat(std::string_view text, const ByteRanges& plain, std::vector<int32_t>* out) const {
  LMRT_RETURN_IF_ERROR(encode_fragments(text, /*add_special=*/false, /*parse_special=*/true, &plain, out));
  // One BOS: the vocabulary's, unless the template already wrote it.
  if (vocab_.add_bos && (out->empty() || out->front() != vocab_.bos_id)) out->insert(out->begin(), vocab_.bos_id);
  return Status::Ok();  // no EOS: the prompt goes on with the model's reply
}

Status Tokenizer::encode_fragments(std::string_view text, bool add_special, bool parse_special, const ByteRanges* plain,
                                   std::vector<int32_t>* out) const {
  out->clear();
  LMRT_RETURN_IF_ERROR(validate_utf8(text));
  if (text.size() > UINT32_MAX / 4) {
    return Error(Code::invalid_argument, "text of " + std::to_string(text.size()) + " bytes is too long to tokenize");
  }
  if (add_special && vocab_.add_bos) out->push_back(vocab_.bos_id);  // validate() ensured it exists
  std::vector<Fragment> fragments;
  split_special(text, parse_special, plain, &fragments);
  bool starts_sequence = true;  // the start of the text counts as following a special token
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out->push_back(f.token);
      starts_sequence = true;
      continue;
    }
    Status s = encode_text(text.substr(f.offset, f.length), starts_sequence, out);
    if (!s.ok()) {
      out->clear();
      return s;
    }
    starts_sequence = false;
  }
  if (add_special && vocab_.add_eos) out->push_back(vocab_.eos_id);
  return Status::Ok();
}

}  // namespace lmrt
