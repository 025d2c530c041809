// Parses a template's tokens into statements, with Jinja2's operator precedence.
#pragma once

#include <string>

#include "runtime/chat/jinja_ast.h"

namespace lmrt::jinja {

// Throws JinjaError naming the line and the construct it does not know or cannot parse.
Body parse_template(const std::string& source);

}  // namespace lmrt::jinja
