// Vocab: the token table of a tokenizer as a GGUF file stores it (kind, texts, scores, types, merges,
// special ids, flags), plus the checks that make it safe to tokenize with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/util/status.h"
#include "runtime/util/string_table.h"

namespace lmrt {

class GgufFile;

// Values of tokenizer.ggml.token_type (SentencePiece's piece types).
enum class TokenType : int32_t {
  normal = 1,
  unknown = 2,
  control = 3,
  user_defined = 4,
  unused = 5,
  byte = 6,
};

// The byte a byte token's text "<0xXX>" stands for (the text is checked by Vocab::validate).
uint8_t byte_token_value(std::string_view text);

// Name of a token type ("normal", "byte", ...), or "invalid" for a value outside the enum.
const char* token_type_name(TokenType type);

// tokenizer.ggml.model: "llama" is SentencePiece, "gpt2" byte-level BPE.
enum class TokenizerKind { spm, bpe };

// "llama" / "gpt2": the tokenizer.ggml.model value of a kind.
const char* tokenizer_kind_name(TokenizerKind kind);

struct Vocab {
  TokenizerKind kind = TokenizerKind::spm;
  std::string pre;            // tokenizer.ggml.pre (BPE pre-tokenizer name); "" when absent
  StringTable tokens;         // token text: SPM with '▁' (U+2581) for a space, BPE in GPT-2's byte alphabet
  StringTable merges;         // BPE: "left right" pairs, highest priority first
  std::vector<float> scores;  // higher merges first
  std::vector<TokenType> types;
  // Special token ids; -1 when the vocabulary has none.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t eot_id = -1;
  int32_t eom_id = -1;
  bool add_bos = false;          // the model expects BOS before a prompt
  bool add_eos = false;          // the model expects EOS after a prompt
  bool add_space_prefix = true;  // prepend '▁' to text that starts a sequence or follows a special token

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }

  // Checks that the arrays have equal, non-zero lengths that fit int32, that every type is one of
  // TokenType, that byte tokens read "<0xXX>", that special ids are -1 or in range, and that add_bos /
  // add_eos name a token. Errors: invalid_argument naming the first problem found.
  Status validate() const;

  // Reads the tokenizer.ggml.* keys of a GGUF file. tokenizer.ggml.model must be "llama" or "gpt2"
  // (unsupported otherwise, naming the model). Follows llama.cpp where keys are missing: scores 0,
  // types normal; SPM: bos 1 / eos 2 / unk 0 (when within the vocabulary), add_bos true,
  // add_space_prefix true; BPE: bos = eos = 11, no unk, add_bos true only for the pre-tokenizers that
  // llama.cpp gives it (llama-bpe and its aliases), no space prefix, merges required. add_eos false.
  // An id stored as -1 or 0xFFFFFFFF means "none". Errors: bad_format for missing or mistyped keys
  // and for a vocabulary that fails validate().
  static Status from_gguf(const GgufFile& gguf, Vocab* out);
};

}  // namespace lmrt
