// Runs the built `lmrt` command-line tool as a user would, for the CLI tests.
#pragma once

#include <string>

namespace lmrt::test {

struct CliRun {
  int exit_code;  // -1 when the tool did not exit normally (a signal) or could not be started
  std::string out;
  std::string err;
};

// Runs `lmrt ARGS` through the shell (ARGS is shell text: quote paths), capturing stdout and stderr.
// With timeout_seconds > 0 a tool still running then is killed and exit_code is 124.
CliRun run_cli(const std::string& args, int timeout_seconds = 0);

// A shell-quoted path of a shared model file.
std::string quoted_model(const std::string& name);

}  // namespace lmrt::test
