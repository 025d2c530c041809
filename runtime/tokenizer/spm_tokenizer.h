// SpmTokenizer: SentencePiece-style tokenization over a "llama" GGUF vocabulary, producing the same
// ids as llama.cpp's SPM tokenizer. Immutable after create(); all methods are const and may be called
// from any number of threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer/vocab.h"
#include "runtime/util/status.h"

namespace lmrt {

class SpmTokenizer {
 public:
  // Validates `vocab` (Vocab::validate) and builds the look-up tables once.
  static Status create(Vocab vocab, std::unique_ptr<SpmTokenizer>* out);

  // Replaces *out with the ids of `text`. add_bos prepends the BOS token (invalid_argument when the
  // vocabulary has none). parse_special: control and unknown token texts in `text` (e.g. "<s>")
  // become their ids; user-defined token texts always do, as in llama.cpp. Spaces become '▁', and
  // '▁' is prepended (when the vocabulary's add_space_prefix is set) to the start of the text and to
  // text that follows a special token. A character without a token falls back to its bytes' <0xXX>
  // tokens (else single-byte tokens), else to one unknown token (invalid_argument if there is none).
  // Errors: bad_utf8 with the byte offset of the first malformed character.
  Status tokenize(std::string_view text, bool add_bos, bool parse_special, std::vector<int32_t>* out) const;

  // Raw vocabulary text of `id`; empty for an id out of range.
  std::string_view token_text(int32_t id) const;
  // Replaces *out with the bytes `id` stands for: normal tokens with '▁' as ' ', byte tokens as
  // their byte, user-defined tokens as their text, control / unknown / unused tokens as "".
  // Errors: invalid_argument for an id out of range.
  Status token_to_piece(int32_t id, std::string* out) const;

  int32_t n_vocab() const { return vocab_.size(); }
  int32_t bos() const { return vocab_.bos_id; }
  int32_t eos() const { return vocab_.eos_id; }
  // End of generation: EOS, EOT, and control tokens whose text is a known end marker
  // ("</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_story|>", ...).
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  const Vocab& vocab() const { return vocab_; }

 private:
  explicit SpmTokenizer(Vocab vocab);
  void build_tables();

  struct Fragment {
    int32_t token;  // -1 for text
    size_t offset;  // text range when token == -1
    size_t length;
  };
  void split_special(std::string_view text, bool parse_special, std::vector<Fragment>* fragments) const;
  // Tokenizes one run of escaped text ('▁' for spaces), appending ids.
  Status tokenize_escaped(std::string_view text, std::vector<int32_t>* out) const;
  int32_t find_token(std::string_view text) const;

  Vocab vocab_;
  std::unordered_map<std::string_view, int32_t> text_to_id_;  // views into vocab_.tokens
  std::array<int32_t, 256> byte_to_id_{};  // <0xXX> (else single-byte) token of each byte; -1 when none
  std::vector<int32_t> special_ids_;       // control / user-defined / unknown tokens, longest text first
  std::vector<int32_t> eog_ids_;
  size_t max_token_length_ = 0;
};

}  // namespace lmrt
