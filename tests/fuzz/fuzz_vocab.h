// The tokenizer a fuzz target works with: $LMRT_FUZZ_MODEL, else the file scripts/fuzz.sh names for
// the target (LMRT_FUZZ_DEFAULT_MODEL), built once from its vocabulary.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"

namespace lmrt::fuzz {

inline const Tokenizer* vocab_tokenizer() {
  static std::unique_ptr<Tokenizer> tok = [] {
    const char* env = std::getenv("LMRT_FUZZ_MODEL");
    const std::string path = env != nullptr ? env : LMRT_FUZZ_DEFAULT_MODEL;
    std::unique_ptr<GgufFile> gguf;
    std::unique_ptr<Tokenizer> t;
    if (!GgufFile::open(path, true, &gguf).ok() || !Tokenizer::from_gguf(*gguf, &t).ok())
      std::abort();  // the fuzzer's own setup, not an input
    return t;
  }();
  return tok.get();
}

}  // namespace lmrt::fuzz
