// Shared pieces of the lmrt command-line tool: argument parsing, model opening, JSON output.
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cli {

// Parsed "-x VALUE" / "--long VALUE" / "--flag" options, in order, plus positional words.
struct Args {
  std::multimap<std::string, std::string> values;
  std::vector<std::string> positional;
  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
};

// Option spec: each long name with its short alias and whether it takes a value.
struct OptionSpec {
  const char* long_name;
  const char* short_name;  // "" when none
  bool takes_value;
};

// Parses argv[first..argc). Returns false and writes a message to *error for unknown options or
// missing values.
bool parse_args(int argc, char** argv, int first, const std::vector<OptionSpec>& spec, Args* out, std::string* error);

// Parses an unsigned/int option; returns false with a message when it is not a number in range.
bool parse_int(const std::string& text, long long lo, long long hi, long long* out);

// The model path: -m, else $LMRT_MODEL, else "".
std::string model_path(const Args& args);

// Opens a model or prints the error to stderr; nullptr on failure.
lmrt_model* open_model(const std::string& path);

// Prints "lmrt: <what>: <message>" to stderr.
void print_error(const std::string& what, const std::string& message);

// JSON string literal of text (control characters escaped, invalid UTF-8 replaced by U+FFFD).
std::string json_string(const std::string& s);

}  // namespace cli

int cmd_run(int argc, char** argv);
int cmd_chat(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_template(int argc, char** argv);
int cmd_cache(int argc, char** argv);
int cmd_plugins(int argc, char** argv);
int cmd_bench(int argc, char** argv);
int cmd_quantize(int argc, char** argv);
int cmd_logits(int argc, char** argv);
int cmd_kld(int argc, char** argv);
int cmd_serve(int argc, char** argv);  // examples/server (or its stub when libmicrohttpd is missing)
