// Status: the one error type of the runtime. Codes match lmrt_status in the public header
// (abi/ pins that with static_asserts) so the ABI layer converts by value.
#pragma once

#include <string>
#include <utility>

namespace lmrt {

enum class Code : int {
  ok = 0,
  invalid_argument = 1,
  io = 2,
  bad_format = 3,
  unsupported = 4,
  out_of_memory = 5,
  context_full = 6,
  cancelled = 7,
  bad_utf8 = 8,
  plugin = 9,
  cache = 10,
  internal = 11,
  buffer_too_small = 12,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == Code::ok; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::ok;
  std::string message_;
};

inline Status Error(Code code, std::string message) { return {code, std::move(message)}; }

}  // namespace lmrt

// Propagates a non-ok Status to the caller.
#define LMRT_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::lmrt::Status lmrt_status_ = (expr);        \
    if (!lmrt_status_.ok()) return lmrt_status_; \
  } while (0)
