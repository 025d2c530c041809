// grammar: the sampler that keeps generation inside a grammar (GBNF, or JSON Schema translated to
// GBNF). apply() keeps only the candidates whose bytes the grammar allows next, in their order, and
// end-of-generation tokens only where the grammar is complete; accept() advances the grammar by the
// chosen token. It follows the generated text only (prompt tokens are not accepted into it), so it
// belongs first in a chain, where it sees the whole vocabulary and masks it with one walk of the
// shared token trie; on a short candidate list (after top_k) it checks each candidate instead.
// keeps_token() checks one token alone, so a chain whose other samplers judge each candidate on its
// own (greedy, dist, temperature, ...) asks it only about the token they pick and masks the
// vocabulary only when that token is refused (SamplerChain::sample).
#pragma once

#include <memory>
#include <string_view>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/token_trie.h"
#include "runtime/sampling/sampler.h"
#include "runtime/util/status.h"

namespace lmrt {

// `key` names the grammar in canonical_text() (e.g. a hash of its text), so equal grammars give
// equal chain texts. Errors: invalid_argument for a grammar the matcher cannot start.
Status make_grammar_sampler(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocab,
                            std::string_view key, std::unique_ptr<Sampler>* out);

// Compiles GBNF text (`is_json_schema` false) or a JSON Schema to a grammar sampler; key is a hash
// of the text. Errors: the parser's or translator's invalid_argument.
Status make_grammar_sampler_from_text(std::string_view text, bool is_json_schema,
                                      std::shared_ptr<const TokenTrie> vocab, std::unique_ptr<Sampler>* out);

}  // namespace lmrt
