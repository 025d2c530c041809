// Helpers shared by the tests: where ../shared is, reading whole files.
#pragma once

#include <string>
#include <vector>

namespace lmrt::test {

// The shared data folder: $LMRT_SHARED_DIR, else ../shared beside the source tree.
std::string shared_dir();
// shared_dir() + "/models/" + name.
std::string model_path(const std::string& name);
std::string read_file(const std::string& path);
// Writes bytes to a fresh file under the test temp dir and returns its path.
std::string write_temp_file(const std::string& name, const std::string& bytes);

}  // namespace lmrt::test
