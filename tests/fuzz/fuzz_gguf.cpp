// libFuzzer target: the GGUF reader on arbitrary bytes, then the tokenizer vocabulary read from what
// parsed. Any input must give a Status; a crash, sanitizer report or hang is a bug.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/model/gguf_file.h"
#include "runtime/tokenizer/spm_tokenizer.h"
#include "runtime/tokenizer/vocab.h"
#include "runtime/util/mapped_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<lmrt::GgufFile> gguf;
  if (!lmrt::GgufFile::parse(lmrt::MappedFile::from_bytes(data, size), &gguf).ok()) return 0;
  lmrt::Vocab vocab;
  if (!lmrt::Vocab::from_gguf(*gguf, &vocab).ok()) return 0;
  std::unique_ptr<lmrt::SpmTokenizer> tok;
  if (!lmrt::SpmTokenizer::create(std::move(vocab), &tok).ok()) return 0;
  std::vector<int32_t> ids;
  (void)tok->tokenize("Once upon a time", true, true, &ids);
  return 0;
}
