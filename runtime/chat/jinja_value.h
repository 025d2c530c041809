// The values a Jinja template computes with, modelled on the Python objects Jinja2 sees when
// transformers renders a chat template: none, bool, int, float, str, list, dict (insertion-ordered),
// callables (built-ins and macros), namespaces, and Jinja2's default Undefined.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/util/byte_range.h"

namespace lmrt::jinja {

// A template error: rendering stops and the message reaches the caller. `raised` marks a message
// the template itself raised (raise_exception), which is passed on unchanged.
class JinjaError : public std::runtime_error {
 public:
  explicit JinjaError(const std::string& message, bool raised = false) : std::runtime_error(message), raised_(raised) {}
  bool raised() const { return raised_; }

 private:
  bool raised_;
};

class Value;
class Interpreter;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using Function = std::function<Value(Interpreter&, CallArgs&)>;

struct Callable {
  std::string name;
  Function fn;
};

using List = std::vector<Value>;
struct Dict;

class Value {
 public:
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, callable, namespace_ };

  Value() = default;  // undefined
  static Value none() { return Value(Kind::none); }
  static Value undefined(std::string hint = {});
  Value(bool b) : kind_(Kind::boolean), i_(b) {}
  Value(int v) : kind_(Kind::integer), i_(v) {}
  Value(int64_t v) : kind_(Kind::integer), i_(v) {}
  Value(double v) : kind_(Kind::floating), f_(v) {}
  Value(std::string s);
  // A string of which the bytes in `caller` came from the caller's data (see caller_ranges()).
  Value(std::string s, ByteRanges caller);
  // A string that came whole from the caller's data (a JSON input).
  static Value caller_string(std::string s);
  Value(const char* s) : Value(std::string(s)) {}
  Value(List l);
  // A Python tuple: a list that prints as (a, b) (item pairs, tuple literals).
  static Value tuple(List l) {
    Value v(std::move(l));
    v.tuple_ = true;
    return v;
  }
  uint32_t depth() const { return depth_; }
  bool is_tuple() const { return tuple_; }
  static Value dict(Dict d);
  static Value namespace_(Dict d);
  static Value callable(std::string name, Function fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::undefined; }
  bool is_none() const { return kind_ == Kind::none; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_int() const { return kind_ == Kind::integer; }
  bool is_float() const { return kind_ == Kind::floating; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_list() const { return kind_ == Kind::list; }
  bool is_dict() const { return kind_ == Kind::dict; }
  bool is_mapping() const { return kind_ == Kind::dict || kind_ == Kind::namespace_; }
  bool is_namespace() const { return kind_ == Kind::namespace_; }
  bool is_callable() const { return kind_ == Kind::callable; }

  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_double() const { return kind_ == Kind::floating ? f_ : static_cast<double>(i_); }
  const std::string& str() const { return *str_; }
  const List& list() const { return *list_; }
  const Dict& dict() const { return *dict_; }
  Dict& mutable_dict() const { return *dict_; }  // namespaces only
  const Callable& callable() const { return *callable_; }
  // Jinja2's Markup: a string marked safe (|safe, |escape). Adding a plain string to it escapes that
  // string's HTML characters, as Markup.__add__ does.
  bool is_markup() const { return markup_; }
  static Value markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  // Provenance, so that a rendered chat can be tokenized with only the template's own text special:
  // the byte ranges of a string that came from the caller's data (message contents, names, tool
  // arguments, extra variables), carried through concatenation, slicing and the filters.
  const ByteRanges& caller_ranges() const;
  // This string (markup or not) with other caller ranges.
  Value with_caller_ranges(ByteRanges caller) const;
  // Whether this value is or holds (in a list, dict or namespace) a string with caller bytes.
  bool holds_caller_data() const;
  // For an undefined value: what was looked up ("'x' is undefined").
  const std::string& undefined_hint() const { return hint_; }

  bool truthy() const;
  // str(value) as Python prints it (Undefined prints as "").
  std::string to_str() const;
  // repr(value) as Python prints it.
  std::string repr() const;
  // Python's type name ("str", "dict", ...), for error messages like Jinja2's.
  const char* type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::undefined;
  int64_t i_ = 0;
  double f_ = 0;
  std::shared_ptr<const std::string> str_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> callable_;
  std::shared_ptr<const ByteRanges> caller_;  // strings only; null: all from the template
  bool holds_caller_ = false;                 // lists and dicts: computed when built
  std::string hint_;
  bool markup_ = false;
  bool tuple_ = false;
  uint32_t depth_ = 0;  // nesting of lists and dicts, bounded so that recursion over values is safe
};

// A string under construction that keeps its caller ranges: the output of a render, a captured
// block, a concatenation.
struct TaintedText {
  std::string text;
  ByteRanges caller;

  // Appends bytes from the template (from_caller false) or from the caller's data.
  void append(std::string_view s, bool from_caller);
  // Appends str(v); a string keeps its ranges, any other value is caller text if it holds caller data.
  void append(const Value& v);
  // Appends bytes [begin, begin + n) of string `v` with their ranges.
  void append_part(const Value& v, size_t begin, size_t n);
  Value value() &&;
};

// str(v) as a string value with provenance (a string is returned as is).
Value to_text(const Value& v);
// v with every string in it (recursively through lists) marked as caller data.
Value as_caller_data(const Value& v);

// How deeply lists and dicts may nest (JSON input and values a template builds).
constexpr uint32_t kMaxValueDepth = 512;

// Whether v is or holds a namespace (a namespace may not hold one: that could make a cycle).
bool holds_namespace(const Value& v);

// An insertion-ordered mapping. Chat-template dicts are small, so look-up is a linear scan.
struct Dict {
  std::vector<std::pair<Value, Value>> items;

  const Value* find(const Value& key) const;
  const Value* find(const std::string& key) const;
  void set(const Value& key, Value value);
};

// Python's == (1 == 1.0 == True; lists and dicts compare by content).
bool equals(const Value& a, const Value& b);
// Python's <; throws JinjaError for types that do not order.
bool less(const Value& a, const Value& b);

// repr of a float as Python prints it ("1.0", "0.1", "1e+16", "inf").
std::string python_float(double v);

// Jinja2's escape(): & < > " ' as HTML entities.
std::string html_escape(const std::string& s);

// Appends code point cp as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

// Number of code points in UTF-8 text, and the code points themselves (as UTF-8 pieces).
std::vector<std::string> utf8_chars(const std::string& s);

}  // namespace lmrt::jinja
