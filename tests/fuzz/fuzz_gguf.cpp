// libFuzzer target: the GGUF reader on arbitrary bytes, then the tokenizer (vocabulary and merges) built from
// what parsed. Any input must give a Status; a crash, sanitizer report or hang is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/mapped_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<lmrt::GgufFile> gguf;
  if (!lmrt::GgufFile::parse(lmrt::MappedFile::from_bytes(data, size), &gguf).ok()) return 0;
  std::unique_ptr<lmrt::Tokenizer> tok;  // SentencePiece or byte-level BPE, as the vocabulary says
  if (!lmrt::Tokenizer::from_gguf(*gguf, &tok).ok()) return 0;
  std::vector<int32_t> ids;
  (void)tok->encode("Once upon a time <|eot_id|>", true, true, &ids);
  return 0;
}
