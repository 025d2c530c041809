// libFuzzer target: a GGUF vocabulary's tokenizer on arbitrary text, built twice by scripts/fuzz.sh:
// fuzz_spm_tokenizer (SentencePiece, stories260K.gguf) and fuzz_bpe_tokenizer (byte-level BPE, the Llama 3
// vocabulary of ../shared/vocab/llama-bpe.gguf); $LMRT_FUZZ_MODEL overrides the file. Valid UTF-8 must
// tokenize, every id must turn back into bytes, and a plain (no special parsing) tokenization must give the
// text back: exactly for BPE, for SentencePiece with its leading space and U+2581 read as a space.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/utf8.h"
#include "tests/fuzz/fuzz_vocab.h"

namespace {

const lmrt::Tokenizer* tokenizer() { return lmrt::fuzz::vocab_tokenizer(); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool parse_special = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const lmrt::Tokenizer& tok = *tokenizer();
  std::vector<int32_t> ids;
  if (!tok.encode(text, false, parse_special, &ids).ok()) {
    if (lmrt::validate_utf8(text).ok()) __builtin_trap();  // only invalid UTF-8 may be refused
    return 0;
  }
  std::string back;
  for (int32_t id : ids) {
    std::string bytes;
    if (id < 0 || id >= tok.n_vocab() || !tok.token_to_bytes(id, &bytes).ok()) __builtin_trap();
    back += bytes;
  }
  if (parse_special || text.empty()) return 0;
  if (tok.kind() != lmrt::TokenizerKind::spm) {
    if (back != text) __builtin_trap();
    return 0;
  }
  std::string want(text);
  for (size_t at = want.find("\xe2\x96\x81"); at != std::string::npos; at = want.find("\xe2\x96\x81", at))
    want.replace(at, 3, " ");
  if (back != " " + want && back != want) __builtin_trap();
  return 0;
}
