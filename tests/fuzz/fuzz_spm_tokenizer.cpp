// libFuzzer target: the SentencePiece tokenizer of stories260K.gguf ($LMRT_FUZZ_MODEL overrides) on
// arbitrary text. Valid UTF-8 must tokenize, and every id must turn back into a piece; the pieces of
// a plain (no special parsing) tokenization must give the text back with its leading space.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/spm_tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/utf8.h"

namespace {

const lmrt::SpmTokenizer* tokenizer() {
  static std::unique_ptr<lmrt::SpmTokenizer> tok = [] {
    const char* env = std::getenv("LMRT_FUZZ_MODEL");
    const std::string path = env != nullptr ? env : LMRT_FUZZ_DEFAULT_MODEL;
    std::unique_ptr<lmrt::GgufFile> gguf;
    lmrt::Vocab vocab;
    std::unique_ptr<lmrt::SpmTokenizer> t;
    if (!lmrt::GgufFile::open(path, true, &gguf).ok() || !lmrt::Vocab::from_gguf(*gguf, &vocab).ok() ||
        !lmrt::SpmTokenizer::create(std::move(vocab), &t).ok())
      std::abort();  // the fuzzer's own setup, not an input
    return t;
  }();
  return tok.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool parse_special = (data[0] & 1) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<int32_t> ids;
  const lmrt::Status s = tokenizer()->tokenize(text, false, parse_special, &ids);
  if (!s.ok()) {
    if (lmrt::validate_utf8(text).ok()) __builtin_trap();  // only invalid UTF-8 may be refused
    return 0;
  }
  std::string back;
  for (int32_t id : ids) {
    std::string piece;
    if (!tokenizer()->token_to_piece(id, &piece).ok()) __builtin_trap();
    back += piece;
  }
  // A plain tokenization loses nothing, except that SentencePiece writes spaces as U+2581, which
  // therefore comes back as a space.
  std::string want(text);
  for (size_t at = want.find("\xe2\x96\x81"); at != std::string::npos; at = want.find("\xe2\x96\x81", at))
    want.replace(at, 3, " ");
  if (!parse_special && !text.empty() && back != " " + want && back != want) __builtin_trap();
  return 0;
}
