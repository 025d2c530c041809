// Whether two paths name the same file, so that a tool never writes over the file it is reading.
#pragma once

#include <sys/stat.h>

#include <string>

namespace lmrt {

// True when both paths exist and are the same file (also through a link or another spelling).
inline bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace lmrt
