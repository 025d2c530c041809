// BpePretokenizer: splits text into the words byte-level BPE merges within, with the regexes of the
// pre-tokenizer a vocabulary names (tokenizer.ggml.pre), compiled once with PCRE2 (UTF, Unicode
// properties, JIT). Several regexes apply in turn, each to the pieces the previous one left, and
// text between matches is kept as pieces of its own (as llama.cpp and Hugging Face's Split do).
// Immutable after create(); split() may be called from any number of threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

class BpePretokenizer {
 public:
  // Compiles the regexes of `pre` ("llama-bpe", "qwen2", "gpt-2", "smollm", "deepseek-llm",
  // "deepseek-coder", "falcon", "mpt", "starcoder", "refact", "command-r", "gpt-4o", their aliases,
  // and "default" or "" for llama.cpp's default). Errors: unsupported for any other name.
  static Status create(std::string_view pre, std::unique_ptr<BpePretokenizer>* out);
  ~BpePretokenizer();
  BpePretokenizer(const BpePretokenizer&) = delete;
  BpePretokenizer& operator=(const BpePretokenizer&) = delete;

  // Replaces *words with the [offset, offset + length) ranges of the words of `text` (valid UTF-8),
  // in order, covering all of it. Errors: internal when PCRE2 fails (e.g. its match limit).
  Status split(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) const;

  // The regexes of the pre-tokenizer, in the order they apply.
  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  BpePretokenizer() = default;
  std::vector<std::string> patterns_;
  std::vector<void*> codes_;  // pcre2_code_8*, kept opaque so that users of this header need no PCRE2
};

}  // namespace lmrt
