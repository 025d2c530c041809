// Jinja2's lexer rules for the "root" state (text and tag boundaries) and for tokens inside tags.
#include "runtime/chat/jinja_lexer.h"

#include <cctype>
#include <cstdint>

#include "runtime/chat/jinja_value.h"

namespace lmrt::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalize_newlines(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

class Lexer {
 public:
  explicit Lexer(const std::string& source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t p = src_.find('{', pos_);
      while (p != std::string::npos && p + 1 < src_.size() && src_[p + 1] != '{' && src_[p + 1] != '%' &&
             src_[p + 1] != '#')
        p = src_.find('{', p + 1);
      if (p == std::string::npos || p + 1 >= src_.size()) {
        emit_text(src_.substr(pos_));
        pos_ = src_.size();
        break;
      }
      std::string text = src_.substr(pos_, p - pos_);
      const char kind = src_[p + 1];
      const char sign = p + 2 < src_.size() ? src_[p + 2] : '\0';
      if (sign == '-') {
        size_t end = text.size();
        while (end > 0 && is_space(text[end - 1])) --end;
        text.resize(end);
      } else if (sign != '+' && kind != '{') {
        const size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (l_pos > 0 || line_starting) {
          bool all_space = l_pos < text.size();
          for (size_t i = l_pos; i < text.size(); ++i) all_space = all_space && is_space(text[i]);
          if (all_space) text.resize(l_pos);
        }
      }
      emit_text(text);
      line_ += count_newlines(pos_, p);
      pos_ = p + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        lex_comment();
      } else if (kind == '{') {
        tokens_.push_back({TokenType::var_begin, "", line_});
        lex_tag("}}", TokenType::var_end);
      } else {
        if (raw_begins()) {
          lex_raw();
        } else {
          tokens_.push_back({TokenType::block_begin, "", line_});
          lex_tag("%}", TokenType::block_end);
        }
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({TokenType::eof, "", line_});
    return std::move(tokens_);
  }

 private:
  int count_newlines(size_t from, size_t to) const {
    int n = 0;
    for (size_t i = from; i < to && i < src_.size(); ++i) n += src_[i] == '\n';
    return n;
  }

  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({TokenType::text, text, line_});
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw JinjaError("template syntax error at line " + std::to_string(line_) + ": " + what);
  }

  // After a closing "%}" / "#}": "-" strips all following whitespace, otherwise trim_blocks drops
  // one newline. Tags ending "}}" keep what follows.
  void after_close(bool minus, bool trim) {
    if (minus) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
    } else if (trim && pos_ < src_.size() && src_[pos_] == '\n') {
      ++line_;
      ++pos_;
    }
  }

  void lex_comment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail("unclosed comment");
    const bool minus = end > pos_ && src_[end - 1] == '-';
    line_ += count_newlines(pos_, end);
    pos_ = end + 2;
    after_close(minus, true);
  }

  bool raw_begins() const {
    size_t i = pos_;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && is_space(src_[i])) ++i;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    return src_.compare(i, 2, "%}") == 0;
  }

  void lex_raw() {
    size_t i = src_.find("%}", pos_);
    const bool open_minus = i > 0 && src_[i - 1] == '-';
    pos_ = i + 2;
    after_close(open_minus, true);
    // Find "{%[-] endraw [-]%}".
    size_t search = pos_;
    for (;;) {
      const size_t b = src_.find("{%", search);
      if (b == std::string::npos) fail("unclosed {% raw %}");
      size_t j = b + 2;
      const bool close_minus_before = j < src_.size() && src_[j] == '-';
      if (close_minus_before) ++j;
      while (j < src_.size() && is_space(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") == 0) {
        j += 6;
        while (j < src_.size() && is_space(src_[j])) ++j;
        const bool minus_after = j < src_.size() && src_[j] == '-';
        if (minus_after) ++j;
        if (src_.compare(j, 2, "%}") == 0) {
          std::string text = src_.substr(pos_, b - pos_);
          if (close_minus_before) {
            while (!text.empty() && is_space(text.back())) text.pop_back();
          }
          emit_text(text);
          line_ += count_newlines(pos_, j + 2);
          pos_ = j + 2;
          after_close(minus_after, true);
          return;
        }
      }
      search = b + 2;
    }
  }

  void lex_tag(const char* close, TokenType close_type) {
    const bool block = close[0] == '%';
    int depth = 0;  // open ( [ {: as in Jinja2, "}}" inside a dict literal does not close the tag
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        line_ += src_[pos_] == '\n';
        ++pos_;
      }
      if (pos_ >= src_.size()) fail(std::string("unclosed tag, expected '") + close + "'");
      if (depth == 0 && src_[pos_] == '-' && src_.compare(pos_ + 1, 2, close) == 0) {
        pos_ += 3;
        tokens_.push_back({close_type, "", line_});
        after_close(true, block);
        return;
      }
      if (depth == 0 && src_.compare(pos_, 2, close) == 0) {
        pos_ += 2;
        tokens_.push_back({close_type, "", line_});
        after_close(false, block);
        return;
      }
      const char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos_;
        while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
        tokens_.push_back({TokenType::name, src_.substr(pos_, e - pos_), line_});
        pos_ = e;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        static const char* const kOps[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                           ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : kOps) {
          const size_t n = std::char_traits<char>::length(op);
          if (src_.compare(pos_, n, op) == 0) {
            if (n == 1 && (*op == '(' || *op == '[' || *op == '{')) ++depth;
            if (n == 1 && (*op == ')' || *op == ']' || *op == '}') && depth > 0) --depth;
            tokens_.push_back({TokenType::op, op, line_});
            pos_ += n;
            found = true;
            break;
          }
        }
        if (!found) fail(std::string("unexpected character '") + c + "'");
      }
    }
  }

  void lex_number() {
    size_t e = pos_;
    bool is_float = false;
    auto digits = [&] {
      while (e < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
    };
    digits();
    if (e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && std::isdigit(static_cast<unsigned char>(src_[f]))) {
        is_float = true;
        e = f;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i)
      if (src_[i] != '_') text += src_[i];
    tokens_.push_back({is_float ? TokenType::floating : TokenType::integer, text, line_});
    pos_ = e;
  }

  // Python's "unicode-escape" decoding, as Jinja2 applies it to string literals.
  void lex_string(char quote) {
    std::string out;
    size_t i = pos_ + 1;
    const int start_line = line_;
    for (;;) {
      if (i >= src_.size()) {
        line_ = start_line;
        fail("unclosed string literal");
      }
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || i + 1 >= src_.size()) {
        out += c;
        ++i;
        continue;
      }
      const char n = src_[i + 1];
      i += 2;
      switch (n) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case 'a':
          out += '\a';
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case '\n':
          ++line_;
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
          if (i + len > src_.size()) fail("truncated \\" + std::string(1, n) + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < len; ++k) {
            const char h = src_[i + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail("bad \\" + std::string(1, n) + " escape");
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                     ? h - '0'
                                                     : std::tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          if (cp > 0x10FFFF) fail("escape out of the Unicode range");
          append_utf8(out, cp);
          i += len;
          break;
        }
        default:
          if (n >= '0' && n <= '7') {
            uint32_t cp = static_cast<uint32_t>(n - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k, ++i)
              cp = cp * 8 + static_cast<uint32_t>(src_[i] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += n;
          }
      }
    }
    tokens_.push_back({TokenType::string, out, start_line});
    pos_ = i + 1;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex_template(const std::string& source) { return Lexer(source).run(); }

}  // namespace lmrt::jinja
