// Grammar: a context-free grammar over Unicode code points, as the GBNF parser and the JSON Schema
// translator produce it and the matcher runs it. Every rule is a list of alternatives; an
// alternative is a run of elements in `elements` that ends with an `end` element. Repetitions and
// groups are already expanded into helper rules, so only three element kinds remain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lmrt {

struct CharRange {
  uint32_t lo;  // inclusive code points
  uint32_t hi;
};

struct GrammarElement {
  enum class Kind : uint8_t { end, chars, rule };
  Kind kind = Kind::end;
  bool negated = false;      // chars: matches what is NOT in the ranges
  uint32_t rule = 0;         // rule: index into Grammar::rules
  uint32_t first_range = 0;  // chars: ranges [first_range, first_range + n_ranges) of Grammar::ranges
  uint32_t n_ranges = 0;
};

struct GrammarRule {
  std::string name;
  std::vector<uint32_t> alternatives;  // index of each alternative's first element
};

struct Grammar {
  std::vector<GrammarRule> rules;
  std::vector<GrammarElement> elements;
  std::vector<CharRange> ranges;
  uint32_t root = 0;

  bool matches(const GrammarElement& e, uint32_t cp) const {
    bool in = false;
    for (uint32_t i = 0; i < e.n_ranges && !in; ++i) {
      const CharRange& r = ranges[e.first_range + i];
      in = cp >= r.lo && cp <= r.hi;
    }
    return in != e.negated;
  }
  // True when some code point in [lo, hi] matches (used while a UTF-8 sequence is incomplete).
  bool matches_any(const GrammarElement& e, uint32_t lo, uint32_t hi) const {
    for (uint32_t i = 0; i < e.n_ranges; ++i) {
      const CharRange& r = ranges[e.first_range + i];
      const bool overlaps = r.lo <= hi && lo <= r.hi;
      if (!e.negated && overlaps) return true;
      if (e.negated && r.lo <= lo && hi <= r.hi) return false;  // the whole span is excluded
    }
    return e.negated;
  }
};

}  // namespace lmrt
