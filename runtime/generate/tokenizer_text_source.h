// The tokenizer as plugins see token text (lmrt_host_api::token_text).
#pragma once

#include "runtime/plugins/plugin_vocab.h"
#include "runtime/tokenizer/spm_tokenizer.h"

namespace lmrt {

class TokenizerTextSource final : public TokenTextSource {
 public:
  explicit TokenizerTextSource(const SpmTokenizer& tok) : tok_(tok) {}
  int32_t n_vocab() const override { return tok_.n_vocab(); }
  bool token_text(int32_t token, std::string* out) const override { return tok_.token_to_piece(token, out).ok(); }

 private:
  const SpmTokenizer& tok_;
};

}  // namespace lmrt
