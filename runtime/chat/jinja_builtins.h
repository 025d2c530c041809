// Jinja2's built-in filters, tests and globals, and the Python str/dict/list methods that chat
// templates call, as transformers' ImmutableSandboxedEnvironment provides them (its tojson,
// raise_exception and strftime_now included).
#pragma once

#include <string>

#include "runtime/chat/jinja_value.h"

namespace lmrt::jinja {

class Interpreter;

// Throws JinjaError for an unknown name or bad arguments.
Value run_filter(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args);
bool run_test(Interpreter& in, const std::string& name, const Value& operand, CallArgs& args);
bool filter_exists(const std::string& name);
bool test_exists(const std::string& name);

// A bound method of a str, dict or list (e.g. "strip", "items"); an Undefined when there is none.
Value find_method(const Value& obj, const std::string& name);

// range, dict, namespace, raise_exception, strftime_now, joiner, cycler.
void add_globals(Dict& globals);

// Takes the argument at `index` or keyword `name`; `fallback` when neither was given.
Value take_arg(CallArgs& args, size_t index, const char* name, Value fallback = Value());

}  // namespace lmrt::jinja
