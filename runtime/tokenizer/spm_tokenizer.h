// SpmTokenizer: SentencePiece-style tokenization over a "llama" GGUF vocabulary, producing the same
// ids as llama.cpp's SPM tokenizer. Immutable after create(); all methods are const and may be called
// from any number of threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/status.h"

namespace lmrt {

// Spaces become '▁', and '▁' is prepended (when the vocabulary's add_space_prefix is set) to the start
// of the text and to text that follows a special token. Pieces merge by score, highest first. A
// character without a token falls back to its bytes' <0xXX> tokens (else single-byte tokens), else to
// one unknown token (invalid_argument if there is none).
class SpmTokenizer final : public Tokenizer {
 public:
  // Validates `vocab` (Vocab::validate) and builds the look-up tables once.
  static Status create(Vocab vocab, std::unique_ptr<SpmTokenizer>* out);

  std::string_view visible_piece(int32_t prev, std::string_view bytes) const override;

 private:
  explicit SpmTokenizer(Vocab vocab);
  void build_tables();
  Status encode_text(std::string_view text, bool starts_sequence, std::vector<int32_t>* out) const override;
  // Normal tokens with '▁' as ' '.
  void decode_normal(std::string_view text, std::string* out) const override;
  // Tokenizes one run of escaped text ('▁' for spaces), appending ids.
  Status tokenize_escaped(std::string_view text, std::vector<int32_t>* out) const;

  std::array<int32_t, 256> byte_to_id_{};  // <0xXX> (else single-byte) token of each byte; -1 when none
  size_t max_token_length_ = 0;
};

}  // namespace lmrt
