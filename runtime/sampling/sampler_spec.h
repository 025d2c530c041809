// Sampler chain spec text: the one way every language and the CLI write a chain, e.g.
//   penalties(repeat=1.1,last_n=64) top_k(40) top_p(0.9) temperature(0.7) dist
//
// Grammar (whitespace is allowed between all tokens and separates items):
//   spec  := item*
//   item  := name [ "(" [ arg ("," arg)* ] ")" ]
//   arg   := [ key "=" ] value
//   name  := [A-Za-z_][A-Za-z0-9_.:-]*
//   key   := [A-Za-z0-9_.:-]+                (digits allowed: logit_bias keys are token ids)
//   value := bare | '"' (char | '\"' | '\\')* '"'
//   bare  := any run of characters other than whitespace , ( ) = "
// Positional arguments bind to the sampler's parameters in order and must precede named ones.
// This file parses the text and binds arguments to parameters; which names exist is the
// registry's business (sampler_registry.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/util/status.h"

namespace lmrt {

struct SamplerArg {
  std::string key;  // empty for a positional argument
  std::string value;
  bool quoted = false;
  size_t offset = 0;  // of the argument in the spec text
};

// One parsed item: a sampler name and its raw arguments.
struct SamplerSpec {
  std::string name;
  std::vector<SamplerArg> args;
  size_t offset = 0;  // of the name in the spec text
};

// Splits spec text into items. Errors (invalid_argument) name the offset and the problem:
// unbalanced parentheses, a missing name, an empty argument, a key without a value, ...
Status parse_chain_spec(std::string_view text, std::vector<SamplerSpec>* out);

// A closed or half-open range of allowed values, for error messages and checks.
struct FloatRange {
  double lo;
  double hi;
  bool lo_inclusive = true;
  bool hi_inclusive = true;
};

// The arguments of one item bound to the parameter names of its sampler. Typed getters parse and
// range-check, with errors like "top_p: parameter 'p' must be in [0, 1], got 1.5".
class SamplerParams {
 public:
  // Binds positional arguments to `names` in order and named ones by key. Errors: too many
  // positional arguments, an unknown or repeated parameter, a positional after a named argument.
  static Status bind(const SamplerSpec& spec, std::initializer_list<std::string_view> names, SamplerParams* out);

  bool has(std::string_view name) const;
  // Parses a decimal float (also "inf"/"-inf"); absent -> fallback. NaN is always refused.
  Status get_float(std::string_view name, float fallback, FloatRange range, float* out) const;
  // Parses a decimal integer; absent -> fallback.
  Status get_int(std::string_view name, int64_t fallback, int64_t lo, int64_t hi, int64_t* out) const;

 private:
  const std::string* find(std::string_view name) const;

  std::string sampler_;
  std::vector<std::pair<std::string, std::string>> values_;  // parameter name -> raw value
};

// Range checks shared by spec parsing and the typed sampler constructors, so both report the same
// message, e.g. "top_p: parameter 'p' must be in [0, 1], got 1.5".
Status check_float_param(std::string_view sampler, std::string_view param, float value, const FloatRange& range);
Status check_int_param(std::string_view sampler, std::string_view param, int64_t value, int64_t lo, int64_t hi);

// Strict, locale-independent number parsing: the whole text must be the number. A leading '+' is
// accepted. Floats accept "inf" and "-inf".
bool parse_float_text(std::string_view text, float* out);
bool parse_int_text(std::string_view text, int64_t* out);

// Canonical number text: the shortest text that reads back as the same float ("0.9", "1", "-inf").
std::string format_float(float v);

}  // namespace lmrt
