// Statement execution and expression evaluation with Jinja2's semantics.
#include "runtime/chat/jinja_interpreter.h"

#include <cmath>

#include "runtime/chat/jinja_builtins.h"

namespace lmrt::jinja {
namespace {

[[noreturn]] void fail_undefined(const Value& v) {
  throw JinjaError(v.undefined_hint().empty() ? "an undefined value was used" : v.undefined_hint());
}

bool has_line_prefix(const std::string& m) { return m.rfind("line ", 0) == 0 || m.rfind("template ", 0) == 0; }

int64_t normalize_index(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// Python's slice of n items: the indices it selects.
std::vector<int64_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_v) {
  int64_t step = 1;
  if (!step_v.is_none() && !step_v.is_undefined()) {
    if (!step_v.is_int()) throw JinjaError("slice indices must be integers");
    step = step_v.as_int();
    if (step == 0) throw JinjaError("slice step cannot be zero");
  }
  auto bound = [&](const Value& v, int64_t dflt) -> int64_t {
    if (v.is_none() || v.is_undefined()) return dflt;
    if (!v.is_int() && !v.is_bool()) throw JinjaError("slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i += n;
    if (step > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t lo = bound(start, step > 0 ? 0 : n - 1);
  const int64_t hi = bound(stop, step > 0 ? n : -1);
  std::vector<int64_t> idx;
  if (step > 0)
    for (int64_t i = lo; i < hi; i += step) idx.push_back(i);
  else
    for (int64_t i = lo; i > hi; i += step) idx.push_back(i);
  return idx;
}

}  // namespace

Value substring(const Value& s, size_t begin, size_t n) {
  TaintedText t;
  t.append_part(s, begin, n);
  return std::move(t).value();
}

int64_t python_len(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::string:
      return static_cast<int64_t>(utf8_chars(v.str()).size());
    case Value::Kind::list:
      return static_cast<int64_t>(v.list().size());
    case Value::Kind::dict:
    case Value::Kind::namespace_:
      return static_cast<int64_t>(v.dict().items.size());
    case Value::Kind::undefined:
      return 0;
    default:
      throw JinjaError(std::string("object of type '") + v.type_name() + "' has no len()");
  }
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::undefined:
      return {};
    case Value::Kind::list:
      return v.list();
    case Value::Kind::dict: {
      List keys;
      for (const auto& kv : v.dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::string: {
      List chars;
      size_t offset = 0;
      for (const auto& c : utf8_chars(v.str())) {
        chars.push_back(substring(v, offset, c.size()));
        offset += c.size();
      }
      return chars;
    }
    default:
      throw JinjaError(std::string("'") + v.type_name() + "' object is not iterable");
  }
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  auto unsupported = [&]() -> Value {
    throw JinjaError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
  };
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() || b.is_markup()) {  // Markup + str escapes the plain side
        Value m = Value::markup((a.is_markup() ? a.str() : html_escape(a.str())) +
                                (b.is_markup() ? b.str() : html_escape(b.str())));
        return a.holds_caller_data() || b.holds_caller_data() ? as_caller_data(m) : m;
      }
      TaintedText t;
      t.append(a);
      t.append(b);
      return std::move(t).value();
    }
    if (a.is_list() && b.is_list()) {
      List l = a.list();
      l.insert(l.end(), b.list().begin(), b.list().end());
      return Value(std::move(l));
    }
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_list() ? &a : b.is_string() || b.is_list() ? &b : nullptr;
    const Value* count = seq == &a ? &b : &a;
    if (seq != nullptr && (count->is_int() || count->is_bool())) {
      const int64_t n = std::max<int64_t>(0, count->as_int());
      const int64_t unit =
          seq->is_string() ? static_cast<int64_t>(seq->str().size()) : static_cast<int64_t>(seq->list().size());
      if (unit > 0 && n > (int64_t{64} << 20) / unit) throw JinjaError("repeated sequence is too large");
      if (seq->is_string()) {
        TaintedText t;
        for (int64_t i = 0; i < n; ++i) t.append(*seq);
        return std::move(t).value();
      }
      List l;
      for (int64_t i = 0; i < n; ++i) l.insert(l.end(), seq->list().begin(), seq->list().end());
      return Value(std::move(l));
    }
  }
  if (!a.is_number() || !b.is_number()) return unsupported();
  const bool ints = !a.is_float() && !b.is_float();
  if (ints) {
    const int64_t x = a.as_int(), y = b.as_int();
    int64_t r = 0;
    if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
    if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
    if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
    if (op == "//" || op == "%") {
      if (y == 0) throw JinjaError("integer division or modulo by zero");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return op == "//" ? Value(q) : Value(m);
    }
    if (op == "**" && y >= 0) {
      int64_t acc = 1;
      bool overflow = false;
      for (int64_t i = 0; i < y && !overflow; ++i) overflow = __builtin_mul_overflow(acc, x, &acc);
      if (!overflow) return Value(acc);
    }
  }
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0) throw JinjaError("division by zero");
    return Value(x / y);
  }
  if (op == "//") {
    if (y == 0) throw JinjaError("float floor division by zero");
    return Value(std::floor(x / y));
  }
  if (op == "%") {
    if (y == 0) throw JinjaError("float modulo");
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  if (op == "**") return Value(std::pow(x, y));
  return unsupported();
}

Interpreter::Interpreter(RenderLimits limits) : limits_(limits) {}

void Interpreter::step() {
  if (++steps_ > limits_.max_steps)
    throw JinjaError("template rendering exceeded " + std::to_string(limits_.max_steps) + " evaluation steps");
}

void Interpreter::charge_output(size_t n) {
  output_bytes_ += n;
  if (output_bytes_ > limits_.max_output_bytes)
    throw JinjaError("template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
}

std::string Interpreter::render(const Body& body, const Dict& variables) {
  return render_with_provenance(body, variables).text;
}

TaintedText Interpreter::render_with_provenance(const Body& body, const Dict& variables) {
  auto globals = std::make_shared<Frame>();
  Dict g;
  add_globals(g);
  for (auto& [k, v] : g.items) (*globals)[k.str()] = v;
  auto root = std::make_shared<Frame>();
  for (const auto& [k, v] : variables.items)
    if (k.is_string()) (*root)[k.str()] = v;
  scopes_ = {globals, root};
  TaintedText out;
  if (exec_body(body, out) != Flow::normal) throw JinjaError("'break' or 'continue' outside a for loop");
  return out;
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = (*it)->find(name);
    if (f != (*it)->end()) return f->second;
  }
  return Value::undefined("'" + name + "' is undefined");
}

void Interpreter::assign(const std::string& name, Value v) { (*scopes_.back())[name] = std::move(v); }

Interpreter::Flow Interpreter::exec_body(const Body& body, TaintedText& out) {
  for (const auto& s : body) {
    Flow f = exec(*s, out);
    if (f != Flow::normal) return f;
  }
  return Flow::normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, TaintedText& out) {
  step();
  try {
    switch (s.kind) {
      case StmtKind::text:
        charge_output(s.text.size());
        out.append(s.text, false);
        return Flow::normal;
      case StmtKind::output: {
        const Value text = to_text(eval(*s.expr));
        charge_output(text.str().size());
        out.append(text);
        return Flow::normal;
      }
      case StmtKind::if_:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond).truthy()) return exec_body(body, out);
        return exec_body(s.else_body, out);
      case StmtKind::for_:
        exec_for(s, out);
        return Flow::normal;
      case StmtKind::set: {
        Value v = eval(*s.expr);
        if (!s.text.empty()) {  // ns.attr = value
          Value ns = lookup(s.targets[0]);
          if (!ns.is_namespace())
            throw JinjaError("cannot assign attribute '" + s.text + "' on non-namespace object '" + s.targets[0] + "'");
          if (holds_namespace(v)) throw JinjaError("a namespace may not hold another namespace");
          ns.mutable_dict().set(Value(s.text), std::move(v));
        } else if (s.targets.size() == 1) {
          assign(s.targets[0], std::move(v));
        } else {
          List items = iterate(v);
          if (items.size() != s.targets.size())
            throw JinjaError("cannot unpack " + std::to_string(items.size()) + " values into " +
                             std::to_string(s.targets.size()) + " names");
          for (size_t i = 0; i < items.size(); ++i) assign(s.targets[i], items[i]);
        }
        return Flow::normal;
      }
      case StmtKind::set_block: {
        TaintedText text;
        exec_body(s.body, text);
        Value v = std::move(text).value();
        if (s.expr) {
          // The filter chain's innermost operand is the placeholder name "".
          assign("", v);
          v = eval(*s.expr);
          scopes_.back()->erase("");
        }
        assign(s.targets[0], std::move(v));
        return Flow::normal;
      }
      case StmtKind::macro:
        assign(s.text, make_macro(s.text, s.params, s.body));
        return Flow::normal;
      case StmtKind::call_block: {
        Value caller = make_macro("caller", s.params, s.body);
        const Expr& call = *s.expr;
        Value fn = eval(*call.args[0]);
        CallArgs args;
        eval_args(call, 1, &args);
        args.keywords.emplace_back("caller", caller);
        const Value text = to_text(this->call(fn, args, s.line));
        charge_output(text.str().size());
        out.append(text);
        return Flow::normal;
      }
      case StmtKind::filter_block: {
        TaintedText text;
        exec_body(s.body, text);
        assign("", std::move(text).value());
        const Value result = to_text(eval(*s.expr));
        scopes_.back()->erase("");
        charge_output(result.str().size());
        out.append(result);
        return Flow::normal;
      }
      case StmtKind::break_:
      case StmtKind::continue_:
        if (loop_depth_ == 0) throw JinjaError("'break' or 'continue' outside a for loop");
        return s.kind == StmtKind::break_ ? Flow::break_ : Flow::continue_;
    }
  } catch (const JinjaError& e) {
    if (e.raised() || has_line_prefix(e.what())) throw;
    throw JinjaError("line " + std::to_string(s.line) + ": " + e.what());
  }
  return Flow::normal;
}

void Interpreter::exec_for(const Stmt& s, TaintedText& out) {
  const Value iterable = eval(*s.expr);
  if (iterable.is_none()) throw JinjaError("'NoneType' object is not iterable");
  List all = iterate(iterable);
  auto bind = [&](const Value& item) {
    if (s.targets.size() == 1) {
      assign(s.targets[0], item);
      return;
    }
    List parts = iterate(item);
    if (parts.size() != s.targets.size())
      throw JinjaError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                       std::to_string(s.targets.size()) + " loop variables");
    for (size_t i = 0; i < parts.size(); ++i) assign(s.targets[i], parts[i]);
  };
  struct ScopePop {
    std::vector<std::shared_ptr<Frame>>& scopes;
    ~ScopePop() { scopes.pop_back(); }
  };
  List items;
  if (s.filter) {
    for (const Value& item : all) {
      scopes_.push_back(std::make_shared<Frame>());
      ScopePop pop{scopes_};
      bind(item);
      if (eval(*s.filter).truthy()) items.push_back(item);
    }
  } else {
    items = std::move(all);
  }
  if (items.empty()) {
    exec_body(s.else_body, out);
    return;
  }
  const int64_t n = static_cast<int64_t>(items.size());
  ++loop_depth_;
  struct LoopDepth {
    int& d;
    ~LoopDepth() { --d; }
  } depth{loop_depth_};
  for (int64_t i = 0; i < n; ++i) {
    step();
    scopes_.push_back(std::make_shared<Frame>());
    ScopePop pop{scopes_};
    Dict loop;
    loop.set(Value("index"), Value(i + 1));
    loop.set(Value("index0"), Value(i));
    loop.set(Value("revindex"), Value(n - i));
    loop.set(Value("revindex0"), Value(n - i - 1));
    loop.set(Value("first"), Value(i == 0));
    loop.set(Value("last"), Value(i == n - 1));
    loop.set(Value("length"), Value(n));
    loop.set(Value("depth"), Value(1));
    loop.set(Value("depth0"), Value(0));
    loop.set(Value("previtem"),
             i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.set(Value("nextitem"),
             i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    loop.set(Value("cycle"), Value::callable("loop.cycle", [i](Interpreter&, CallArgs& a) -> Value {
               if (a.positional.empty()) throw JinjaError("no items for cycling given");
               return a.positional[static_cast<size_t>(i) % a.positional.size()];
             }));
    assign("loop", Value::namespace_(std::move(loop)));
    bind(items[static_cast<size_t>(i)]);
    const Flow f = exec_body(s.body, out);
    if (f == Flow::break_) break;
  }
}

Value Interpreter::make_macro(const std::string& name, const std::vector<Param>& params, const Body& body) {
  // The scopes the macro sees, held weakly: the macro is itself stored in one of them, and a strong
  // reference would make a cycle that outlives the render.
  std::vector<std::weak_ptr<Frame>> closure(scopes_.begin(), scopes_.end());
  return Value::callable(name, [this, closure, name, &params, &body](Interpreter&, CallArgs& args) -> Value {
    if (call_depth_ >= limits_.max_call_depth)
      throw JinjaError("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
    auto frame = std::make_shared<Frame>();
    // Arguments beyond the parameters land in varargs / kwargs, as Jinja2 does for a macro that
    // uses them.
    std::vector<bool> given(params.size(), false);
    List varargs;
    Dict kwargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i >= params.size()) {
        varargs.push_back(args.positional[i]);
        continue;
      }
      (*frame)[params[i].name] = args.positional[i];
      given[i] = true;
    }
    for (auto& [k, v] : args.keywords) {
      bool found = false;
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name == k) {
          (*frame)[k] = v;
          given[i] = true;
          found = true;
        }
      if (!found) {
        if (k == "caller")
          (*frame)[k] = v;
        else
          kwargs.set(Value(k), v);
      }
    }
    (*frame)["varargs"] = Value::tuple(std::move(varargs));
    (*frame)["kwargs"] = Value::dict(std::move(kwargs));
    auto saved = std::move(scopes_);
    scopes_.clear();
    for (const auto& weak : closure)
      if (auto f = weak.lock()) scopes_.push_back(std::move(f));
    scopes_.push_back(frame);
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;
    ++call_depth_;
    struct Restore {
      Interpreter* self;
      std::vector<std::shared_ptr<Frame>>& saved;
      int loops;
      ~Restore() {
        self->scopes_ = std::move(saved);
        --self->call_depth_;
        self->loop_depth_ = loops;
      }
    } restore{this, saved, saved_loops};
    for (size_t i = 0; i < params.size(); ++i)
      if (!given[i])
        (*frame)[params[i].name] = params[i].default_value
                                       ? eval(*params[i].default_value)
                                       : Value::undefined("parameter '" + params[i].name + "' was not provided");
    TaintedText out;
    exec_body(body, out);
    return std::move(out).value();
  });
}

Value Interpreter::call(const Value& fn, CallArgs& args, int line) {
  (void)line;
  if (fn.is_undefined()) fail_undefined(fn);
  if (!fn.is_callable()) throw JinjaError(std::string("'") + fn.type_name() + "' object is not callable");
  return fn.callable().fn(*this, args);
}

Value Interpreter::apply_filter(const std::string& name, const Value& operand, CallArgs& args, int) {
  return run_filter(*this, name, operand, args);
}

bool Interpreter::apply_test(const std::string& name, const Value& operand, CallArgs& args, int) {
  return run_test(*this, name, operand, args);
}

bool Interpreter::has_filter(const std::string& name) const { return filter_exists(name); }
bool Interpreter::has_test(const std::string& name) const { return test_exists(name); }

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind()) {
    case Value::Kind::undefined:
      fail_undefined(obj);
    case Value::Kind::namespace_: {
      const Value* v = obj.dict().find(name);
      return v ? *v : Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    case Value::Kind::dict: {
      Value m = find_method(obj, name);
      if (!m.is_undefined()) return m;
      const Value* v = obj.dict().find(name);
      return v ? *v : Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    default: {
      Value m = find_method(obj, name);
      if (!m.is_undefined()) return m;
      return Value::undefined(std::string("'") + (obj.is_none() ? "None" : std::string(obj.type_name()) + " object") +
                              "' has no attribute '" + name + "'");
    }
  }
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::undefined:
      fail_undefined(obj);
    case Value::Kind::dict:
    case Value::Kind::namespace_: {
      const Value* v = obj.dict().find(key);
      if (v) return *v;
      if (key.is_string() && obj.is_dict()) {
        Value m = find_method(obj, key.str());
        if (!m.is_undefined()) return m;
      }
      return Value::undefined("'dict object' has no attribute " + key.repr());
    }
    case Value::Kind::list:
    case Value::Kind::string: {
      if (key.is_string()) return get_attr(obj, key.str());
      if (!key.is_int() && !key.is_bool())
        return Value::undefined(std::string("'") + obj.type_name() + " object' has no element " + key.repr());
      if (obj.is_list()) {
        const int64_t n = static_cast<int64_t>(obj.list().size());
        const int64_t i = normalize_index(key.as_int(), n);
        if (i < 0 || i >= n) return Value::undefined("list object has no element " + key.repr());
        return obj.list()[static_cast<size_t>(i)];
      }
      const List chars = iterate(obj);
      const int64_t n = static_cast<int64_t>(chars.size());
      const int64_t i = normalize_index(key.as_int(), n);
      if (i < 0 || i >= n) return Value::undefined("str object has no element " + key.repr());
      return chars[static_cast<size_t>(i)];
    }
    default:
      return Value::undefined(std::string("'") + obj.type_name() + " object' has no element " + key.repr());
  }
}

void Interpreter::eval_args(const Expr& e, size_t first, CallArgs* args) {
  for (size_t i = first; i < e.args.size(); ++i) args->positional.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) args->keywords.emplace_back(k, eval(*v));
}

Value Interpreter::eval(const Expr& e) {
  step();
  switch (e.kind) {
    case ExprKind::literal:
      return e.value;
    case ExprKind::name:
      return lookup(e.name);
    case ExprKind::list: {
      List l;
      for (const auto& a : e.args) l.push_back(eval(*a));
      return e.is_tuple ? Value::tuple(std::move(l)) : Value(std::move(l));
    }
    case ExprKind::dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) d.set(eval(*e.args[i]), eval(*e.args[i + 1]));
      return Value::dict(std::move(d));
    }
    case ExprKind::attribute:
      return get_attr(eval(*e.args[0]), e.name);
    case ExprKind::item:
      return get_item(eval(*e.args[0]), eval(*e.args[1]));
    case ExprKind::slice: {
      const Value obj = eval(*e.args[0]);
      Value parts[3];
      for (int i = 0; i < 3; ++i) parts[i] = e.args[1 + i] ? eval(*e.args[1 + i]) : Value::none();
      if (obj.is_undefined()) fail_undefined(obj);
      if (obj.is_list()) {
        List out;
        for (int64_t i : slice_indices(static_cast<int64_t>(obj.list().size()), parts[0], parts[1], parts[2]))
          out.push_back(obj.list()[static_cast<size_t>(i)]);
        return Value(std::move(out));
      }
      if (obj.is_string()) {
        const List chars = iterate(obj);
        TaintedText out;
        for (int64_t i : slice_indices(static_cast<int64_t>(chars.size()), parts[0], parts[1], parts[2]))
          out.append(chars[static_cast<size_t>(i)]);
        return std::move(out).value();
      }
      throw JinjaError(std::string("'") + obj.type_name() + "' object is not subscriptable");
    }
    case ExprKind::call:
      return eval_call(e);
    case ExprKind::filter: {
      const Value operand = eval(*e.args[0]);
      CallArgs args;
      eval_args(e, 1, &args);
      return run_filter(*this, e.name, operand, args);
    }
    case ExprKind::test: {
      const Value operand = eval(*e.args[0]);
      CallArgs args;
      eval_args(e, 1, &args);
      return Value(run_test(*this, e.name, operand, args) != e.negated);
    }
    case ExprKind::unary: {
      const Value v = eval(*e.args[0]);
      if (e.name == "not") return Value(!v.truthy());
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number())
        throw JinjaError(std::string("bad operand type for unary ") + e.name + ": '" + v.type_name() + "'");
      if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
      if (v.is_float()) return Value(-v.as_double());
      return Value(-v.as_int());
    }
    case ExprKind::binary:
      return eval_binary(e);
    case ExprKind::condition:
      if (eval(*e.args[0]).truthy()) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
  }
  return Value();
}

Value Interpreter::eval_call(const Expr& e) {
  const Expr& callee = *e.args[0];
  Value fn = eval(callee);
  CallArgs args;
  eval_args(e, 1, &args);
  if (fn.is_undefined() && callee.kind == ExprKind::attribute) {
    // A method Jinja2's sandbox has but this interpreter does not know: name it.
    const Value obj = eval(*callee.args[0]);
    if (!obj.is_undefined() && !obj.is_mapping())
      throw JinjaError(std::string("unsupported method '") + callee.name + "' of '" + obj.type_name() + "'");
  }
  return call(fn, args, e.line);
}

Value Interpreter::eval_binary(const Expr& e) {
  const std::string& op = e.name;
  if (op == "and") {
    Value l = eval(*e.args[0]);
    return l.truthy() ? eval(*e.args[1]) : l;
  }
  if (op == "or") {
    Value l = eval(*e.args[0]);
    return l.truthy() ? l : eval(*e.args[1]);
  }
  const Value a = eval(*e.args[0]);
  const Value b = eval(*e.args[1]);
  if (op == "~") {
    TaintedText t;
    t.append(a);
    t.append(b);
    return std::move(t).value();
  }
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "<") return Value(less(a, b));
  if (op == ">") return Value(less(b, a));
  if (op == "<=") return Value(!less(b, a));
  if (op == ">=") return Value(!less(a, b));
  if (op == "in" || op == "not in") {
    bool found = false;
    if (b.is_string()) {
      if (!a.is_string())
        throw JinjaError(std::string("'in <string>' requires string as left operand, not ") + a.type_name());
      found = b.str().find(a.str()) != std::string::npos;
    } else if (b.is_mapping()) {
      found = b.dict().find(a) != nullptr;
    } else if (b.is_list()) {
      for (const Value& x : b.list())
        if (equals(x, a)) {
          found = true;
          break;
        }
    } else if (!b.is_undefined()) {
      throw JinjaError(std::string("argument of type '") + b.type_name() + "' is not iterable");
    }
    return Value(op == "in" ? found : !found);
  }
  return arithmetic(op, a, b);
}

}  // namespace lmrt::jinja
