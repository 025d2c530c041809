// BpeTokenizer: byte-level BPE over a "gpt2" GGUF vocabulary (GPT-2, Llama 3, Qwen 2/3, SmolLM, ...),
// producing the same ids as llama.cpp: the pre-tokenizer splits text into words, each word's bytes
// become characters of GPT-2's byte alphabet, and adjacent symbols merge by the rank of their pair in
// tokenizer.ggml.merges (lowest rank first, leftmost on ties). Immutable after create(); all methods
// are const and may be called from any number of threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/tokenizer/bpe_merge_table.h"
#include "runtime/tokenizer/bpe_pretokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/status.h"

namespace lmrt {

class BpeTokenizer final : public Tokenizer {
 public:
  // Validates `vocab`, compiles its pre-tokenizer and indexes its merges. Errors: invalid_argument
  // (validation), unsupported (pre-tokenizer), bad_format (a merge without a space).
  static Status create(Vocab vocab, std::unique_ptr<BpeTokenizer>* out);

  std::string_view visible_piece(int32_t, std::string_view bytes) const override { return bytes; }

  const BpePretokenizer& pretokenizer() const { return *pre_; }

 private:
  explicit BpeTokenizer(Vocab vocab);
  Status build_tables();
  Status encode_text(std::string_view text, bool starts_sequence, std::vector<int32_t>* out) const override;
  // Normal tokens are text in GPT-2's byte alphabet.
  void decode_normal(std::string_view text, std::string* out) const override;
  // Appends the ids of one pre-tokenized word (raw bytes).
  Status encode_word(std::string_view word, std::string* scratch, std::vector<int32_t>* out) const;
  // Symbol id of a text: its token id, else an id >= n_vocab for texts that only merges produce.
  int32_t symbol_id(std::string_view text);

  std::unique_ptr<BpePretokenizer> pre_;
  BpeMergeTable merges_;                                    // over symbol ids
  std::unordered_map<std::string, int32_t> extra_symbols_;  // merge texts that are not tokens (build only)
  std::array<int32_t, 256> byte_symbol_{};                  // symbol of each byte's character; -1 when none
  bool ignore_merges_ = false;                              // a word that is a token is that token (Llama 3)
};

}  // namespace lmrt
