// The tokenizer as plugins see token text (lmrt_host_api::token_text).
#pragma once

#include "runtime/plugins/plugin_vocab.h"
#include "runtime/tokenizer/tokenizer.h"

namespace lmrt {

class TokenizerTextSource final : public TokenTextSource {
 public:
  explicit TokenizerTextSource(const Tokenizer& tok) : tok_(tok) {}
  int32_t n_vocab() const override { return tok_.n_vocab(); }
  bool token_text(int32_t token, std::string* out) const override { return tok_.token_to_bytes(token, out).ok(); }

 private:
  const Tokenizer& tok_;
};

}  // namespace lmrt
