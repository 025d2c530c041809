#include "test_support.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace lmrt::test {

std::string shared_dir() {
  if (const char* env = std::getenv("LMRT_SHARED_DIR"); env != nullptr && *env != '\0') return env;
  return LMRT_DEFAULT_SHARED_DIR;
}

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

// This process's directory, removed with its contents when the process that made it exits (not a forked
// child that exits first).
struct TempDir {
  std::string path;
  pid_t owner = ::getpid();
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/lmrt-tests-" + std::to_string(owner);
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
  }
  ~TempDir() {
    std::error_code ec;
    if (::getpid() == owner) std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string temp_dir() {
  static TempDir dir;
  return dir.path;
}

std::string write_temp_file(const std::string& name, const std::string& bytes) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string sqlite_query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_exec(
        db, sql.c_str(),
        [](void* out, int n, char** values, char**) {
          auto* s = static_cast<std::string*>(out);
          if (s->empty() && n > 0 && values[0] != nullptr) *s = values[0];
          return 0;
        },
        &result, nullptr);
  }
  sqlite3_close(db);
  return result;
}

}  // namespace lmrt::test
