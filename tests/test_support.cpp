#include "test_support.h"

#include <unistd.h>

#include <cstdlib>
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

std::string write_temp_file(const std::string& name, const std::string& bytes) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") + "/lmrt-tests-" + std::to_string(::getpid());
  (void)std::system(("mkdir -p '" + dir + "'").c_str());
  const std::string path = dir + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace lmrt::test
