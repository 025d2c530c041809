// Renders a parsed template: Jinja2's scoping (for loops and macros open a scope, "set" inside
// a loop does not leak out, namespaces are shared objects), its Undefined, loop controls, macros
// with `caller`, and bounds on work, output size and call depth so that no template can hang or
// exhaust memory.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/chat/jinja_ast.h"
#include "runtime/chat/jinja_value.h"

namespace lmrt::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;  // a prompt is far smaller than any context
  uint64_t max_steps = 50'000'000;             // expression and statement evaluations
  int max_call_depth = 100;                    // nested macro calls
};

class Interpreter {
 public:
  explicit Interpreter(RenderLimits limits = {});

  // Renders `body` with `variables` (and the built-in globals). Throws JinjaError.
  std::string render(const Body& body, const Dict& variables);
  // The same, with the byte ranges of the output that came from the caller's data.
  TaintedText render_with_provenance(const Body& body, const Dict& variables);

  // Calls a callable value (used by filters such as map and by the built-ins).
  Value call(const Value& fn, CallArgs& args, int line);
  // A filter or test by name applied to a value (map / select use these).
  Value apply_filter(const std::string& name, const Value& operand, CallArgs& args, int line);
  bool apply_test(const std::string& name, const Value& operand, CallArgs& args, int line);
  bool has_filter(const std::string& name) const;
  bool has_test(const std::string& name) const;

  // Attribute and item access with Jinja2's rules (dict methods, Undefined for a missing key).
  Value get_attr(const Value& obj, const std::string& name);
  Value get_item(const Value& obj, const Value& key);

  // Adds `n` bytes of output; throws when the output limit is passed.
  void charge_output(size_t n);

 private:
  using Frame = std::unordered_map<std::string, Value>;
  enum class Flow { normal, break_, continue_ };

  Flow exec_body(const Body& body, TaintedText& out);
  Flow exec(const Stmt& s, TaintedText& out);
  void exec_for(const Stmt& s, TaintedText& out);
  Value eval(const Expr& e);
  Value eval_binary(const Expr& e);
  Value eval_call(const Expr& e);
  void eval_args(const Expr& e, size_t first, CallArgs* args);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  Value make_macro(const std::string& name, const std::vector<Param>& params, const Body& body);
  void step();

  RenderLimits limits_;
  std::vector<std::shared_ptr<Frame>> scopes_;  // globals, template root, then inner scopes
  size_t output_bytes_ = 0;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
  int loop_depth_ = 0;
};

// Python arithmetic on template values ("+", "-", "*", "/", "//", "%", "**").
Value arithmetic(const std::string& op, const Value& a, const Value& b);
// Bytes [begin, begin + n) of string s, with their caller ranges.
Value substring(const Value& s, size_t begin, size_t n);
// Python's len() for str (code points), list and dict; throws for other types.
int64_t python_len(const Value& v);
// The items iterating `v` yields (a dict yields its keys, a str its characters, Undefined nothing).
List iterate(const Value& v);

}  // namespace lmrt::jinja
