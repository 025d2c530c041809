// GBNF parser: llama.cpp's grammar format to a Grammar.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"    # comment
//   pair   ::= [a-z]+ ":" ws ( "true" | "false" )
//   ws     ::= [ \t\n]{0,4}
//
// Rules `name ::= alternatives`; a rule ends at a newline unless inside parentheses or after `|`.
// Elements: "strings" and [classes] ([^...] negated) with escapes \n \r \t \\ \" \' \[ \] \- \^
// \xHH \uHHHH \UHHHHHHHH, `.` (any character), rule names, (groups); postfix * + ? {m} {m,} {m,n}.
// `root` is the start rule. Limits bound hostile input: nesting depth, repetition counts, and the
// size of the expanded grammar. Left-recursive rules are refused (the matcher is top-down).
#pragma once

#include <string_view>

#include "runtime/grammar/grammar.h"
#include "runtime/util/status.h"

namespace lmrt {

inline constexpr int kMaxGrammarNesting = 64;
inline constexpr uint32_t kMaxGrammarRepetition = 1000;  // m and n of {m,n}
inline constexpr size_t kMaxGrammarElements = 1u << 20;  // after expanding repetitions
inline constexpr size_t kMaxGrammarText = 1u << 22;      // bytes of GBNF

// Errors: invalid_argument "gbnf LINE:COL: what" for bad syntax, unknown rules, a missing root,
// left recursion, and input beyond the limits.
Status parse_gbnf(std::string_view text, Grammar* out);

}  // namespace lmrt
