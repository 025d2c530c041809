#include "cli_runner.h"

#include <sys/wait.h>

#include <cstdio>

#include "test_support.h"

namespace lmrt::test {

CliRun run_cli(const std::string& args, int timeout_seconds) {
  const std::string err_path = write_temp_file("cli-stderr.txt", "");
  const std::string limit = timeout_seconds > 0 ? "timeout -k 1 " + std::to_string(timeout_seconds) + " " : "";
  const std::string cmd = limit + LMRT_CLI_PATH + " " + args + " 2>" + err_path;
  CliRun r{-1, "", ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_path);
  return r;
}

std::string quoted_model(const std::string& name) { return "'" + model_path(name) + "'"; }

}  // namespace lmrt::test
