// Whether two paths name the same file, so that a tool never writes over the file it is reading.
#pragma once

#include <sys/stat.h>

#include <string>

#include "runtime/util/status.h"

namespace lmrt {

// True when both paths exist and are the same file (also through a link or another spelling).
inline bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// For tools that read a mapped model while writing out_path through out_path.tmp (GgufWriter::write):
// writing over the input would change the bytes being read. Errors: invalid_argument.
inline Status check_output_is_not_input(const std::string& in_path, const std::string& out_path) {
  if (same_file(in_path, out_path))
    return Error(Code::invalid_argument, "the output '" + out_path + "' is the input model; write to another file");
  if (same_file(in_path, out_path + ".tmp"))
    return Error(Code::invalid_argument,
                 "the output's temporary file '" + out_path + ".tmp' is the input model; choose another output name");
  return Status::Ok();
}

}  // namespace lmrt
