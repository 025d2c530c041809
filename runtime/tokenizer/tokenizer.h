// Tokenizer: the one interface the rest of the runtime tokenizes and detokenizes through. The kind
// (SentencePiece or byte-level BPE) is chosen from the vocabulary (tokenizer.ggml.model); what every
// kind shares lives here: special-token splitting, BOS/EOS handling, the end-of-generation set.
// Immutable after create(); all methods are const and may be called from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/token_index.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/byte_range.h"
#include "runtime/util/status.h"

namespace lmrt {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Builds the tokenizer the vocabulary's kind asks for (after Vocab::validate). Errors:
  // invalid_argument (a vocabulary that fails validation), unsupported (an unknown BPE pre-tokenizer,
  // named), bad_format (merges that do not parse).
  static Status create(Vocab vocab, std::unique_ptr<Tokenizer>* out);
  // Vocab::from_gguf, then create(). Needs only the tokenizer.ggml.* keys (no weights).
  static Status from_gguf(const GgufFile& gguf, std::unique_ptr<Tokenizer>* out);

  // Replaces *out with the ids of `text`. add_special: add BOS (and EOS) when the vocabulary asks for
  // them (add_bos_token / add_eos_token). parse_special: the texts of control, user-defined and
  // unknown tokens in `text` (e.g. "<|eot_id|>") become their ids; otherwise all of `text` is plain
  // text (llama.cpp matches user-defined tokens even then). Text the vocabulary cannot encode becomes unknown tokens,
  // or invalid_argument when there is no unknown token. Errors: bad_utf8 with the byte offset of the first malformed
  // character; invalid_argument for a text too long to tokenize.
  Status encode(std::string_view text, bool add_special, bool parse_special, std::vector<int32_t>* out) const;

  // A rendered chat: encode with parse_special, except that a special-token text overlapping one of
  // `plain` (the caller's message text, sorted) stays text. BOS is added when the vocabulary asks for
  // it and the text does not already begin with it (a template that writes bos_token itself); never EOS.
  Status encode_chat(std::string_view text, const ByteRanges& plain, std::vector<int32_t>* out) const;

  // Replaces *out with the bytes `id` stands for: normal tokens decoded the kind's way, <0xXX> byte
  // tokens as their byte (which may be part of a UTF-8 character), user-defined tokens as their text,
  // control, unknown and unused tokens as "". Errors: invalid_argument for an id out of range.
  Status token_to_bytes(int32_t id, std::string* out) const;

  // The text token `id`'s bytes add when it follows `prev`: SentencePiece drops the space it puts
  // before the first word after BOS (that word starts the text); other kinds show bytes unchanged.
  virtual std::string_view visible_piece(int32_t prev, std::string_view bytes) const = 0;

  // Raw vocabulary text of `id`; empty for an id out of range.
  std::string_view token_text(int32_t id) const;
  int32_t n_vocab() const { return vocab_.size(); }
  TokenizerKind kind() const { return vocab_.kind; }
  int32_t bos() const { return vocab_.bos_id; }
  int32_t eos() const { return vocab_.eos_id; }
  int32_t eot() const { return vocab_.eot_id; }
  int32_t eom() const { return vocab_.eom_id; }
  bool add_bos() const { return vocab_.add_bos; }
  bool add_eos() const { return vocab_.add_eos; }
  // End of generation: EOS, EOT, EOM, and control tokens whose text is a known end marker
  // ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "</s>", "<|endoftext|>", ...).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  bool is_control(int32_t id) const;
  // The vocabulary (a BPE tokenizer drops its merges once it has indexed them).
  const Vocab& vocab() const { return vocab_; }

 protected:
  explicit Tokenizer(Vocab vocab);
  // Builds the tables every kind uses; kinds call it from their create().
  void build_common_tables();
  int32_t find_token(std::string_view text) const;
  // Appends the ids of one run of plain text; `starts_sequence` is true for text at the start or
  // right after a special token.
  virtual Status encode_text(std::string_view text, bool starts_sequence, std::vector<int32_t>* out) const = 0;
  // Appends the bytes a normal token's vocabulary text stands for.
  virtual void decode_normal(std::string_view text, std::string* out) const = 0;

  Vocab vocab_;
  TokenIndex text_to_id_;  // over vocab_.tokens

 private:
  struct Fragment {
    int32_t token;  // -1 for text
    size_t offset;  // the text range (of the token's text too)
    size_t length;
  };
  void split_special(std::string_view text, bool parse_special, const ByteRanges* plain,
                     std::vector<Fragment>* fragments) const;
  Status encode_fragments(std::string_view text, bool add_special, bool parse_special, const ByteRanges* plain,
                          std::vector<int32_t>* out) const;

  std::vector<int32_t> special_ids_;  // control / user-defined / unknown tokens, longest text first
  std::vector<int32_t> eog_ids_;
};

}  // namespace lmrt
