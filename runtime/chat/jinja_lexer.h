// Splits a Jinja template into text and tag tokens the way Jinja2's lexer does with
// trim_blocks and lstrip_blocks on (as transformers renders chat templates): "{%- -%}" whitespace
// control, "{%+" to keep leading space, comments dropped, {% raw %} kept literally, newlines
// normalised to "\n" and one trailing newline removed.
#pragma once

#include <string>
#include <vector>

namespace lmrt::jinja {

enum class TokenType { text, var_begin, var_end, block_begin, block_end, name, string, integer, floating, op, eof };

struct Token {
  TokenType type;
  std::string value;
  int line;
};

// Throws JinjaError (with the line) for an unclosed tag, comment or string, or an unknown character.
std::vector<Token> lex_template(const std::string& source);

}  // namespace lmrt::jinja
