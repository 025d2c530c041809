// Helpers shared by the tests: where ../shared is, reading whole files, raw SQL on a cache file.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace lmrt::test {

// The shared data folder: $LMRT_SHARED_DIR, else ../shared beside the source tree.
std::string shared_dir();
// shared_dir() + "/models/" + name.
std::string model_path(const std::string& name);
std::string read_file(const std::string& path);
// This test process's scratch directory ($TMPDIR or /tmp, then lmrt-tests-PID), made on first use and
// removed with everything in it when the process exits.
std::string temp_dir();
// Writes bytes to a fresh file under temp_dir() and returns its path.
std::string write_temp_file(const std::string& name, const std::string& bytes);
// Restores an environment variable to its value (or absence) at construction when it goes out of
// scope, also when an ASSERT leaves the test early: a test that sets LMRT_ISA must not leave it set
// for the tests after it.
class ScopedEnv {
 public:
  explicit ScopedEnv(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
  }
  ~ScopedEnv() {
    if (saved_)
      setenv(name_.c_str(), saved_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> saved_;
};

// Runs SQL on a SQLite file through its own connection (waiting up to 5 s for locks) and returns the
// first column of the first row ("" when none or on error): a look behind the cache's back.
std::string sqlite_query(const std::string& path, const std::string& sql);

}  // namespace lmrt::test
