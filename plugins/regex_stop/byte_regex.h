// ByteRegex: a small regular-expression engine over UTF-8 bytes that runs incrementally and can say
// how much of the text's tail could still grow into a match (std::regex cannot). A Thompson NFA,
// simulated one byte at a time with each thread remembering where its match started; linear time.
//
// Syntax: literals (a UTF-8 character is one atom), '.', [classes] with ranges and [^negation],
// escapes \d \D \w \W \s \S \n \r \t \f \v \xHH and escaped punctuation, groups ( ) and (?: ),
// alternation |, quantifiers * + ? {m} {m,} {m,n} (a trailing ? for laziness is accepted and does not
// change which text matches first), and ^ (start of the generated text). '.' and negated classes
// match one whole UTF-8 character (never '\n' for '.'); class members must be ASCII. '$' is refused:
// streamed text has no end to anchor to. Patterns that can match empty text are refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace regex_stop {

class ByteRegex {
 public:
  // Compiles `pattern`; false with a message in *error for bad syntax.
  bool compile(std::string_view pattern, bool ignore_case, std::string* error);

  // Incremental search state.
  struct Scan {
    size_t pos = 0;  // bytes consumed
    bool started = false;
    bool matched = false;
    size_t match_start = 0;
    size_t match_end = 0;
    std::vector<std::pair<int32_t, size_t>> threads;  // (state, start) after consuming pos bytes
    // Scratch space, kept here so a compiled ByteRegex is immutable.
    std::vector<std::pair<int32_t, size_t>> next;
    std::vector<uint32_t> mark;
    uint32_t generation = 0;
    std::vector<int32_t> stack;
  };

  // Consumes text[scan->pos, text.size()) and stops at the first position where a match ends (the
  // leftmost match among those ending there). Returns true when a match was found (then
  // match_start/match_end say where).
  bool feed(std::string_view text, Scan* scan) const;
  // With no match: the earliest start of a partial match still alive, i.e. text[that, pos) may grow
  // into a match; pos when none.
  size_t partial_start(const Scan& scan) const;

 private:
  enum class Kind : uint8_t { byte_set, split, start_anchor, match };
  struct State {
    Kind kind;
    int32_t out = -1;
    int32_t out2 = -1;
    uint64_t bits[4] = {0, 0, 0, 0};  // byte_set: the bytes it accepts
    bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1u; }
  };
  friend class Compiler;

  void add_thread(std::vector<std::pair<int32_t, size_t>>& list, int32_t state, size_t start, size_t pos,
                  Scan* scan) const;

  std::vector<State> states_;
  int32_t start_ = -1;
};

}  // namespace regex_stop
