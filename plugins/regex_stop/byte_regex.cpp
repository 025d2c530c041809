#include "byte_regex.h"

#include <array>
#include <utility>

namespace regex_stop {
namespace {

using Bits = std::array<uint64_t, 4>;

void set_bit(Bits& b, unsigned c) { b[c >> 6] |= uint64_t{1} << (c & 63); }
void set_range(Bits& b, unsigned lo, unsigned hi) {
  for (unsigned c = lo; c <= hi; ++c) set_bit(b, c);
}
bool is_alpha(unsigned c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
void fold_case(Bits& b) {
  for (unsigned c = 'a'; c <= 'z'; ++c) {
    const unsigned u = c - 'a' + 'A';
    const bool any = ((b[c >> 6] >> (c & 63)) & 1u) || ((b[u >> 6] >> (u & 63)) & 1u);
    if (any) {
      set_bit(b, c);
      set_bit(b, u);
    }
  }
}

// Parse tree.
struct Node {
  enum class T { set, concat, alt, repeat, anchor } t = T::concat;
  Bits bits{};
  std::vector<Node> kids;
  int min = 0, max = 0;  // repeat; max -1 = unbounded
};

Node set_node(const Bits& b) {
  Node n;
  n.t = Node::T::set;
  n.bits = b;
  return n;
}

// One whole non-ASCII UTF-8 character (2-, 3- or 4-byte form).
Node any_multibyte() {
  Bits cont{}, l2{}, l3{}, l4{};
  set_range(cont, 0x80, 0xBF);
  set_range(l2, 0xC2, 0xDF);
  set_range(l3, 0xE0, 0xEF);
  set_range(l4, 0xF0, 0xF4);
  Node alt;
  alt.t = Node::T::alt;
  for (int len = 2; len <= 4; ++len) {
    Node seq;
    seq.kids.push_back(set_node(len == 2 ? l2 : len == 3 ? l3 : l4));
    for (int i = 1; i < len; ++i) seq.kids.push_back(set_node(cont));
    alt.kids.push_back(std::move(seq));
  }
  return alt;
}

// ASCII bytes in `ascii` or (when with_multibyte) any non-ASCII character.
Node ascii_or_multibyte(const Bits& ascii, bool with_multibyte) {
  if (!with_multibyte) return set_node(ascii);
  Node alt;
  alt.t = Node::T::alt;
  alt.kids.push_back(set_node(ascii));
  alt.kids.push_back(any_multibyte());
  return alt;
}

Bits ascii_complement(const Bits& b) {
  Bits out{};
  for (unsigned c = 0; c < 128; ++c)
    if (!((b[c >> 6] >> (c & 63)) & 1u)) set_bit(out, c);
  return out;
}

class Parser {
 public:
  Parser(std::string_view p, bool icase) : p_(p), icase_(icase) {}

  bool parse(Node* out, std::string* error) {
    *out = alt();
    if (error_.empty() && i_ < p_.size()) fail("unbalanced ')'");
    if (!error_.empty()) {
      *error = error_ + " (at byte " + std::to_string(i_) + " of the pattern)";
      return false;
    }
    return true;
  }

 private:
  bool more() const { return i_ < p_.size() && error_.empty(); }
  void fail(const std::string& m) {
    if (error_.empty()) error_ = m;
  }

  Node alt() {
    Node first = concat();
    if (!(more() && p_[i_] == '|')) return first;
    Node n;
    n.t = Node::T::alt;
    n.kids.push_back(std::move(first));
    while (more() && p_[i_] == '|') {
      ++i_;
      n.kids.push_back(concat());
    }
    return n;
  }

  Node concat() {
    Node n;
    while (more() && p_[i_] != '|' && p_[i_] != ')') n.kids.push_back(repeat());
    return n;
  }

  bool number(int* out) {
    size_t start = i_;
    long v = 0;
    while (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9' && v <= 100000) v = v * 10 + (p_[i_++] - '0');
    *out = static_cast<int>(v);
    return i_ > start && v <= 1000;
  }

  Node repeat() {
    Node atom_node = atom();
    while (more()) {
      const char c = p_[i_];
      int lo = 0, hi = 0;
      if (c == '*') {
        lo = 0, hi = -1, ++i_;
      } else if (c == '+') {
        lo = 1, hi = -1, ++i_;
      } else if (c == '?') {
        lo = 0, hi = 1, ++i_;
      } else if (c == '{') {
        ++i_;
        if (!number(&lo)) return fail("expected a count (0..1000) after '{'"), atom_node;
        hi = lo;
        if (i_ < p_.size() && p_[i_] == ',') {
          ++i_;
          hi = -1;
          if (i_ < p_.size() && p_[i_] != '}' && (!number(&hi) || hi < lo))
            return fail("bad upper count in {m,n}"), atom_node;
        }
        if (i_ >= p_.size() || p_[i_] != '}') return fail("expected '}'"), atom_node;
        ++i_;
      } else {
        break;
      }
      if (atom_node.t == Node::T::anchor) return fail("'^' cannot be repeated"), atom_node;
      if (i_ < p_.size() && p_[i_] == '?') ++i_;  // lazy: same first match for a stop
      Node r;
      r.t = Node::T::repeat;
      r.min = lo;
      r.max = hi;
      r.kids.push_back(std::move(atom_node));
      atom_node = std::move(r);
    }
    return atom_node;
  }

  // \d \w \s (and upper-case complements): fills bits; returns false for other letters.
  bool class_escape(char c, Bits* b, bool* complement) {
    Bits x{};
    switch (c | 0x20) {
      case 'd':
        set_range(x, '0', '9');
        break;
      case 'w':
        set_range(x, '0', '9'), set_range(x, 'a', 'z'), set_range(x, 'A', 'Z'), set_bit(x, '_');
        break;
      case 's':
        for (char s : {' ', '\t', '\n', '\r', '\f', '\v'}) set_bit(x, static_cast<unsigned char>(s));
        break;
      default:
        return false;
    }
    *complement = (c >= 'A' && c <= 'Z');
    *b = *complement ? ascii_complement(x) : x;
    return true;
  }

  // A single-byte escape (after the backslash): \n \t ... \xHH or escaped punctuation.
  bool char_escape(unsigned* out) {
    const char c = p_[i_++];
    switch (c) {
      case 'n':
        return *out = '\n', true;
      case 'r':
        return *out = '\r', true;
      case 't':
        return *out = '\t', true;
      case 'f':
        return *out = '\f', true;
      case 'v':
        return *out = '\v', true;
      case 'x': {
        unsigned v = 0;
        for (int k = 0; k < 2; ++k) {
          if (i_ >= p_.size()) return false;
          const char h = p_[i_++];
          v = v * 16 + (h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : 99);
          if (v >= 256) return false;
        }
        return *out = v, true;
      }
      default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return false;
        if (static_cast<unsigned char>(c) >= 0x80) return false;
        return *out = static_cast<unsigned char>(c), true;
    }
  }

  Node literal(unsigned c) {
    Bits b{};
    set_bit(b, c);
    if (icase_ && is_alpha(c)) fold_case(b);
    return set_node(b);
  }

  Node atom() {
    const unsigned char c = static_cast<unsigned char>(p_[i_]);
    switch (c) {
      case '(': {
        ++i_;
        if (p_.substr(i_, 2) == "?:")
          i_ += 2;
        else if (i_ < p_.size() && p_[i_] == '?')
          return fail("only (?: ) groups are supported"), Node{};
        Node inner = alt();
        if (i_ >= p_.size() || p_[i_] != ')') return fail("missing ')'"), inner;
        ++i_;
        return inner;
      }
      case '[':
        ++i_;
        return char_class();
      case '.': {
        ++i_;
        Bits b{};
        set_range(b, 0, 127);
        b['\n' >> 6] &= ~(uint64_t{1} << ('\n' & 63));
        return ascii_or_multibyte(b, true);
      }
      case '^': {
        ++i_;
        Node n;
        n.t = Node::T::anchor;
        return n;
      }
      case '$':
        return fail("'$' is not supported: streamed text has no end to anchor to"), Node{};
      case '*':
      case '+':
      case '?':
      case '{':
        return fail(std::string("nothing to repeat before '") + static_cast<char>(c) + "'"), Node{};
      case '\\': {
        ++i_;
        if (i_ >= p_.size()) return fail("pattern ends with a backslash"), Node{};
        Bits b{};
        bool complement = false;
        if (class_escape(p_[i_], &b, &complement)) {
          ++i_;
          if (icase_) fold_case(b);
          return ascii_or_multibyte(b, complement);
        }
        unsigned v = 0;
        if (!char_escape(&v)) return fail("unsupported escape"), Node{};
        return literal(v);
      }
      default:
        break;
    }
    if (c < 0x80) {
      ++i_;
      return literal(c);
    }
    // A UTF-8 character is one atom, so a quantifier applies to all of it.
    const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || i_ + len > p_.size()) return fail("invalid UTF-8 in the pattern"), Node{};
    Node seq;
    for (size_t k = 0; k < len; ++k) {
      const unsigned char b = static_cast<unsigned char>(p_[i_ + k]);
      if (k > 0 && (b & 0xC0) != 0x80) return fail("invalid UTF-8 in the pattern"), Node{};
      seq.kids.push_back(literal(b));
    }
    i_ += len;
    return seq;
  }

  Node char_class() {
    bool negate = false;
    if (i_ < p_.size() && p_[i_] == '^') negate = true, ++i_;
    Bits b{};
    bool first = true;
    for (;;) {
      if (i_ >= p_.size()) return fail("missing ']'"), Node{};
      unsigned char c = static_cast<unsigned char>(p_[i_]);
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      unsigned lo = 0;
      if (c == '\\') {
        ++i_;
        if (i_ >= p_.size()) return fail("missing ']'"), Node{};
        Bits e{};
        bool complement = false;
        if (class_escape(p_[i_], &e, &complement)) {
          ++i_;
          for (int k = 0; k < 4; ++k) b[k] |= e[k];
          continue;
        }
        if (!char_escape(&lo)) return fail("unsupported escape in a class"), Node{};
      } else {
        if (c >= 0x80) return fail("a class may hold only ASCII characters"), Node{};
        lo = c;
        ++i_;
      }
      unsigned hi = lo;
      if (i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        unsigned char h = static_cast<unsigned char>(p_[i_]);
        if (h == '\\') {
          ++i_;
          if (i_ >= p_.size() || !char_escape(&hi)) return fail("bad range end"), Node{};
        } else {
          if (h >= 0x80) return fail("a class may hold only ASCII characters"), Node{};
          hi = h;
          ++i_;
        }
        if (hi < lo) return fail("reversed range in a class"), Node{};
      }
      set_range(b, lo, hi);
    }
    if (icase_) fold_case(b);
    if (!negate) return set_node(b);
    return ascii_or_multibyte(ascii_complement(b), true);
  }

  std::string_view p_;
  bool icase_;
  size_t i_ = 0;
  std::string error_;
};

constexpr size_t kMaxStates = 50000;

}  // namespace

class Compiler {
 public:
  explicit Compiler(ByteRegex* re) : re_(re) {}
  bool too_big = false;

  int32_t state(ByteRegex::Kind k, int32_t out, int32_t out2) {
    if (re_->states_.size() >= kMaxStates) {
      too_big = true;
      return out;
    }
    ByteRegex::State s;
    s.kind = k;
    s.out = out;
    s.out2 = out2;
    re_->states_.push_back(s);
    return static_cast<int32_t>(re_->states_.size() - 1);
  }

  // Compiles back to front: returns the entry state of `n` followed by `next`.
  int32_t emit(const Node& n, int32_t next) {
    if (too_big) return next;
    switch (n.t) {
      case Node::T::set: {
        const int32_t s = state(ByteRegex::Kind::byte_set, next, -1);
        if (!too_big) std::copy(n.bits.begin(), n.bits.end(), re_->states_[s].bits);
        return s;
      }
      case Node::T::anchor:
        return state(ByteRegex::Kind::start_anchor, next, -1);
      case Node::T::concat: {
        int32_t cur = next;
        for (size_t k = n.kids.size(); k-- > 0;) cur = emit(n.kids[k], cur);
        return cur;
      }
      case Node::T::alt: {
        int32_t cur = emit(n.kids.back(), next);
        for (size_t k = n.kids.size() - 1; k-- > 0;) cur = state(ByteRegex::Kind::split, emit(n.kids[k], next), cur);
        return cur;
      }
      case Node::T::repeat: {
        const Node& x = n.kids[0];
        int32_t cur = next;
        if (n.max < 0) {
          const int32_t loop = state(ByteRegex::Kind::split, -1, next);
          if (too_big) return next;
          const int32_t body = emit(x, loop);
          re_->states_[loop].out = body;
          cur = loop;
        } else {
          for (int k = 0; k < n.max - n.min && !too_big; ++k) cur = state(ByteRegex::Kind::split, emit(x, cur), next);
        }
        for (int k = 0; k < n.min && !too_big; ++k) cur = emit(x, cur);
        return cur;
      }
    }
    return next;
  }

 private:
  ByteRegex* re_;
};

bool ByteRegex::compile(std::string_view pattern, bool ignore_case, std::string* error) {
  states_.clear();
  if (pattern.empty()) return *error = "the pattern is empty", false;
  Node tree;
  Parser parser(pattern, ignore_case);
  if (!parser.parse(&tree, error)) return false;
  Compiler c(this);
  const int32_t match = c.state(Kind::match, -1, -1);
  start_ = c.emit(tree, match);
  if (c.too_big) return *error = "the pattern is too large (over 50000 states)", false;
  Scan probe;
  probe.started = true;
  probe.generation = 1;
  add_thread(probe.threads, start_, 0, 0, &probe);
  if (probe.matched) return *error = "the pattern matches empty text, so it would stop at once", false;
  return true;
}

void ByteRegex::add_thread(std::vector<std::pair<int32_t, size_t>>& list, int32_t state, size_t start, size_t pos,
                           Scan* scan) const {
  if (scan->mark.size() != states_.size()) scan->mark.assign(states_.size(), 0);
  std::vector<int32_t>& stack = scan->stack;
  stack.clear();
  stack.push_back(state);
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    if (s < 0 || scan->mark[s] == scan->generation) continue;
    scan->mark[s] = scan->generation;
    const State& st = states_[s];
    switch (st.kind) {
      case Kind::byte_set:
        list.emplace_back(s, start);
        break;
      case Kind::split:
        stack.push_back(st.out2);
        stack.push_back(st.out);
        break;
      case Kind::start_anchor:
        if (pos == 0) stack.push_back(st.out);
        break;
      case Kind::match:
        if (!scan->matched) {
          scan->matched = true;
          scan->match_start = start;
          scan->match_end = pos;
        }
        break;
    }
  }
}

bool ByteRegex::feed(std::string_view text, Scan* scan) const {
  if (!scan->started) {
    *scan = Scan{};
    scan->started = true;
    ++scan->generation;
    add_thread(scan->threads, start_, 0, 0, scan);
  }
  while (!scan->matched && scan->pos < text.size()) {
    const uint8_t b = static_cast<uint8_t>(text[scan->pos]);
    const size_t next_pos = scan->pos + 1;
    ++scan->generation;
    if (scan->generation == 0) {  // wrapped: old marks could collide
      std::fill(scan->mark.begin(), scan->mark.end(), 0);
      scan->generation = 1;
    }
    scan->next.clear();
    for (const auto& [s, start] : scan->threads) {
      if (states_[s].has(b)) add_thread(scan->next, states_[s].out, start, next_pos, scan);
    }
    add_thread(scan->next, start_, next_pos, next_pos, scan);
    scan->threads.swap(scan->next);
    scan->pos = next_pos;
  }
  return scan->matched;
}

size_t ByteRegex::partial_start(const Scan& scan) const {
  // Threads are kept in order of their start, so the first is the earliest.
  if (scan.threads.empty()) return scan.pos;
  return std::min(scan.threads.front().second, scan.pos);
}

}  // namespace regex_stop
