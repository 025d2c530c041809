// A recursive-descent parser following Jinja2's grammar (jinja2/parser.py): statements inside
// "{% %}", and expressions by precedence: conditional, or, and, not, comparison, + -, ~, * / // %,
// **, unary, then primary with postfix ., [], () and the | filter and "is" test chains.
#include "runtime/chat/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "runtime/chat/jinja_lexer.h"

namespace lmrt::jinja {
namespace {

constexpr int kMaxNesting = 100;  // hostile templates must not exhaust the stack
// Operator, postfix and filter chains ("a ~ b ~ c ...") grow the tree without recursing in the
// parser; evaluating and freeing it recurses, so its height is bounded too.
constexpr int kMaxExprDepth = 400;

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

  Body parse() {
    std::string end;
    Body body = parse_body({}, &end);
    return body;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  bool is_op(const char* op) const { return cur().type == TokenType::op && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::name && cur().value == n; }

  [[noreturn]] void fail(const std::string& what, int line = -1) const {
    throw JinjaError("template syntax error at line " + std::to_string(line < 0 ? cur().line : line) + ": " + what);
  }

  std::string describe(const Token& t) const {
    switch (t.type) {
      case TokenType::eof:
        return "end of template";
      case TokenType::block_end:
        return "end of statement block";
      case TokenType::var_end:
        return "end of print statement";
      case TokenType::text:
        return "text";
      default:
        return "'" + t.value + "'";
    }
  }

  void expect_op(const char* op) {
    if (!is_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
    ++pos_;
  }
  std::string expect_name() {
    if (cur().type != TokenType::name) fail("expected a name, got " + describe(cur()));
    return toks_[pos_++].value;
  }
  void expect(TokenType t) {
    if (cur().type != t) fail("unexpected " + describe(cur()));
    ++pos_;
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.fail("nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  // Parses statements until a block tag whose keyword is in `ends`; *end receives that keyword
  // (its block_begin and keyword are consumed, the rest of the tag is not).
  Body parse_body(const std::set<std::string>& ends, std::string* end) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& t = cur();
      if (t.type == TokenType::eof) {
        if (!ends.empty()) {
          std::string list;
          for (const auto& e : ends) list += (list.empty() ? "'" : " or '") + e + "'";
          fail("unexpected end of template, expected " + list);
        }
        *end = "";
        return body;
      }
      if (t.type == TokenType::text) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::text;
        s->line = t.line;
        s->text = t.value;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.type == TokenType::var_begin) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::output;
        s->line = t.line;
        ++pos_;
        s->expr = parse_tuple();
        expect(TokenType::var_end);
        body.push_back(std::move(s));
      } else if (t.type == TokenType::block_begin) {
        ++pos_;
        if (cur().type != TokenType::name) fail("expected a statement name, got " + describe(cur()));
        const std::string kw = cur().value;
        if (ends.count(kw)) {
          ++pos_;
          *end = kw;
          return body;
        }
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr parse_statement() {
    const int line = cur().line;
    const std::string kw = expect_name();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (kw == "if") {
      s->kind = StmtKind::if_;
      ExprPtr cond = parse_tuple();
      expect(TokenType::block_end);
      for (;;) {
        std::string end;
        Body body = parse_body({"elif", "else", "endif"}, &end);
        s->branches.emplace_back(std::move(cond), std::move(body));
        if (end == "elif") {
          cond = parse_tuple();
          expect(TokenType::block_end);
          continue;
        }
        if (end == "else") {
          expect(TokenType::block_end);
          s->else_body = parse_body({"endif"}, &end);
        }
        expect(TokenType::block_end);
        break;
      }
    } else if (kw == "for") {
      s->kind = StmtKind::for_;
      s->targets.push_back(expect_name());
      while (is_op(",")) {
        ++pos_;
        s->targets.push_back(expect_name());
      }
      if (!is_name("in")) fail("expected 'in' in a for loop, got " + describe(cur()));
      ++pos_;
      s->expr = parse_tuple(/*no_condition=*/true);
      if (is_name("if")) {
        ++pos_;
        s->filter = parse_tuple();
      }
      if (is_name("recursive")) fail("recursive for loops are not supported");
      expect(TokenType::block_end);
      std::string end;
      s->body = parse_body({"else", "endfor"}, &end);
      if (end == "else") {
        expect(TokenType::block_end);
        s->else_body = parse_body({"endfor"}, &end);
      }
      expect(TokenType::block_end);
    } else if (kw == "set") {
      const std::string first = expect_name();
      if (is_op(".")) {
        ++pos_;
        s->kind = StmtKind::set;
        s->targets.push_back(first);
        s->text = expect_name();
        expect_op("=");
        s->expr = parse_tuple();
        expect(TokenType::block_end);
      } else if (is_op("=") || is_op(",")) {
        s->kind = StmtKind::set;
        s->targets.push_back(first);
        while (is_op(",")) {
          ++pos_;
          s->targets.push_back(expect_name());
        }
        expect_op("=");
        s->expr = parse_tuple();
        expect(TokenType::block_end);
      } else {
        s->kind = StmtKind::set_block;
        s->targets.push_back(first);
        if (is_op("|")) s->expr = parse_filter_chain(make_name("", line));
        expect(TokenType::block_end);
        std::string end;
        s->body = parse_body({"endset"}, &end);
        expect(TokenType::block_end);
      }
    } else if (kw == "macro") {
      s->kind = StmtKind::macro;
      s->text = expect_name();
      parse_params(&s->params);
      expect(TokenType::block_end);
      std::string end;
      s->body = parse_body({"endmacro"}, &end);
      if (cur().type == TokenType::name) ++pos_;  // {% endmacro name %}
      expect(TokenType::block_end);
    } else if (kw == "call") {
      s->kind = StmtKind::call_block;
      if (is_op("(")) parse_params(&s->params);
      s->expr = parse_expression();
      if (s->expr->kind != ExprKind::call) fail("expected a call after 'call'", line);
      expect(TokenType::block_end);
      std::string end;
      s->body = parse_body({"endcall"}, &end);
      expect(TokenType::block_end);
    } else if (kw == "filter") {
      s->kind = StmtKind::filter_block;
      s->expr = parse_filter_chain(make_name("", line), /*first_has_pipe=*/false);
      expect(TokenType::block_end);
      std::string end;
      s->body = parse_body({"endfilter"}, &end);
      expect(TokenType::block_end);
    } else if (kw == "generation") {
      // transformers' AssistantTracker: marks assistant text for masks; renders its body unchanged.
      expect(TokenType::block_end);
      std::string end;
      Body body = parse_body({"endgeneration"}, &end);
      expect(TokenType::block_end);
      s->kind = StmtKind::if_;
      s->branches.emplace_back(literal(Value(true), line), std::move(body));
    } else if (kw == "break" || kw == "continue") {
      s->kind = kw == "break" ? StmtKind::break_ : StmtKind::continue_;
      expect(TokenType::block_end);
    } else {
      fail("unknown statement '" + kw + "'", line);
    }
    return s;
  }

  void parse_params(std::vector<Param>* params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params->empty()) expect_op(",");
      if (is_op(")")) break;
      Param p;
      p.name = expect_name();
      if (is_op("=")) {
        ++pos_;
        p.default_value = parse_expression();
      }
      params->push_back(std::move(p));
    }
    ++pos_;
  }

  ExprPtr make(ExprKind k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }
  ExprPtr make_name(const std::string& n, int line) {
    auto e = make(ExprKind::name, line);
    e->name = n;
    return e;
  }
  ExprPtr literal(Value v, int line) {
    auto e = make(ExprKind::literal, line);
    e->value = std::move(v);
    return e;
  }

  // A comma-separated list without brackets is a tuple ("{{ a, b }}", "for x in a, b").
  ExprPtr parse_tuple(bool no_condition = false) {
    const int line = cur().line;
    ExprPtr first = no_condition ? parse_or() : parse_expression();
    if (!is_op(",")) return first;
    auto t = make(ExprKind::list, line);
    t->is_tuple = true;
    t->args.push_back(std::move(first));
    while (is_op(",")) {
      ++pos_;
      if (cur().type == TokenType::block_end || cur().type == TokenType::var_end || is_op(")")) break;
      t->args.push_back(no_condition ? parse_or() : parse_expression());
    }
    return t;
  }

  ExprPtr parse_expression() {
    DepthGuard guard(*this);
    const int line = cur().line;
    ExprPtr e = parse_or();
    while (is_name("if")) {
      ++pos_;
      auto c = make(ExprKind::condition, line);
      ExprPtr cond = parse_or();
      ExprPtr otherwise;
      if (is_name("else")) {
        ++pos_;
        otherwise = parse_expression();
      }
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(otherwise));
      e = measured(std::move(c));
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = make(ExprKind::binary, line);
    b->name = op;
    b->args.push_back(std::move(l));
    b->args.push_back(std::move(r));
    return measured(std::move(b));
  }

  // Sets e's height from its children; fails when the expression is too deep to evaluate safely.
  ExprPtr measured(ExprPtr e) {
    int d = 0;
    for (const auto& a : e->args)
      if (a) d = std::max(d, a->depth);
    for (const auto& kv : e->kwargs) d = std::max(d, kv.second->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth)
      fail("expression nested deeper than " + std::to_string(kMaxExprDepth) + " levels", e->line);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const int line = cur().line;
      ++pos_;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }
  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const int line = cur().line;
      ++pos_;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }
  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      const int line = cur().line;
      ++pos_;
      auto u = make(ExprKind::unary, line);
      u->name = "not";
      u->args.push_back(parse_not());
      return measured(std::move(u));
    }
    return parse_compare();
  }
  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr e = parse_math1();
    // Chains (a < b < c) become (a < b) and (b < c) in Python; templates do not chain, so the
    // right operand is not shared and each comparison applies to the previous result.
    for (;;) {
      std::string op;
      if (cur().type == TokenType::op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                          cur().value == "<=" || cur().value == ">" || cur().value == ">=")) {
        op = cur().value;
        ++pos_;
      } else if (is_name("in")) {
        op = "in";
        ++pos_;
      } else if (is_name("not") && peek().type == TokenType::name && peek().value == "in") {
        op = "not in";
        pos_ += 2;
      } else {
        return e;
      }
      e = binary(op, std::move(e), parse_math1(), line);
    }
  }
  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const std::string op = cur().value;
      const int line = cur().line;
      ++pos_;
      e = binary(op, std::move(e), parse_concat(), line);
    }
    return e;
  }
  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const int line = cur().line;
      ++pos_;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }
  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = cur().value;
      const int line = cur().line;
      ++pos_;
      e = binary(op, std::move(e), parse_pow(), line);
    }
    return e;
  }
  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const int line = cur().line;
      ++pos_;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }
  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const int line = cur().line;
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      const std::string op = cur().value;
      ++pos_;
      e = make(ExprKind::unary, line);
      e->name = op;
      e->args.push_back(parse_unary(false));
      e = measured(std::move(e));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = cur();
    const int line = t.line;
    switch (t.type) {
      case TokenType::name: {
        ++pos_;
        if (t.value == "true" || t.value == "True") return literal(Value(true), line);
        if (t.value == "false" || t.value == "False") return literal(Value(false), line);
        if (t.value == "none" || t.value == "None") return literal(Value::none(), line);
        return make_name(t.value, line);
      }
      case TokenType::string: {
        std::string s;
        while (cur().type == TokenType::string) s += toks_[pos_++].value;  // adjacent literals join
        return literal(Value(std::move(s)), line);
      }
      case TokenType::integer: {
        ++pos_;
        int64_t v = 0;
        auto r = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
        if (r.ec != std::errc()) fail("integer literal out of range: " + t.value, line);
        return literal(Value(v), line);
      }
      case TokenType::floating: {
        ++pos_;
        double v = 0;
        std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
        return literal(Value(v), line);
      }
      case TokenType::op:
        if (t.value == "(") {
          ++pos_;
          if (is_op(")")) {
            ++pos_;
            auto empty = make(ExprKind::list, line);
            empty->is_tuple = true;
            return empty;
          }
          ExprPtr e = parse_tuple();
          expect_op(")");
          return e;
        }
        if (t.value == "[") {
          ++pos_;
          auto l = make(ExprKind::list, line);
          while (!is_op("]")) {
            if (!l->args.empty()) expect_op(",");
            if (is_op("]")) break;
            l->args.push_back(parse_expression());
          }
          ++pos_;
          return measured(std::move(l));
        }
        if (t.value == "{") {
          ++pos_;
          auto d = make(ExprKind::dict, line);
          while (!is_op("}")) {
            if (!d->args.empty()) expect_op(",");
            if (is_op("}")) break;
            d->args.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
          }
          ++pos_;
          return measured(std::move(d));
        }
        break;
      default:
        break;
    }
    fail("unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    for (;;) {
      const int line = cur().line;
      if (is_op(".")) {
        ++pos_;
        auto a = make(ExprKind::attribute, line);
        if (cur().type == TokenType::name) {
          a->name = toks_[pos_++].value;
        } else if (cur().type == TokenType::integer) {
          a->kind = ExprKind::item;
          a->args.push_back(std::move(e));
          int64_t index = 0;
          const std::string& digits = toks_[pos_++].value;
          if (std::from_chars(digits.data(), digits.data() + digits.size(), index).ec != std::errc())
            fail("index out of range: " + digits, line);
          a->args.push_back(literal(Value(index), line));
          e = measured(std::move(a));
          continue;
        } else {
          fail("expected an attribute name after '.', got " + describe(cur()));
        }
        a->args.push_back(std::move(e));
        e = measured(std::move(a));
      } else if (is_op("[")) {
        ++pos_;
        e = measured(parse_subscript(std::move(e), line));
      } else if (is_op("(")) {
        e = measured(parse_call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr obj, int line) {
    ExprPtr parts[3];
    bool is_slice = false;
    int idx = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        is_slice = true;
        if (++idx > 2) fail("too many ':' in a slice");
        ++pos_;
        continue;
      }
      if (parts[idx]) fail("expected ']' or ':', got " + describe(cur()));
      parts[idx] = idx == 0 && !is_slice ? parse_tuple() : parse_expression();
    }
    ++pos_;
    if (!is_slice) {
      if (!parts[0]) fail("empty subscript", line);
      auto it = make(ExprKind::item, line);
      it->args.push_back(std::move(obj));
      it->args.push_back(std::move(parts[0]));
      return it;
    }
    auto s = make(ExprKind::slice, line);
    s->args.push_back(std::move(obj));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  // "(" args ")" after a callee; fills positional args after `first` and keyword args.
  void parse_args(Expr* into) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
      if (cur().type == TokenType::name && peek().type == TokenType::op && peek().value == "=") {
        std::string k = toks_[pos_].value;
        pos_ += 2;
        into->kwargs.emplace_back(std::move(k), parse_expression());
      } else {
        into->args.push_back(parse_expression());
      }
    }
    ++pos_;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto c = make(ExprKind::call, cur().line);
    c->args.push_back(std::move(callee));
    parse_args(c.get());
    return c;
  }

  ExprPtr parse_filter_chain(ExprPtr operand, bool first_has_pipe = true) {
    bool first = true;
    while ((first && !first_has_pipe) || is_op("|")) {
      if (!(first && !first_has_pipe)) ++pos_;
      first = false;
      operand = parse_one_filter(std::move(operand));
    }
    return operand;
  }

  ExprPtr parse_one_filter(ExprPtr operand) {
    auto f = make(ExprKind::filter, cur().line);
    f->name = expect_name();
    while (is_op(".")) {
      ++pos_;
      f->name += "." + expect_name();
    }
    f->args.push_back(std::move(operand));
    if (is_op("(")) parse_args(f.get());
    return measured(std::move(f));
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        ++pos_;
        e = parse_one_filter(std::move(e));
      } else if (is_name("is")) {
        const int line = cur().line;
        ++pos_;
        auto t = make(ExprKind::test, line);
        if (is_name("not")) {
          t->negated = true;
          ++pos_;
        }
        t->name = expect_name();
        while (is_op(".")) {
          ++pos_;
          t->name += "." + expect_name();
        }
        t->args.push_back(std::move(e));
        if (is_op("(")) {
          parse_args(t.get());
        } else if ((cur().type == TokenType::name && cur().value != "else" && cur().value != "or" &&
                    cur().value != "and" && cur().value != "if" && cur().value != "is" && cur().value != "in" &&
                    cur().value != "not") ||
                   cur().type == TokenType::string || cur().type == TokenType::integer ||
                   cur().type == TokenType::floating || is_op("[") || is_op("{")) {
          // "is divisibleby 3", "is sameas none", "is equalto 'x'"
          ExprPtr arg = parse_primary();
          arg = parse_postfix(std::move(arg));
          t->args.push_back(std::move(arg));
        }
        e = measured(std::move(t));
      } else if (is_op("(")) {
        e = measured(parse_call(std::move(e)));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(const std::string& source) { return Parser(lex_template(source)).parse(); }

}  // namespace lmrt::jinja
