// JSON in (nlohmann's ordered_json) and out (Python's json.dumps, byte for byte).
#include "runtime/chat/jinja_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lmrt::jinja {

Value from_json(const nlohmann::ordered_json& j) { return from_json(j, 0); }

Value from_json(const nlohmann::ordered_json& j, uint32_t level) {
  if (level >= kMaxValueDepth)
    throw JinjaError("JSON nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::caller_string(j.get<std::string>());  // every JSON input is the caller's data
    case nlohmann::ordered_json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& x : j) l.push_back(from_json(x, level + 1));
      return Value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d.set(Value::caller_string(it.key()), from_json(it.value(), level + 1));
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

namespace {

// Decodes one UTF-8 code point at s[i]; invalid bytes come back as themselves.
uint32_t decode_utf8(const std::string& s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n <= 0 || i + static_cast<size_t>(n) >= s.size()) {
    ++i;
    return c;
  }
  uint32_t cp = c & (0x3F >> n);
  for (int k = 1; k <= n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
  i += static_cast<size_t>(n) + 1;
  return cp;
}

void dump_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 && ensure_ascii) {
      const uint32_t cp = decode_utf8(s, i);
      char buf[16];
      if (cp >= 0x10000) {
        const uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      }
      out += buf;
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::string:
      return k.str();
    case Value::Kind::boolean:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::none:
      return "null";
    case Value::Kind::integer:
      return std::to_string(k.as_int());
    case Value::Kind::floating:
      return python_float(k.as_double());
    default:
      throw JinjaError(std::string("keys must be str, int, float, bool or None, not ") + k.type_name());
  }
}

void dump(const Value& v, const JsonDumpOptions& o, int level, std::string& out) {
  if (level > 512) throw JinjaError("tojson: value nested too deeply");
  auto newline = [&](int lvl) {
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += o.indent;
  };
  const std::string item_sep = o.has_separators ? o.item_separator : (o.has_indent ? "," : ", ");
  const std::string key_sep = o.has_separators ? o.key_separator : ": ";
  switch (v.kind()) {
    case Value::Kind::none:
      out += "null";
      return;
    case Value::Kind::boolean:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::integer:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::floating: {
      const double d = v.as_double();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d > 0 ? "Infinity" : "-Infinity";
      else
        out += python_float(d);
      return;
    }
    case Value::Kind::string:
      dump_string(v.str(), o.ensure_ascii, out);
      return;
    case Value::Kind::list: {
      const List& l = v.list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += item_sep;
        if (o.has_indent) newline(level + 1);
        dump(l[i], o, level + 1, out);
      }
      if (o.has_indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::dict: {
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, x] : v.dict().items) items.emplace_back(key_string(k), &x);
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      if (items.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        if (o.has_indent) newline(level + 1);
        dump_string(items[i].first, o.ensure_ascii, out);
        out += key_sep;
        dump(*items[i].second, o, level + 1, out);
      }
      if (o.has_indent) newline(level);
      out += '}';
      return;
    }
    default:
      throw JinjaError(std::string("Object of type ") + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string dump_json(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  dump(v, options, 0, out);
  return out;
}

}  // namespace lmrt::jinja
