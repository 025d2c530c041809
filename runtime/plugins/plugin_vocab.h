// TokenTextSource: what a plugin's token-text lookup reads (lmrt_host_api::token_text). The
// application (or the generator) implements it over its tokenizer and passes it when it builds a
// registry from the plugin host, so plugin instances made through that registry can see token text.
#pragma once

#include <cstdint>
#include <string>

namespace lmrt {

class TokenTextSource {
 public:
  virtual ~TokenTextSource() = default;
  virtual int32_t n_vocab() const = 0;
  // The bytes token `token` stands for; false when it is out of range. Must be safe to call from
  // several threads at once (it is read-only).
  virtual bool token_text(int32_t token, std::string* out) const = 0;
};

}  // namespace lmrt
