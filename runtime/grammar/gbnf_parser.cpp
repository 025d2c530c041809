// GBNF parser: recursive descent over the text, one rule body per rule id, flattened at the end.
#include "runtime/grammar/gbnf_parser.h"

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "runtime/util/utf8.h"

namespace lmrt {
namespace {

constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

using Sequence = std::vector<GrammarElement>;
using Alternatives = std::vector<Sequence>;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Status parse(Grammar* out) {
    if (text_.size() > kMaxGrammarText)
      return Error(Code::invalid_argument,
                   "gbnf: the grammar is larger than " + std::to_string(kMaxGrammarText) + " bytes");
    skip_space(true);
    while (pos_ < text_.size()) {
      LMRT_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    for (size_t id = 0; id < g_.rules.size(); ++id) {
      if (!defined_[id]) return fail_at(first_use_[id], "rule '" + g_.rules[id].name + "' is used but never defined");
    }
    const auto root = ids_.find("root");
    if (root == ids_.end()) return fail_at(pos_, "the grammar has no 'root' rule");
    g_.root = root->second;
    // Flatten every rule's alternatives into the element array.
    for (size_t id = 0; id < bodies_.size(); ++id) {
      for (const Sequence& seq : bodies_[id]) {
        g_.rules[id].alternatives.push_back(static_cast<uint32_t>(g_.elements.size()));
        g_.elements.insert(g_.elements.end(), seq.begin(), seq.end());
        g_.elements.push_back(GrammarElement{});
      }
    }
    LMRT_RETURN_IF_ERROR(check_left_recursion());
    *out = std::move(g_);
    return Status::Ok();
  }

 private:
  Status fail_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Error(Code::invalid_argument, "gbnf " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
  }
  Status fail(const std::string& what) const { return fail_at(pos_, what); }
  bool eof() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Spaces, tabs and comments; newlines too inside a group or after `|` / `::=`.
  void skip_space(bool newlines) {
    while (!eof()) {
      const char c = peek();
      if (c == ' ' || c == '\t') {
        ++pos_;
      } else if (c == '#') {
        while (!eof() && peek() != '\n') ++pos_;
      } else if (newlines && (c == '\n' || c == '\r')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(g_.rules.size()));
    if (inserted) {
      g_.rules.push_back(GrammarRule{name, {}});
      bodies_.emplace_back();
      defined_.push_back(false);
      first_use_.push_back(at);
    }
    return it->second;
  }

  uint32_t new_helper_rule(Alternatives body) {
    const std::string base = current_rule_ + "~" + std::to_string(++helper_count_);
    const uint32_t id = rule_id(base, pos_);
    defined_[id] = true;
    bodies_[id] = std::move(body);
    return id;
  }

  static GrammarElement ref(uint32_t id) {
    GrammarElement e;
    e.kind = GrammarElement::Kind::rule;
    e.rule = id;
    return e;
  }

  GrammarElement chars(const std::vector<CharRange>& ranges, bool negated) {
    GrammarElement e;
    e.kind = GrammarElement::Kind::chars;
    e.negated = negated;
    e.first_range = static_cast<uint32_t>(g_.ranges.size());
    e.n_ranges = static_cast<uint32_t>(ranges.size());
    g_.ranges.insert(g_.ranges.end(), ranges.begin(), ranges.end());
    return e;
  }

  Status parse_name(std::string* name) {
    const size_t start = pos_;
    while (!eof() && is_name_char(peek())) ++pos_;
    if (pos_ == start) return fail("expected a rule name");
    *name = std::string(text_.substr(start, pos_ - start));
    return Status::Ok();
  }

  Status parse_rule() {
    const size_t start = pos_;
    std::string name;
    LMRT_RETURN_IF_ERROR(parse_name(&name));
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, start);
    if (defined_[id]) return fail_at(start, "rule '" + name + "' is defined twice");
    defined_[id] = true;
    current_rule_ = name;
    helper_count_ = 0;
    Alternatives body;
    LMRT_RETURN_IF_ERROR(parse_alternatives(false, 0, &body));
    bodies_[id] = std::move(body);
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') {
      ++pos_;
    } else if (!eof()) {
      return fail(std::string("unexpected '") + peek() + "' (expected a newline or the end of the rule)");
    }
    return Status::Ok();
  }

  Status parse_alternatives(bool nested, int depth, Alternatives* out) {
    if (depth > kMaxGrammarNesting) return fail("groups are nested deeper than " + std::to_string(kMaxGrammarNesting));
    out->emplace_back();
    LMRT_RETURN_IF_ERROR(parse_sequence(nested, depth, &out->back()));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      out->emplace_back();
      LMRT_RETURN_IF_ERROR(parse_sequence(nested, depth, &out->back()));
    }
    return Status::Ok();
  }

  // One character of a string or class: a UTF-8 character or an escape.
  Status parse_char(uint32_t* cp) {
    if (eof()) return fail("unexpected end of the grammar");
    if (peek() != '\\') {
      const int n = utf8_sequence_length(text_.substr(pos_));
      if (n <= 0) return fail("invalid UTF-8");
      const auto b = [&](int i) { return static_cast<uint8_t>(text_[pos_ + i]); };
      if (n == 1) *cp = b(0);
      if (n == 2) *cp = ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
      if (n == 3) *cp = ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
      if (n == 4) *cp = ((b(0) & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
      pos_ += static_cast<size_t>(n);
      return Status::Ok();
    }
    ++pos_;
    const char e = peek();
    ++pos_;
    switch (e) {
      case 'n':
        *cp = '\n';
        return Status::Ok();
      case 'r':
        *cp = '\r';
        return Status::Ok();
      case 't':
        *cp = '\t';
        return Status::Ok();
      case '0':
        *cp = 0;
        return Status::Ok();
      case '\\':
      case '"':
      case '\'':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
      case '.':
        *cp = static_cast<uint8_t>(e);
        return Status::Ok();
      case 'x':
        return parse_hex(2, cp);
      case 'u':
        return parse_hex(4, cp);
      case 'U':
        return parse_hex(8, cp);
      default:
        --pos_;
        return fail(std::string("unknown escape '\\") + e + "'");
    }
  }

  Status parse_hex(int digits, uint32_t* cp) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      uint32_t d = 0;
      if (c >= '0' && c <= '9')
        d = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = static_cast<uint32_t>(c - 'A' + 10);
      else
        return fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + d;
      ++pos_;
    }
    if (v > 0x10FFFF) return fail("code point beyond U+10FFFF");
    // UTF-8 text never holds one, so a grammar that asks for it could only fail at generation.
    if (v >= 0xD800 && v <= 0xDFFF) return fail("code point in the UTF-16 surrogate range U+D800..U+DFFF");
    *cp = v;
    return Status::Ok();
  }

  Status parse_uint(uint32_t* v) {
    const size_t start = pos_;
    uint64_t n = 0;
    while (peek() >= '0' && peek() <= '9') {
      n = n * 10 + static_cast<uint64_t>(peek() - '0');
      if (n > kMaxGrammarRepetition)
        return fail_at(start, "repetition count above " + std::to_string(kMaxGrammarRepetition));
      ++pos_;
    }
    if (pos_ == start) return fail("expected a number");
    *v = static_cast<uint32_t>(n);
    return Status::Ok();
  }

  Status grow(size_t n) {
    elements_budget_ += n;
    if (elements_budget_ > kMaxGrammarElements)
      return fail("the expanded grammar exceeds " + std::to_string(kMaxGrammarElements) + " elements");
    return Status::Ok();
  }

  // Replaces seq[start..] by that operand repeated min..max times (max kUnbounded: no limit).
  Status repeat(Sequence* seq, size_t start, uint32_t min, uint32_t max) {
    Sequence operand(seq->begin() + static_cast<std::ptrdiff_t>(start), seq->end());
    seq->resize(start);
    if (operand.size() > 1) operand = {ref(new_helper_rule({operand}))};
    const GrammarElement item = operand[0];
    LMRT_RETURN_IF_ERROR(grow(min + (max == kUnbounded ? 2 : max - min) * 2));
    for (uint32_t i = 0; i < min; ++i) seq->push_back(item);
    if (max == kUnbounded) {
      // star ::= item star | (empty)
      const uint32_t star = new_helper_rule({});
      bodies_[star] = {{item, ref(star)}, {}};
      seq->push_back(ref(star));
    } else if (max > min) {
      // opt_k ::= item opt_{k-1} | (empty), opt_1 ::= item | (empty)
      uint32_t next = new_helper_rule({{item}, {}});
      for (uint32_t k = min + 1; k < max; ++k) next = new_helper_rule({{item, ref(next)}, {}});
      seq->push_back(ref(next));
    }
    return Status::Ok();
  }

  Status parse_sequence(bool nested, int depth, Sequence* seq) {
    size_t last_start = std::string::npos;  // where the last operand begins
    for (;;) {
      const char c = peek();
      if (c == '"') {
        ++pos_;
        last_start = seq->size();
        while (peek() != '"') {
          if (eof()) return fail("unterminated string");
          uint32_t cp = 0;
          LMRT_RETURN_IF_ERROR(parse_char(&cp));
          LMRT_RETURN_IF_ERROR(grow(1));
          seq->push_back(chars({{cp, cp}}, false));
        }
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        last_start = seq->size();
        bool negated = false;
        if (peek() == '^') {
          negated = true;
          ++pos_;
        }
        std::vector<CharRange> ranges;
        while (peek() != ']') {
          if (eof()) return fail("unterminated character class");
          uint32_t lo = 0, hi = 0;
          LMRT_RETURN_IF_ERROR(parse_char(&lo));
          hi = lo;
          if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
            ++pos_;
            LMRT_RETURN_IF_ERROR(parse_char(&hi));
            if (hi < lo) return fail("character range is reversed");
          }
          ranges.push_back({lo, hi});
        }
        ++pos_;
        LMRT_RETURN_IF_ERROR(grow(1));
        seq->push_back(chars(ranges, negated));
      } else if (c == '.') {
        ++pos_;
        last_start = seq->size();
        LMRT_RETURN_IF_ERROR(grow(1));
        seq->push_back(chars({}, true));
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        std::string name;
        LMRT_RETURN_IF_ERROR(parse_name(&name));
        last_start = seq->size();
        LMRT_RETURN_IF_ERROR(grow(1));
        seq->push_back(ref(rule_id(name, at)));
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        Alternatives group;
        LMRT_RETURN_IF_ERROR(parse_alternatives(true, depth + 1, &group));
        if (peek() != ')') return fail("expected ')'");
        ++pos_;
        last_start = seq->size();
        LMRT_RETURN_IF_ERROR(grow(1));
        seq->push_back(ref(new_helper_rule(std::move(group))));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last_start == std::string::npos || last_start == seq->size())
          return fail(std::string("'") + c + "' follows nothing it could repeat");
        ++pos_;
        uint32_t min = 0, max = kUnbounded;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{') {
          skip_space(nested);
          LMRT_RETURN_IF_ERROR(parse_uint(&min));
          skip_space(nested);
          max = min;
          if (peek() == ',') {
            ++pos_;
            skip_space(nested);
            max = kUnbounded;
            if (peek() != '}') LMRT_RETURN_IF_ERROR(parse_uint(&max));
            skip_space(nested);
          }
          if (peek() != '}') return fail("expected '}'");
          ++pos_;
          if (max < min) return fail("repetition {m,n} with n < m");
        }
        LMRT_RETURN_IF_ERROR(repeat(seq, last_start, min, max));
        last_start = std::string::npos;
      } else {
        return Status::Ok();
      }
      skip_space(nested);
    }
  }

  // The matcher expands rules top-down, so a rule reaching itself before consuming a character
  // would expand forever: refuse it here, naming the rule.
  Status check_left_recursion() const {
    const size_t n = g_.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (uint32_t a : g_.rules[r].alternatives) {
          bool all = true;
          for (uint32_t i = a; g_.elements[i].kind != GrammarElement::Kind::end && all; ++i)
            all = g_.elements[i].kind == GrammarElement::Kind::rule && nullable[g_.elements[i].rule];
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Edges r -> s when s can come first in r; then look for a cycle by depth-first search.
    std::vector<std::vector<uint32_t>> first(n);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t a : g_.rules[r].alternatives) {
        for (uint32_t i = a; g_.elements[i].kind == GrammarElement::Kind::rule; ++i) {
          first[r].push_back(g_.elements[i].rule);
          if (!nullable[g_.elements[i].rule]) break;
        }
      }
    }
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> stack;
    for (uint32_t start = 0; start < n; ++start) {
      if (color[start] != 0) continue;
      stack.push_back({start, 0});
      color[start] = 1;
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        if (next < first[r].size()) {
          const uint32_t s = first[r][next++];
          if (color[s] == 1)
            return fail_at(first_use_[s], "rule '" + g_.rules[s].name +
                                              "' is left-recursive (it can reach itself before any character)");
          if (color[s] == 0) {
            color[s] = 1;
            stack.push_back({s, 0});
          }
        } else {
          color[r] = 2;
          stack.pop_back();
        }
      }
    }
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<Alternatives> bodies_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::string current_rule_;
  uint32_t helper_count_ = 0;
  size_t elements_budget_ = 0;
};

}  // namespace

Status parse_gbnf(std::string_view text, Grammar* out) {
  GbnfParser parser(text);
  return parser.parse(out);
}

}  // namespace lmrt
