// Filters, tests, globals and methods, each following its Jinja2 3.1 / Python 3 definition.
#include "runtime/chat/jinja_builtins.h"

#include <locale.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <cwctype>
#include <map>

#include "runtime/chat/jinja_interpreter.h"
#include "runtime/chat/jinja_json.h"

namespace lmrt::jinja {

Value take_arg(CallArgs& args, size_t index, const char* name, Value fallback) {
  for (auto& [k, v] : args.keywords)
    if (k == name) return v;
  if (index < args.positional.size()) return args.positional[index];
  return fallback;
}

namespace {

[[noreturn]] void fail(const std::string& m) { throw JinjaError(m); }

void require_defined(const Value& v) {
  if (v.is_undefined()) fail(v.undefined_hint().empty() ? "an undefined value was used" : v.undefined_hint());
}

const std::string& need_str(const Value& v, const char* what) {
  if (!v.is_string()) fail(std::string(what) + " expects a string, got '" + v.type_name() + "'");
  return v.str();
}

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool()) fail(std::string(what) + " expects an integer, got '" + v.type_name() + "'");
  return v.as_int();
}

// ---- Unicode helpers (Python's whitespace and ASCII case mapping) ----

uint32_t cp_of(const std::string& ch) {
  const unsigned char c = static_cast<unsigned char>(ch[0]);
  if (c < 0x80 || ch.size() == 1) return c;
  uint32_t cp = c & (0x3F >> (ch.size() - 1));
  for (size_t i = 1; i < ch.size(); ++i) cp = (cp << 6) | (static_cast<unsigned char>(ch[i]) & 0x3F);
  return cp;
}

bool is_py_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The byte range py_strip keeps.
std::pair<size_t, size_t> strip_bounds(const std::string& s, const Value& chars, bool left, bool right) {
  auto cs = utf8_chars(s);
  std::vector<std::string> set;
  const bool custom = chars.is_string();
  if (custom) set = utf8_chars(chars.str());
  auto strip_it = [&](const std::string& c) {
    return custom ? std::find(set.begin(), set.end(), c) != set.end() : is_py_space(cp_of(c));
  };
  size_t b = 0, e = cs.size();
  if (left)
    while (b < e && strip_it(cs[b])) ++b;
  if (right)
    while (e > b && strip_it(cs[e - 1])) --e;
  size_t begin = 0, end = 0;
  for (size_t i = 0; i < e; ++i) (i < b ? begin : end) += cs[i].size();
  return {begin, begin + end};
}

std::string py_strip(const std::string& s, const Value& chars, bool left, bool right) {
  const auto [b, e] = strip_bounds(s, chars, left, right);
  return s.substr(b, e - b);
}

// strip with provenance: the kept bytes keep their caller ranges.
Value strip_value(const Value& s, const Value& chars, bool left, bool right) {
  const Value text = to_text(s);
  const auto [b, e] = strip_bounds(text.str(), chars, left, right);
  return substring(text, b, e - b);
}

// Simple Unicode case mapping through glibc's C.UTF-8 tables (towupper_l, no global locale
// change); ASCII only where that locale is missing. Python's special cases (ß -> SS) are not made.
locale_t utf8_locale() {
  static const locale_t loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  return loc;
}

std::string map_case(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  const locale_t loc = utf8_locale();
  for (const std::string& ch : utf8_chars(s)) {
    const uint32_t cp = cp_of(ch);
    uint32_t mapped = cp;
    if (cp < 0x80)
      mapped = static_cast<uint32_t>(upper ? std::toupper(static_cast<int>(cp)) : std::tolower(static_cast<int>(cp)));
    else if (loc != static_cast<locale_t>(0))
      mapped = static_cast<uint32_t>(upper ? towupper_l(static_cast<wint_t>(cp), loc)
                                           : towlower_l(static_cast<wint_t>(cp), loc));
    if (mapped == cp) {
      out += ch;
    } else {
      append_utf8(out, mapped);
    }
  }
  return out;
}

std::string ascii_upper(const std::string& s) { return map_case(s, true); }
std::string ascii_lower(const std::string& s) { return map_case(s, false); }
std::string py_capitalize(const std::string& s) {
  std::string out = ascii_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}
std::string py_title(const std::string& s) {
  std::string out;
  bool prev_cased = false;
  for (unsigned char c : s) {
    const bool alpha = std::isalpha(c) != 0;
    if (alpha)
      out += static_cast<char>(prev_cased ? std::tolower(c) : std::toupper(c));
    else
      out += static_cast<char>(c);
    prev_cased = alpha || c >= 0x80;
  }
  return out;
}

// Jinja2's title filter: a word starts after '-', whitespace, '(', '{', '[' or '<' (unlike str.title,
// an apostrophe does not start one).
std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (unsigned char c : s) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c);
    if (sep) {
      out += static_cast<char>(c);
      word_start = true;
    } else {
      out += static_cast<char>(word_start ? std::toupper(c) : std::tolower(c));
      word_start = false;
    }
  }
  return out;
}

// str.replace; kept bytes keep their caller ranges and the inserted text has its own.
Value py_replace(const Value& sv, const std::string& from, const Value& to, int64_t count) {
  const std::string& s = sv.str();
  TaintedText out;
  if (from.empty()) {
    auto cs = utf8_chars(s);
    int64_t n = 0;
    size_t offset = 0;
    for (size_t i = 0; i <= cs.size(); ++i) {
      if (count < 0 || n < count) {
        out.append(to);
        ++n;
      }
      if (i < cs.size()) {
        out.append_part(sv, offset, cs[i].size());
        offset += cs[i].size();
      }
    }
    return std::move(out).value();
  }
  size_t pos = 0;
  int64_t n = 0;
  for (;;) {
    const size_t f = s.find(from, pos);
    if (f == std::string::npos || (count >= 0 && n >= count)) break;
    out.append_part(sv, pos, f - pos);
    out.append(to);
    pos = f + from.size();
    ++n;
  }
  out.append_part(sv, pos, s.size() - pos);
  return std::move(out).value();
}

List py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  List out;
  if (sep.is_none() || sep.is_undefined()) {
    auto cs = utf8_chars(s);
    size_t i = 0;
    int64_t n = 0;
    while (i < cs.size()) {
      while (i < cs.size() && is_py_space(cp_of(cs[i]))) ++i;
      if (i >= cs.size()) break;
      std::string word;
      if (maxsplit >= 0 && n >= maxsplit) {
        for (; i < cs.size(); ++i) word += cs[i];
        // Python keeps trailing whitespace of the unsplit remainder only when not at the end.
        std::string trimmed = py_strip(word, Value::none(), false, true);
        out.emplace_back(trimmed);
        break;
      }
      while (i < cs.size() && !is_py_space(cp_of(cs[i]))) word += cs[i++];
      out.emplace_back(word);
      ++n;
    }
    return out;
  }
  const std::string& d = need_str(sep, "split");
  if (d.empty()) fail("empty separator");
  size_t pos = 0;
  int64_t n = 0;
  for (;;) {
    const size_t f = s.find(d, pos);
    if (f == std::string::npos || (maxsplit >= 0 && n >= maxsplit)) break;
    out.emplace_back(s.substr(pos, f - pos));
    pos = f + d.size();
    ++n;
  }
  out.emplace_back(s.substr(pos));
  return out;
}

// split by a separator with provenance: each part keeps its caller ranges.
List split_value(const Value& sv, const std::string& d, int64_t maxsplit) {
  const std::string& s = sv.str();
  List out;
  size_t pos = 0;
  int64_t n = 0;
  for (;;) {
    const size_t f = s.find(d, pos);
    if (f == std::string::npos || (maxsplit >= 0 && n >= maxsplit)) break;
    out.push_back(substring(sv, pos, f - pos));
    pos = f + d.size();
    ++n;
  }
  out.push_back(substring(sv, pos, s.size() - pos));
  return out;
}

List py_splitlines(const std::string& s) {
  List out;
  std::string line;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      out.emplace_back(line);
      line.clear();
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      line += s[i];
    }
  }
  if (!line.empty()) out.emplace_back(line);
  return out;
}

bool starts_or_ends(const std::string& s, const Value& what, bool start) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (what.is_list()) {
    for (const Value& v : what.list())
      if (one(need_str(v, start ? "startswith" : "endswith"))) return true;
    return false;
  }
  return one(need_str(what, start ? "startswith" : "endswith"));
}

// str.format with "{}", "{0}" and "{name}" fields (no format specs).
Value py_format(const Value& fmt_value, CallArgs& args) {
  const std::string& fmt = fmt_value.str();
  TaintedText out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.append_part(fmt_value, i, 1);
      ++i;
    } else if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
      out.append_part(fmt_value, i, 1);
      ++i;
    } else if (c == '{') {
      const size_t e = fmt.find('}', i);
      if (e == std::string::npos) fail("format: single '{' encountered");
      const std::string field = fmt.substr(i + 1, e - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        fail("format: format specifications are not supported");
      Value v;
      if (field.empty()) {
        if (auto_index >= args.positional.size()) fail("format: not enough arguments");
        v = args.positional[auto_index++];
      } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        const size_t k = std::stoul(field);
        if (k >= args.positional.size()) fail("format: index out of range");
        v = args.positional[k];
      } else {
        v = take_arg(args, SIZE_MAX, field.c_str(), Value::undefined("format: missing key '" + field + "'"));
        require_defined(v);
      }
      out.append(v);
      i = e;
    } else {
      out.append_part(fmt_value, i, 1);
    }
  }
  return std::move(out).value();
}

Value bound(const std::string& name, Function fn) { return Value::callable(name, std::move(fn)); }

bool args_hold_caller_data(const CallArgs& a) {
  for (const Value& v : a.positional)
    if (v.holds_caller_data()) return true;
  for (const auto& kv : a.keywords)
    if (kv.second.holds_caller_data()) return true;
  return false;
}

Value string_method_result(const Value& self, const std::string& name, CallArgs& a);

// A bound str method. Methods that do not track provenance themselves (upper, zfill, ...) give
// caller text when the string or an argument held caller data.
Value string_method(const Value& self, const std::string& name) {
  static const char* const kNames[] = {
      "strip",   "lstrip",     "rstrip",  "split",   "rsplit",  "startswith", "endswith", "upper",      "lower",
      "title",   "capitalize", "replace", "find",    "rfind",   "count",      "join",     "splitlines", "isdigit",
      "isalpha", "isspace",    "isalnum", "islower", "isupper", "format",     "index",    "zfill"};
  if (std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) == std::end(kNames))
    return Value();
  return bound("str." + name, [self, name](Interpreter&, CallArgs& a) -> Value {
    const bool inputs_from_caller = self.holds_caller_data() || args_hold_caller_data(a);
    const Value result = string_method_result(self, name, a);
    return inputs_from_caller && !result.holds_caller_data() ? as_caller_data(result) : result;
  });
}

Value string_method_result(const Value& self, const std::string& name, CallArgs& a) {
  const std::string& s = self.str();
  {
    if (name == "strip" || name == "lstrip" || name == "rstrip")
      return strip_value(self, take_arg(a, 0, "chars", Value::none()), name != "rstrip", name != "lstrip");
    if (name == "split") {
      const Value maxsplit = take_arg(a, 1, "maxsplit", Value(-1));
      const Value sep = take_arg(a, 0, "sep", Value::none());
      if (sep.is_string() && !sep.str().empty())
        return Value(split_value(self, sep.str(), need_int(maxsplit, "split")));
      return Value(py_split(s, sep, need_int(maxsplit, "split")));
    }
    if (name == "rsplit") {
      const Value sep = take_arg(a, 0, "sep", Value::none());
      const int64_t maxsplit = need_int(take_arg(a, 1, "maxsplit", Value(-1)), "rsplit");
      if (maxsplit < 0) return Value(py_split(s, sep, -1));
      // Split from the right: reverse the problem on a separator string.
      const std::string& d = need_str(sep, "rsplit");
      List parts;
      std::string rest = s;
      for (int64_t n = 0; n < maxsplit; ++n) {
        const size_t f = rest.rfind(d);
        if (f == std::string::npos) break;
        parts.insert(parts.begin(), Value(rest.substr(f + d.size())));
        rest = rest.substr(0, f);
      }
      parts.insert(parts.begin(), Value(rest));
      return Value(std::move(parts));
    }
    if (name == "startswith" || name == "endswith")
      return Value(starts_or_ends(s, take_arg(a, 0, "prefix"), name == "startswith"));
    if (name == "upper") return Value(ascii_upper(s));
    if (name == "lower") return Value(ascii_lower(s));
    if (name == "title") return Value(py_title(s));
    if (name == "capitalize") return Value(py_capitalize(s));
    if (name == "replace") {
      const Value to = take_arg(a, 1, "new");
      need_str(to, "replace");
      return py_replace(self, need_str(take_arg(a, 0, "old"), "replace"), to,
                        need_int(take_arg(a, 2, "count", Value(-1)), "replace"));
    }
    if (name == "find" || name == "rfind" || name == "index") {
      const std::string& sub = need_str(take_arg(a, 0, "sub"), name.c_str());
      const size_t f = name == "rfind" ? s.rfind(sub) : s.find(sub);
      if (f == std::string::npos) {
        if (name == "index") fail("substring not found");
        return Value(-1);
      }
      return Value(static_cast<int64_t>(utf8_chars(s.substr(0, f)).size()));
    }
    if (name == "count") {
      const std::string& sub = need_str(take_arg(a, 0, "sub"), "count");
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_chars(s).size()) + 1);
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    }
    if (name == "join") {
      TaintedText out;
      bool first = true;
      for (const Value& v : iterate(take_arg(a, 0, "iterable"))) {
        if (!first) out.append(self);
        first = false;
        need_str(v, "join");
        out.append(v);
      }
      return std::move(out).value();
    }
    if (name == "splitlines") return Value(py_splitlines(s));
    if (name == "zfill") {
      const int64_t w = need_int(take_arg(a, 0, "width"), "zfill");
      const int64_t n = static_cast<int64_t>(utf8_chars(s).size());
      if (n >= w) return Value(s);
      const size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
      return Value(s.substr(0, sign) + std::string(static_cast<size_t>(w - n), '0') + s.substr(sign));
    }
    if (name == "format") return py_format(self, a);
    // is* predicates (ASCII classes; Python's are Unicode-wide).
    if (s.empty()) return Value(false);
    bool all = true, any_cased = false;
    for (unsigned char c : s) {
      if (name == "isdigit") all = all && std::isdigit(c);
      if (name == "isalpha") all = all && std::isalpha(c);
      if (name == "isalnum") all = all && std::isalnum(c);
      if (name == "isspace") all = all && is_py_space(c);
      if (name == "islower") {
        all = all && !std::isupper(c);
        any_cased = any_cased || std::islower(c);
      }
      if (name == "isupper") {
        all = all && !std::islower(c);
        any_cased = any_cased || std::isupper(c);
      }
    }
    if (name == "islower" || name == "isupper") return Value(all && any_cased);
    return Value(all);
  }
}

Value dict_method(const Value& self, const std::string& name) {
  if (name == "items")
    return bound("dict.items", [self](Interpreter&, CallArgs&) -> Value {
      List l;
      for (const auto& [k, v] : self.dict().items) l.push_back(Value::tuple(List{k, v}));
      return Value(std::move(l));
    });
  if (name == "keys")
    return bound("dict.keys", [self](Interpreter&, CallArgs&) -> Value {
      List l;
      for (const auto& kv : self.dict().items) l.push_back(kv.first);
      return Value(std::move(l));
    });
  if (name == "values")
    return bound("dict.values", [self](Interpreter&, CallArgs&) -> Value {
      List l;
      for (const auto& kv : self.dict().items) l.push_back(kv.second);
      return Value(std::move(l));
    });
  if (name == "get")
    return bound("dict.get", [self](Interpreter&, CallArgs& a) -> Value {
      const Value* v = self.dict().find(take_arg(a, 0, "key"));
      return v ? *v : take_arg(a, 1, "default", Value::none());
    });
  if (name == "copy")
    return bound("dict.copy", [self](Interpreter&, CallArgs&) -> Value { return Value::dict(self.dict()); });
  return Value();
}

Value list_method(const Value& self, const std::string& name) {
  if (name == "index")
    return bound("list.index", [self](Interpreter&, CallArgs& a) -> Value {
      const Value x = take_arg(a, 0, "value");
      for (size_t i = 0; i < self.list().size(); ++i)
        if (equals(self.list()[i], x)) return Value(static_cast<int64_t>(i));
      fail(x.repr() + " is not in list");
    });
  if (name == "count")
    return bound("list.count", [self](Interpreter&, CallArgs& a) -> Value {
      const Value x = take_arg(a, 0, "value");
      int64_t n = 0;
      for (const Value& v : self.list()) n += equals(v, x);
      return Value(n);
    });
  return Value();
}

// ---- filters ----

Value attr_path(Interpreter& in, const Value& v, const std::string& path) {
  Value cur = v;
  size_t pos = 0;
  for (;;) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      cur = in.get_item(cur, Value(static_cast<int64_t>(std::stoll(part))));
    else
      cur = in.get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    pos = dot + 1;
  }
}

// Jinja2's sort key: strings compare case-insensitively unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(ascii_lower(v.str()));
  return v;
}

Value filter_tojson(const Value& v, CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  JsonDumpOptions o;
  o.ensure_ascii = take_arg(a, 0, "ensure_ascii", Value(false)).truthy();
  const Value indent = take_arg(a, 1, "indent", Value::none());
  if (indent.is_int()) {
    o.has_indent = true;
    o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_int())), ' ');
  } else if (indent.is_string()) {
    o.has_indent = true;
    o.indent = indent.str();
  } else if (!indent.is_none()) {
    fail("tojson: indent must be an int, a string or None");
  }
  const Value seps = take_arg(a, 2, "separators", Value::none());
  if (seps.is_list()) {
    if (seps.list().size() != 2) fail("tojson: separators must be a pair");
    o.has_separators = true;
    o.item_separator = need_str(seps.list()[0], "tojson separators");
    o.key_separator = need_str(seps.list()[1], "tojson separators");
  }
  o.sort_keys = take_arg(a, 3, "sort_keys", Value(false)).truthy();
  return Value(dump_json(v, o));
}

Value filter_indent(const Value& v, CallArgs& a) {
  const Value width = take_arg(a, 0, "width", Value(4));
  const bool first = take_arg(a, 1, "first", Value(false)).truthy();
  const bool blank = take_arg(a, 2, "blank", Value(false)).truthy();
  const std::string ind = width.is_string()
                              ? width.str()
                              : std::string(static_cast<size_t>(std::max<int64_t>(0, need_int(width, "indent"))), ' ');
  List lines = py_splitlines(v.to_str() + "\n");
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv.append(1, '\n').append(ind);
      rv += lines[i].str();
    }
  } else {
    rv = lines.empty() ? "" : lines[0].str();
    for (size_t i = 1; i < lines.size(); ++i) {
      rv.append(1, '\n');
      if (!lines[i].str().empty()) rv.append(ind).append(lines[i].str());
    }
  }
  if (first) rv = ind + rv;
  return Value(rv);
}

// select / reject / selectattr / rejectattr
Value filter_select(Interpreter& in, const Value& seq, CallArgs& a, bool attr, bool want) {
  size_t next = 0;
  std::string attribute;
  if (attr) attribute = need_str(take_arg(a, next++, "attribute"), "selectattr");
  const bool has_test = next < a.positional.size();
  std::string test = has_test ? need_str(a.positional[next], "select") : "";
  CallArgs test_args;
  for (size_t i = next + 1; i < a.positional.size(); ++i) test_args.positional.push_back(a.positional[i]);
  List out;
  if (!seq.truthy()) return Value(std::move(out));  // Jinja2 skips a falsy sequence (None included)
  for (const Value& item : iterate(seq)) {
    const Value v = attr ? attr_path(in, item, attribute) : item;
    CallArgs ta = test_args;
    const bool ok = has_test ? in.apply_test(test, v, ta, 0) : v.truthy();
    if (ok == want) out.push_back(item);
  }
  return Value(std::move(out));
}

Value filter_map(Interpreter& in, const Value& seq, CallArgs& a) {
  List out;
  if (!seq.truthy()) return Value(std::move(out));  // as Jinja2: a falsy sequence maps to nothing
  const Value attribute = take_arg(a, SIZE_MAX, "attribute");
  if (!attribute.is_undefined()) {
    const Value dflt = take_arg(a, SIZE_MAX, "default");
    for (const Value& item : iterate(seq)) {
      Value v = attr_path(in, item, attribute.to_str());
      out.push_back(v.is_undefined() && !dflt.is_undefined() ? dflt : v);
    }
    return Value(std::move(out));
  }
  if (a.positional.empty()) fail("map: no filter or attribute given");
  const std::string filter = need_str(a.positional[0], "map");
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keywords = a.keywords;
  for (const Value& item : iterate(seq)) {
    CallArgs fa = rest;
    out.push_back(in.apply_filter(filter, item, fa, 0));
  }
  return Value(std::move(out));
}

Value filter_sort(Interpreter& in, const Value& seq, CallArgs& a) {
  const bool reverse = take_arg(a, 0, "reverse", Value(false)).truthy();
  const bool cs = take_arg(a, 1, "case_sensitive", Value(false)).truthy();
  const Value attribute = take_arg(a, 2, "attribute", Value::none());
  List items = iterate(seq);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items)
    keyed.emplace_back(sort_key(attribute.is_none() ? v : attr_path(in, v, attribute.to_str()), cs), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? less(y.first, x.first) : less(x.first, y.first);
  });
  List out;
  for (auto& kv : keyed) out.push_back(kv.second);
  return Value(std::move(out));
}

using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"tojson", [](Interpreter&, const Value& v, CallArgs& a) { return filter_tojson(v, a); }},
      {"trim", [](Interpreter&, const Value& v,
                  CallArgs& a) { return strip_value(v, take_arg(a, 0, "chars", Value::none()), true, true); }},
      {"length", [](Interpreter&, const Value& v, CallArgs&) { return Value(python_len(v)); }},
      {"count", [](Interpreter&, const Value& v, CallArgs&) { return Value(python_len(v)); }},
      {"first",
       [](Interpreter&, const Value& v, CallArgs&) {
         List l = iterate(v);
         return l.empty() ? Value::undefined("No first item, sequence was empty.") : l.front();
       }},
      {"last",
       [](Interpreter&, const Value& v, CallArgs&) {
         require_defined(v);
         List l = iterate(v);
         return l.empty() ? Value::undefined("No last item, sequence was empty.") : l.back();
       }},
      {"join",
       [](Interpreter& in, const Value& v, CallArgs& a) {
         const Value sep = to_text(take_arg(a, 0, "d", Value("")));
         const Value attribute = take_arg(a, 1, "attribute", Value::none());
         TaintedText out;
         bool first = true;
         for (const Value& x : iterate(v)) {
           if (!first) out.append(sep);
           first = false;
           out.append(attribute.is_none() ? x : attr_path(in, x, attribute.to_str()));
         }
         return std::move(out).value();
       }},
      {"default",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value dflt = take_arg(a, 0, "default_value", Value(""));
         const bool boolean = take_arg(a, 1, "boolean", Value(false)).truthy();
         if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
         return v;
       }},
      {"upper", [](Interpreter&, const Value& v, CallArgs&) { return Value(ascii_upper(v.to_str())); }},
      {"lower", [](Interpreter&, const Value& v, CallArgs&) { return Value(ascii_lower(v.to_str())); }},
      {"capitalize", [](Interpreter&, const Value& v, CallArgs&) { return Value(py_capitalize(v.to_str())); }},
      {"title", [](Interpreter&, const Value& v, CallArgs&) { return Value(jinja_title(v.to_str())); }},
      {"replace",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value count = take_arg(a, 2, "count", Value::none());
         return py_replace(to_text(v), take_arg(a, 0, "old").to_str(), to_text(take_arg(a, 1, "new")),
                           count.is_none() ? -1 : need_int(count, "replace"));
       }},
      {"list", [](Interpreter&, const Value& v, CallArgs&) { return Value(iterate(v)); }},
      {"map", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_map(in, v, a); }},
      {"select", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_select(in, v, a, false, true); }},
      {"reject", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_select(in, v, a, false, false); }},
      {"selectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_select(in, v, a, true, true); }},
      {"rejectattr", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_select(in, v, a, true, false); }},
      {"string", [](Interpreter&, const Value& v, CallArgs&) { return to_text(v); }},
      {"safe", [](Interpreter&, const Value& v, CallArgs&) { return v.is_markup() ? v : Value::markup(v.to_str()); }},
      {"e", [](Interpreter&, const Value& v,
               CallArgs&) { return v.is_markup() ? v : Value::markup(html_escape(v.to_str())); }},
      {"escape", [](Interpreter&, const Value& v,
                    CallArgs&) { return v.is_markup() ? v : Value::markup(html_escape(v.to_str())); }},
      {"int",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value dflt = take_arg(a, 0, "default", Value(0));
         if (v.is_int() || v.is_bool()) return Value(v.as_int());
         if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : dflt;
         if (v.is_string()) {
           const std::string s = py_strip(v.str(), Value::none(), true, true);
           try {
             size_t used = 0;
             const long long i = std::stoll(s, &used, 10);
             if (used == s.size()) return Value(static_cast<int64_t>(i));
             const double d = std::stod(s, &used);
             if (used == s.size()) return Value(static_cast<int64_t>(d));
           } catch (...) {
           }
         }
         return dflt;
       }},
      {"float",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value dflt = take_arg(a, 0, "default", Value(0.0));
         if (v.is_number()) return Value(v.as_double());
         if (v.is_string()) {
           try {
             size_t used = 0;
             const std::string s = py_strip(v.str(), Value::none(), true, true);
             const double d = std::stod(s, &used);
             if (used == s.size()) return Value(d);
           } catch (...) {
           }
         }
         return dflt;
       }},
      {"abs",
       [](Interpreter&, const Value& v, CallArgs&) {
         require_defined(v);
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         if (v.is_number()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         fail(std::string("bad operand type for abs(): '") + v.type_name() + "'");
       }},
      {"round",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const int64_t precision = need_int(take_arg(a, 0, "precision", Value(0)), "round");
         const std::string method = take_arg(a, 1, "method", Value("common")).to_str();
         if (!v.is_number()) fail(std::string("round expects a number, got '") + v.type_name() + "'");
         const double p = std::pow(10.0, static_cast<double>(precision));
         const double x = v.as_double() * p;
         double r;
         if (method == "common")
           r = std::nearbyint(x);  // Python's round(): halves go to the even neighbour
         else if (method == "ceil")
           r = std::ceil(x);
         else if (method == "floor")
           r = std::floor(x);
         else
           fail("method must be common, ceil or floor");
         return Value(r / p);
       }},
      {"indent", [](Interpreter&, const Value& v, CallArgs& a) { return filter_indent(v, a); }},
      {"unique",
       [](Interpreter& in, const Value& v, CallArgs& a) {
         const bool cs = take_arg(a, 0, "case_sensitive", Value(false)).truthy();
         const Value attribute = take_arg(a, 1, "attribute", Value::none());
         List out, seen;
         for (const Value& x : iterate(v)) {
           const Value key = sort_key(attribute.is_none() ? x : attr_path(in, x, attribute.to_str()), cs);
           if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
             seen.push_back(key);
             out.push_back(x);
           }
         }
         return Value(std::move(out));
       }},
      {"items",
       [](Interpreter&, const Value& v, CallArgs&) {
         if (v.is_undefined()) return Value(List{});
         if (!v.is_mapping()) fail("Can only get item pairs from a mapping.");
         List l;
         for (const auto& [k, x] : v.dict().items) l.push_back(Value::tuple(List{k, x}));
         return Value(std::move(l));
       }},
      {"dictsort",
       [](Interpreter&, const Value& v, CallArgs& a) {
         if (!v.is_mapping()) fail("dictsort expects a mapping");
         const bool cs = take_arg(a, 0, "case_sensitive", Value(false)).truthy();
         const std::string by = take_arg(a, 1, "by", Value("key")).to_str();
         const bool reverse = take_arg(a, 2, "reverse", Value(false)).truthy();
         std::vector<std::pair<Value, Value>> items = v.dict().items;
         const size_t pos = by == "value" ? 1 : 0;
         std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
           const Value kx = sort_key(pos ? x.second : x.first, cs), ky = sort_key(pos ? y.second : y.first, cs);
           return reverse ? less(ky, kx) : less(kx, ky);
         });
         List l;
         for (auto& [k, x] : items) l.push_back(Value::tuple(List{k, x}));
         return Value(std::move(l));
       }},
      {"batch",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const int64_t n = need_int(take_arg(a, 0, "linecount"), "batch");
         if (n <= 0) fail("batch: linecount must be positive");
         const Value fill = take_arg(a, 1, "fill_with", Value::none());
         List out, cur;
         for (const Value& x : iterate(v)) {
           cur.push_back(x);
           if (static_cast<int64_t>(cur.size()) == n) {
             out.emplace_back(std::move(cur));
             cur.clear();
           }
         }
         if (!cur.empty()) {
           if (!fill.is_none())
             while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
           out.emplace_back(std::move(cur));
         }
         return Value(std::move(out));
       }},
      {"reverse",
       [](Interpreter&, const Value& v, CallArgs&) {
         if (v.is_string()) {
           auto cs = utf8_chars(v.str());
           std::string out;
           for (auto it = cs.rbegin(); it != cs.rend(); ++it) out += *it;
           return Value(out);
         }
         List l = iterate(v);
         std::reverse(l.begin(), l.end());
         return Value(std::move(l));
       }},
      {"sort", [](Interpreter& in, const Value& v, CallArgs& a) { return filter_sort(in, v, a); }},
      {"min",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const bool cs = take_arg(a, 0, "case_sensitive", Value(false)).truthy();
         List l = iterate(v);
         if (l.empty()) return Value::undefined("No aggregated item, sequence was empty.");
         Value best = l[0];
         for (const Value& x : l)
           if (less(sort_key(x, cs), sort_key(best, cs))) best = x;
         return best;
       }},
      {"max",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const bool cs = take_arg(a, 0, "case_sensitive", Value(false)).truthy();
         List l = iterate(v);
         if (l.empty()) return Value::undefined("No aggregated item, sequence was empty.");
         Value best = l[0];
         for (const Value& x : l)
           if (less(sort_key(best, cs), sort_key(x, cs))) best = x;
         return best;
       }},
      {"sum",
       [](Interpreter& in, const Value& v, CallArgs& a) {
         const Value attribute = take_arg(a, 0, "attribute", Value::none());
         Value acc = take_arg(a, 1, "start", Value(0));
         for (const Value& x : iterate(v))
           acc = arithmetic("+", acc, attribute.is_none() ? x : attr_path(in, x, attribute.to_str()));
         return acc;
       }},
      {"attr",
       [](Interpreter& in, const Value& v, CallArgs& a) { return in.get_attr(v, take_arg(a, 0, "name").to_str()); }},
      {"wordcount",
       [](Interpreter&, const Value& v, CallArgs&) {
         return Value(static_cast<int64_t>(py_split(v.to_str(), Value::none(), -1).size()));
       }},
      {"center",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const std::string s = v.to_str();
         const int64_t w = need_int(take_arg(a, 0, "width", Value(80)), "center");
         const int64_t n = static_cast<int64_t>(utf8_chars(s).size());
         if (n >= w) return Value(s);
         const int64_t total = w - n, left = total / 2 + (total & w & 1);
         return Value(std::string(static_cast<size_t>(left), ' ') + s +
                      std::string(static_cast<size_t>(total - left), ' '));
       }},
      {"format",
       [](Interpreter&, const Value& v, CallArgs& a) {
         // "%s"-style formatting with %s, %d and %%.
         const std::string& fmt = need_str(v, "format");
         TaintedText out;
         size_t next = 0;
         for (size_t i = 0; i < fmt.size(); ++i) {
           if (fmt[i] != '%' || i + 1 >= fmt.size()) {
             out.append_part(v, i, 1);
             continue;
           }
           const char c = fmt[++i];
           if (c == '%') {
             out.append_part(v, i, 1);
             continue;
           }
           if (next >= a.positional.size()) fail("format: not enough arguments for format string");
           const Value& arg = a.positional[next++];
           if (c == 's')
             out.append(arg);
           else if (c == 'd')
             out.append(std::to_string(static_cast<int64_t>(arg.as_double())), arg.holds_caller_data());
           else if (c == 'r')
             out.append(arg.repr(), arg.holds_caller_data());
           else
             fail(std::string("format: unsupported conversion %") + c);
         }
         return std::move(out).value();
       }},
  };
  return table;
}

// ---- tests ----

using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](Interpreter&, const Value& v, CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](Interpreter&, const Value& v, CallArgs&) { return v.is_undefined(); }},
      {"none", [](Interpreter&, const Value& v, CallArgs&) { return v.is_none(); }},
      {"string", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string(); }},
      {"number", [](Interpreter&, const Value& v, CallArgs&) { return v.is_number(); }},
      {"integer", [](Interpreter&, const Value& v, CallArgs&) { return v.is_int(); }},
      {"float", [](Interpreter&, const Value& v, CallArgs&) { return v.is_float(); }},
      {"boolean", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool(); }},
      {"true", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](Interpreter&, const Value& v, CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"mapping", [](Interpreter&, const Value& v, CallArgs&) { return v.is_dict(); }},
      {"sequence", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() || v.is_list() || v.is_dict(); }},
      {"iterable", [](Interpreter&, const Value& v,
                      CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"callable", [](Interpreter&, const Value& v, CallArgs&) { return v.is_callable(); }},
      {"odd", [](Interpreter&, const Value& v, CallArgs&) { return (need_int(v, "odd") % 2) != 0; }},
      {"even", [](Interpreter&, const Value& v, CallArgs&) { return (need_int(v, "even") % 2) == 0; }},
      {"divisibleby",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const int64_t d = need_int(take_arg(a, 0, "num"), "divisibleby");
         if (d == 0) fail("integer division or modulo by zero");
         return need_int(v, "divisibleby") % d == 0;
       }},
      {"eq", [](Interpreter&, const Value& v, CallArgs& a) { return equals(v, take_arg(a, 0, "other")); }},
      {"ne", [](Interpreter&, const Value& v, CallArgs& a) { return !equals(v, take_arg(a, 0, "other")); }},
      {"lt", [](Interpreter&, const Value& v, CallArgs& a) { return less(v, take_arg(a, 0, "other")); }},
      {"gt", [](Interpreter&, const Value& v, CallArgs& a) { return less(take_arg(a, 0, "other"), v); }},
      {"le", [](Interpreter&, const Value& v, CallArgs& a) { return !less(take_arg(a, 0, "other"), v); }},
      {"ge", [](Interpreter&, const Value& v, CallArgs& a) { return !less(v, take_arg(a, 0, "other")); }},
      {"in",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value seq = take_arg(a, 0, "seq");
         if (seq.is_string()) return v.is_string() && seq.str().find(v.str()) != std::string::npos;
         if (seq.is_mapping()) return seq.dict().find(v) != nullptr;
         for (const Value& x : iterate(seq))
           if (equals(x, v)) return true;
         return false;
       }},
      {"sameas",
       [](Interpreter&, const Value& v, CallArgs& a) {
         const Value o = take_arg(a, 0, "other");
         if (v.is_none() || o.is_none()) return v.is_none() && o.is_none();
         if (v.is_bool() || o.is_bool()) return v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool();
         return equals(v, o) && v.kind() == o.kind() && (v.is_int() || v.is_undefined());
       }},
      {"lower",
       [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && ascii_lower(v.str()) == v.str(); }},
      {"upper",
       [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && ascii_upper(v.str()) == v.str(); }},
      {"escaped", [](Interpreter&, const Value&, CallArgs&) { return false; }},
      {"filter", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && filters().count(v.str()) > 0; }},
      {"test", [](Interpreter&, const Value& v, CallArgs&) { return v.is_string() && tests().count(v.str()) > 0; }},
  };
  return table;
}

std::string canonical_test(const std::string& name) {
  if (name == "==" || name == "equalto") return "eq";
  if (name == "!=") return "ne";
  if (name == "<" || name == "lessthan") return "lt";
  if (name == ">" || name == "greaterthan") return "gt";
  if (name == "<=") return "le";
  if (name == ">=") return "ge";
  return name;
}

std::string canonical_filter(const std::string& name) {
  if (name == "d") return "default";
  return name;
}

}  // namespace

Value run_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args) {
  auto it = filters().find(canonical_filter(name));
  if (it == filters().end()) fail("unknown filter '" + name + "'");
  // A filter that does not track provenance itself (upper, tojson, indent, ...) gives caller text
  // when any of its inputs held caller data.
  const bool inputs_from_caller = operand.holds_caller_data() || args_hold_caller_data(args);
  const Value result = it->second(in, operand, args);
  return inputs_from_caller && !result.holds_caller_data() ? as_caller_data(result) : result;
}

bool run_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args) {
  auto it = tests().find(canonical_test(name));
  if (it == tests().end()) fail("unknown test '" + name + "'");
  return it->second(in, operand, args);
}

bool filter_exists(const std::string& name) { return filters().count(canonical_filter(name)) > 0; }
bool test_exists(const std::string& name) { return tests().count(canonical_test(name)) > 0; }

Value find_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) return string_method(obj, name);
  if (obj.is_dict()) return dict_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return Value();
}

void add_globals(Dict& g) {
  g.set(Value("range"), Value::callable("range", [](Interpreter&, CallArgs& a) -> Value {
          int64_t start = 0, stop = 0, step = 1;
          if (a.positional.size() == 1) {
            stop = need_int(a.positional[0], "range");
          } else if (a.positional.size() >= 2) {
            start = need_int(a.positional[0], "range");
            stop = need_int(a.positional[1], "range");
            if (a.positional.size() >= 3) step = need_int(a.positional[2], "range");
          } else {
            fail("range expected at least 1 argument, got 0");
          }
          if (step == 0) fail("range() arg 3 must not be zero");
          // Counted before anything is allocated: a hostile range(10**12) fails at once.
          const long double span =
              step > 0 ? static_cast<long double>(stop) - start : static_cast<long double>(start) - stop;
          const long double count = span <= 0 ? 0
                                              : (span + (std::abs(static_cast<long double>(step)) - 1)) /
                                                    std::abs(static_cast<long double>(step));
          if (count > 100'000) fail("range too big (more than 100000 items)");
          List l;
          l.reserve(static_cast<size_t>(count));
          for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) l.emplace_back(i);
          return Value(std::move(l));
        }));
  g.set(Value("dict"), Value::callable("dict", [](Interpreter&, CallArgs& a) -> Value {
          Dict d;
          if (!a.positional.empty() && a.positional[0].is_mapping()) d = a.positional[0].dict();
          for (auto& [k, v] : a.keywords) d.set(Value(k), v);
          return Value::dict(std::move(d));
        }));
  g.set(Value("namespace"), Value::callable("namespace", [](Interpreter&, CallArgs& a) -> Value {
          Dict d;
          if (!a.positional.empty() && a.positional[0].is_mapping()) d = a.positional[0].dict();
          for (auto& [k, v] : a.keywords) d.set(Value(k), v);
          return Value::namespace_(std::move(d));
        }));
  g.set(Value("raise_exception"), Value::callable("raise_exception", [](Interpreter&, CallArgs& a) -> Value {
          throw JinjaError(take_arg(a, 0, "message", Value("")).to_str(), /*raised=*/true);
        }));
  g.set(Value("strftime_now"), Value::callable("strftime_now", [](Interpreter&, CallArgs& a) -> Value {
          const std::string fmt = need_str(take_arg(a, 0, "format"), "strftime_now");
          const std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          std::string buf(256 + fmt.size() * 8, '\0');
          const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
          buf.resize(n);
          return Value(buf);
        }));
}

}  // namespace lmrt::jinja
