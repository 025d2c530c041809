// The syntax tree of a parsed template: expressions and statements, each with its source line.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/chat/jinja_value.h"

namespace lmrt::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  literal,    // value
  name,       // name
  list,       // args (a tuple literal is a list too)
  dict,       // args as key, value, key, value...
  attribute,  // args[0].name
  item,       // args[0][args[1]]
  slice,      // args[0][args[1]:args[2]:args[3]] (null for a missing part)
  call,       // args[0](args[1..], kwargs)
  filter,     // args[0] | name(args[1..], kwargs)
  test,       // args[0] is [not] name(args[1..])
  unary,      // name ("not", "-", "+") args[0]
  binary,     // args[0] name args[1]: and or + - * / // % ** ~ == != < <= > >= in "not in"
  condition,  // args[1] if args[0] else args[2] (args[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;   // "is not"
  bool is_tuple = false;  // a list expression written as a tuple: (a, b), a, b
  int depth = 1;          // height of this subtree (the parser bounds it)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class StmtKind {
  text,          // text
  output,        // {{ expr }}
  if_,           // branches, else_body
  for_,          // targets in expr [if filter] body [else else_body]
  set,           // targets (one name, a tuple, or "ns.attr" as name + attr) = expr
  set_block,     // {% set name %}body{% endset %}, optional filters in expr (operand: a name "")
  macro,         // name(params) body
  call_block,    // {% call(params) expr %} body: `caller` inside the called macro
  filter_block,  // {% filter f %} body
  break_,
  continue_,
};

struct Param {
  std::string name;
  ExprPtr default_value;  // null when required
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;  // text; the macro name; the set attribute for "ns.attr"
  ExprPtr expr;      // output / for iterable / set value / call expression / filter chain
  ExprPtr filter;    // for ... if filter
  std::vector<std::string> targets;
  std::vector<std::pair<ExprPtr, Body>> branches;  // if/elif
  Body body;
  Body else_body;
  std::vector<Param> params;
};

}  // namespace lmrt::jinja
