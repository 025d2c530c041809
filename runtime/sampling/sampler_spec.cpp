#include "runtime/sampling/sampler_spec.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace lmrt {
namespace {

bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r'; }
bool is_name_start(char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_'; }
bool is_name_char(char ch) {
  return is_name_start(ch) || (ch >= '0' && ch <= '9') || ch == '.' || ch == ':' || ch == '-';
}
bool is_bare_char(char ch) { return !is_space(ch) && ch != ',' && ch != '(' && ch != ')' && ch != '=' && ch != '"'; }

// Printable excerpt of one character for messages.
std::string describe(char ch) {
  if (ch >= 0x20 && ch < 0x7f) return std::string("'") + ch + "'";
  char buf[8];
  std::snprintf(buf, sizeof(buf), "0x%02x", static_cast<unsigned char>(ch));
  return buf;
}

Status spec_error(size_t offset, const std::string& what) {
  return Error(Code::invalid_argument, "sampler spec, offset " + std::to_string(offset) + ": " + what);
}

class SpecParser {
 public:
  explicit SpecParser(std::string_view text) : text_(text) {}

  Status parse(std::vector<SamplerSpec>* out) {
    out->clear();
    for (;;) {
      skip_space();
      if (at_end()) return Status::Ok();
      const char ch = text_[pos_];
      if (ch == ')') return spec_error(pos_, "unbalanced parentheses: ')' has no matching '('");
      if (!is_name_start(ch)) return spec_error(pos_, "expected a sampler name, found " + describe(ch));
      SamplerSpec item;
      item.offset = pos_;
      while (!at_end() && is_name_char(text_[pos_])) item.name.push_back(text_[pos_++]);
      skip_space();
      if (!at_end() && text_[pos_] == '(') LMRT_RETURN_IF_ERROR(parse_args(&item));
      out->push_back(std::move(item));
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (!at_end() && is_space(text_[pos_])) ++pos_;
  }

  Status parse_args(SamplerSpec* item) {
    const size_t open = pos_++;
    skip_space();
    if (!at_end() && text_[pos_] == ')') {
      ++pos_;
      return Status::Ok();
    }
    for (;;) {
      SamplerArg arg;
      skip_space();
      arg.offset = pos_;
      std::string first;
      bool first_quoted = false;
      LMRT_RETURN_IF_ERROR(parse_value(item->name, open, &first, &first_quoted));
      skip_space();
      if (!at_end() && text_[pos_] == '=') {
        if (first_quoted || first.empty()) return spec_error(arg.offset, "a parameter name must be a bare word");
        for (char ch : first) {
          if (!is_name_char(ch)) return spec_error(arg.offset, "invalid parameter name '" + first + "'");
        }
        ++pos_;
        skip_space();
        arg.key = std::move(first);
        LMRT_RETURN_IF_ERROR(parse_value(item->name, open, &arg.value, &arg.quoted));
        skip_space();
      } else {
        arg.value = std::move(first);
        arg.quoted = first_quoted;
      }
      item->args.push_back(std::move(arg));
      if (at_end()) return unclosed(item->name, open);
      const char ch = text_[pos_];
      if (ch == ',') {
        ++pos_;
        continue;
      }
      if (ch == ')') {
        ++pos_;
        return Status::Ok();
      }
      if (ch == '(')
        return spec_error(pos_, "unbalanced parentheses: nested '(' in the arguments of '" + item->name + "'");
      return spec_error(pos_, "expected ',' or ')' in the arguments of '" + item->name + "', found " + describe(ch));
    }
  }

  Status unclosed(const std::string& name, size_t open) const {
    return spec_error(open, "unbalanced parentheses: the '(' after '" + name + "' is never closed");
  }

  // A bare or quoted value; an empty bare value is an error.
  Status parse_value(const std::string& name, size_t open, std::string* out, bool* quoted) {
    if (at_end()) return unclosed(name, open);
    const char ch = text_[pos_];
    if (ch == '"') {
      const size_t start = pos_++;
      for (;;) {
        if (at_end()) return spec_error(start, "unterminated quoted value in the arguments of '" + name + "'");
        char c = text_[pos_++];
        if (c == '"') break;
        if (c == '\\') {
          if (at_end()) return spec_error(start, "unterminated quoted value in the arguments of '" + name + "'");
          c = text_[pos_++];
          if (c != '"' && c != '\\') return spec_error(pos_ - 2, "unknown escape '\\" + std::string(1, c) + "'");
        }
        out->push_back(c);
      }
      *quoted = true;
      return Status::Ok();
    }
    while (!at_end() && is_bare_char(text_[pos_])) out->push_back(text_[pos_++]);
    if (out->empty()) {
      if (ch == ')' || ch == ',') return spec_error(pos_, "empty argument in the arguments of '" + name + "'");
      if (ch == '(') return spec_error(pos_, "unbalanced parentheses: nested '(' in the arguments of '" + name + "'");
      return spec_error(pos_, "expected a value in the arguments of '" + name + "', found " + describe(ch));
    }
    *quoted = false;
    return Status::Ok();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string format_bound(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

Status parse_chain_spec(std::string_view text, std::vector<SamplerSpec>* out) { return SpecParser(text).parse(out); }

bool parse_float_text(std::string_view text, float* out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+') return false;
  float v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
  if (std::isnan(v)) return false;
  *out = v;
  return true;
}

bool parse_int_text(std::string_view text, int64_t* out) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty() || text[0] == '+') return false;
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
  *out = v;
  return true;
}

std::string format_float(float v) {
  if (v == 0) v = 0;  // -0 and 0 are the same parameter
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

Status check_float_param(std::string_view sampler, std::string_view param, float value, const FloatRange& range) {
  const bool above_lo = range.lo_inclusive ? value >= range.lo : value > range.lo;
  const bool below_hi = range.hi_inclusive ? value <= range.hi : value < range.hi;
  if (above_lo && below_hi) return Status::Ok();
  return Error(Code::invalid_argument, std::string(sampler) + ": parameter '" + std::string(param) + "' must be in " +
                                           (range.lo_inclusive ? "[" : "(") + format_bound(range.lo) + ", " +
                                           format_bound(range.hi) + (range.hi_inclusive ? "]" : ")") + ", got " +
                                           format_float(value));
}

Status check_int_param(std::string_view sampler, std::string_view param, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return Status::Ok();
  return Error(Code::invalid_argument, std::string(sampler) + ": parameter '" + std::string(param) + "' must be in [" +
                                           std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                           std::to_string(value));
}

Status SamplerParams::bind(const SamplerSpec& spec, std::initializer_list<std::string_view> names, SamplerParams* out) {
  out->sampler_ = spec.name;
  out->values_.clear();
  size_t positional = 0;
  bool seen_named = false;
  for (const SamplerArg& arg : spec.args) {
    std::string_view name;
    if (arg.key.empty()) {
      if (seen_named) {
        return Error(Code::invalid_argument, spec.name + ": positional argument '" + arg.value +
                                                 "' after a named one (offset " + std::to_string(arg.offset) + ")");
      }
      if (positional >= names.size()) {
        return Error(Code::invalid_argument, spec.name + ": too many arguments (takes at most " +
                                                 std::to_string(names.size()) + "), at offset " +
                                                 std::to_string(arg.offset));
      }
      name = *(names.begin() + positional++);
    } else {
      seen_named = true;
      bool known = false;
      for (std::string_view n : names) known = known || n == arg.key;
      if (!known) {
        std::string list;
        for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
        return Error(Code::invalid_argument, spec.name + ": unknown parameter '" + arg.key + "' (offset " +
                                                 std::to_string(arg.offset) +
                                                 "); parameters: " + (list.empty() ? "none" : list));
      }
      name = arg.key;
    }
    if (out->find(name) != nullptr) {
      return Error(Code::invalid_argument, spec.name + ": parameter '" + std::string(name) + "' given twice");
    }
    out->values_.emplace_back(std::string(name), arg.value);
  }
  return Status::Ok();
}

const std::string* SamplerParams::find(std::string_view name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return &v;
  }
  return nullptr;
}

bool SamplerParams::has(std::string_view name) const { return find(name) != nullptr; }

Status SamplerParams::get_float(std::string_view name, float fallback, FloatRange range, float* out) const {
  const std::string* text = find(name);
  if (text == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  float v = 0;
  if (!parse_float_text(*text, &v)) {
    return Error(Code::invalid_argument,
                 sampler_ + ": parameter '" + std::string(name) + "' expects a number, got '" + *text + "'");
  }
  LMRT_RETURN_IF_ERROR(check_float_param(sampler_, name, v, range));
  *out = v;
  return Status::Ok();
}

Status SamplerParams::get_int(std::string_view name, int64_t fallback, int64_t lo, int64_t hi, int64_t* out) const {
  const std::string* text = find(name);
  if (text == nullptr) {
    *out = fallback;
    return Status::Ok();
  }
  int64_t v = 0;
  if (!parse_int_text(*text, &v)) {
    return Error(Code::invalid_argument,
                 sampler_ + ": parameter '" + std::string(name) + "' expects an integer, got '" + *text + "'");
  }
  LMRT_RETURN_IF_ERROR(check_int_param(sampler_, name, v, lo, hi));
  *out = v;
  return Status::Ok();
}

}  // namespace lmrt
