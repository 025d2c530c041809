// Python semantics of the template values: truthiness, str/repr, equality and ordering.
#include "runtime/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace lmrt::jinja {

Value Value::undefined(std::string hint) {
  Value v;
  v.hint_ = std::move(hint);
  return v;
}

Value::Value(std::string s) : kind_(Kind::string), str_(std::make_shared<const std::string>(std::move(s))) {}

Value::Value(std::string s, ByteRanges caller) : Value(std::move(s)) {
  if (!caller.empty()) caller_ = std::make_shared<const ByteRanges>(std::move(caller));
}

Value Value::caller_string(std::string s) {
  const size_t n = s.size();
  return n == 0 ? Value(std::move(s)) : Value(std::move(s), ByteRanges{{0, n}});
}

Value Value::with_caller_ranges(ByteRanges caller) const {
  Value v = *this;
  v.caller_ = caller.empty() ? nullptr : std::make_shared<const ByteRanges>(std::move(caller));
  return v;
}

const ByteRanges& Value::caller_ranges() const {
  static const ByteRanges kNone;
  return caller_ ? *caller_ : kNone;
}

bool Value::holds_caller_data() const {
  switch (kind_) {
    case Kind::string:
      return caller_ != nullptr;
    case Kind::list:
    case Kind::dict:
      return holds_caller_;
    case Kind::namespace_:  // mutable: asked each time
      for (const auto& kv : dict_->items)
        if (kv.first.holds_caller_data() || kv.second.holds_caller_data()) return true;
      return false;
    default:
      return false;
  }
}

void TaintedText::append(std::string_view s, bool from_caller) {
  if (from_caller) add_range(caller, text.size(), text.size() + s.size());
  text += s;
}

void TaintedText::append(const Value& v) {
  if (!v.is_string()) {
    append(v.to_str(), v.holds_caller_data());
    return;
  }
  append_part(v, 0, v.str().size());
}

void TaintedText::append_part(const Value& v, size_t begin, size_t n) {
  const size_t base = text.size();
  const size_t end = begin + n;
  text.append(v.str(), begin, n);
  for (const ByteRange& r : v.caller_ranges()) {
    if (r.end <= begin) continue;
    if (r.begin >= end) break;
    add_range(caller, base + std::max(r.begin, begin) - begin, base + std::min(r.end, end) - begin);
  }
}

Value TaintedText::value() && { return Value(std::move(text), std::move(caller)); }

Value to_text(const Value& v) {
  if (v.is_string()) return v;
  TaintedText t;
  t.append(v);
  return std::move(t).value();
}

Value as_caller_data(const Value& v) {
  if (v.is_string()) return v.str().empty() ? v : v.with_caller_ranges(ByteRanges{{0, v.str().size()}});
  if (v.is_list()) {
    List l;
    for (const Value& x : v.list()) l.push_back(as_caller_data(x));
    return v.is_tuple() ? Value::tuple(std::move(l)) : Value(std::move(l));
  }
  return v;
}

namespace {

uint32_t nested_depth(const List& l) {
  uint32_t d = 0;
  for (const Value& x : l) d = std::max(d, x.depth());
  if (d + 1 > kMaxValueDepth)
    throw JinjaError("value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  return d + 1;
}

uint32_t nested_depth(const Dict& dict) {
  uint32_t d = 0;
  for (const auto& kv : dict.items) d = std::max({d, kv.first.depth(), kv.second.depth()});
  if (d + 1 > kMaxValueDepth)
    throw JinjaError("value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  return d + 1;
}

}  // namespace

Value::Value(List l) : kind_(Kind::list) {
  depth_ = nested_depth(l);
  for (const Value& x : l) holds_caller_ = holds_caller_ || x.holds_caller_data();
  list_ = std::make_shared<const List>(std::move(l));
}

Value Value::dict(Dict d) {
  Value v(Kind::dict);
  v.depth_ = nested_depth(d);
  for (const auto& kv : d.items)
    v.holds_caller_ = v.holds_caller_ || kv.first.holds_caller_data() || kv.second.holds_caller_data();
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

bool holds_namespace(const Value& v) {
  if (v.is_namespace()) return true;
  if (v.is_list())
    for (const Value& x : v.list())
      if (holds_namespace(x)) return true;
  if (v.is_dict())
    for (const auto& kv : v.dict().items)
      if (holds_namespace(kv.second)) return true;
  return false;
}

Value Value::namespace_(Dict d) {
  for (const auto& kv : d.items)
    if (holds_namespace(kv.second)) throw JinjaError("a namespace may not hold another namespace");
  Value v(Kind::namespace_);
  v.dict_ = std::make_shared<Dict>(std::move(d));
  return v;
}

Value Value::callable(std::string name, Function fn) {
  Value v(Kind::callable);
  v.callable_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::undefined:
    case Kind::none:
      return false;
    case Kind::boolean:
    case Kind::integer:
      return i_ != 0;
    case Kind::floating:
      return f_ != 0;
    case Kind::string:
      return !str_->empty();
    case Kind::list:
      return !list_->empty();
    case Kind::dict:
      return !dict_->items.empty();
    case Kind::callable:
    case Kind::namespace_:
      return true;
  }
  return false;
}

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // e.g. "-1.2345e+02"
  const size_t e = sci.find('e');
  const int exp = std::stoi(sci.substr(e + 1));
  std::string mant = sci.substr(0, e);
  std::string sign;
  if (mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  if (exp >= -5 + 1 && exp < 16) {  // Python: fixed notation for 1e-4 <= |v| < 1e16
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return sign + out;
  }
  std::string out = digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + out + ebuf;
}

static std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == quote) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::undefined:
      return "";
    case Kind::string:
      return *str_;
    default:
      return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::undefined:
      return "";
    case Kind::none:
      return "None";
    case Kind::boolean:
      return i_ ? "True" : "False";
    case Kind::integer:
      return std::to_string(i_);
    case Kind::floating:
      return python_float(f_);
    case Kind::string:
      return repr_string(*str_);
    case Kind::list: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}";
    }
    case Kind::callable:
      return "<function " + callable_->name + ">";
    case Kind::namespace_: {
      std::string out = "<Namespace {";
      bool first = true;
      for (const auto& [k, v] : dict_->items) {
        if (!first) out += ", ";
        first = false;
        out += k.repr() + ": " + v.repr();
      }
      return out + "}>";
    }
  }
  return "";
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::undefined:
      return "Undefined";
    case Kind::none:
      return "NoneType";
    case Kind::boolean:
      return "bool";
    case Kind::integer:
      return "int";
    case Kind::floating:
      return "float";
    case Kind::string:
      return "str";
    case Kind::list:
      return tuple_ ? "tuple" : "list";
    case Kind::dict:
      return "dict";
    case Kind::callable:
      return "function";
    case Kind::namespace_:
      return "Namespace";
  }
  return "object";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& kv : items)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}

const Value* Dict::find(const std::string& key) const {
  for (const auto& kv : items)
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  return nullptr;
}

void Dict::set(const Value& key, Value value) {
  for (auto& kv : items)
    if (equals(kv.first, key)) {
      kv.second = std::move(value);
      return;
    }
  items.emplace_back(key, std::move(value));
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::undefined:
    case Value::Kind::none:
      return true;
    case Value::Kind::string:
      return a.str() == b.str();
    case Value::Kind::list: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i)
        if (!equals(a.list()[i], b.list()[i])) return false;
      return true;
    }
    case Value::Kind::dict: {
      if (a.dict().items.size() != b.dict().items.size()) return false;
      for (const auto& [k, v] : a.dict().items) {
        const Value* other = b.dict().find(k);
        if (other == nullptr || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::namespace_:
      return &a.dict() == &b.dict();
    case Value::Kind::callable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order is code point order
  if (a.is_list() && b.is_list()) {
    const List& x = a.list();
    const List& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less(x[i], y[i])) return true;
      if (less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  throw JinjaError(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" + b.type_name() +
                   "'");
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (i + n > s.size()) n = s.size() - i;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace lmrt::jinja
