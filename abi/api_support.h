// Helpers every extern "C" file of the ABI layer uses: status conversion, the guard that turns
// every exception into a status, and the struct_size rules for parameter and result structs.
#pragma once

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "lmrt/lmrt.h"
#include "runtime/util/status.h"
#include "runtime/util/utf8.h"

namespace lmrt::abi {

inline lmrt_status to_c(lmrt::Code c) { return static_cast<lmrt_status>(static_cast<int>(c)); }

inline void copy_message(const std::string& msg, char* err, size_t err_size) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(msg.size(), err_size - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Runs body() and converts anything it throws; `report` receives the message of a failure.
template <typename Body, typename Report>
lmrt_status guarded(Body&& body, Report&& report) {
  try {
    lmrt::Status s = body();
    if (!s.ok()) report(lmrt::printable_utf8(s.message()));
    return to_c(s.code());
  } catch (const std::bad_alloc&) {
    try {
      report("a memory allocation failed");  // follows the status text "out of memory"
    } catch (...) {
    }
    return LMRT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      report(std::string("internal error: ") + e.what());
    } catch (...) {
    }
    return LMRT_ERR_INTERNAL;
  } catch (...) {
    return LMRT_ERR_INTERNAL;
  }
}

// Copies min(struct_size, sizeof(T)) bytes of `full` into `out`: older callers get a prefix.
template <typename T>
void write_prefix(const T& full, T* out) {
  const size_t n = std::min<size_t>(out->struct_size, sizeof(T));
  const uint32_t caller_size = out->struct_size;
  std::memcpy(out, &full, n);
  out->struct_size = caller_size;
}

// Reads a caller's params struct: its first struct_size bytes over our defaults.
template <typename T>
lmrt::Status read_params(const T* in, T* out) {
  if (in == nullptr) return lmrt::Status::Ok();
  const uint32_t size = in->struct_size;
  if (size < sizeof(uint32_t) * 2 || size > (1u << 16))
    return lmrt::Error(lmrt::Code::invalid_argument, "struct_size " + std::to_string(in->struct_size) +
                                                         " is not a valid size (call the _init function first)");
  std::memcpy(out, in, std::min<size_t>(in->struct_size, sizeof(T)));
  out->struct_size = sizeof(T);
  return lmrt::Status::Ok();
}

// Writes `defaults` into a caller's struct of `size` bytes (its struct_size): a caller built against
// an older header gets the prefix it knows; fields newer than this library are zeroed.
template <typename T>
lmrt_status init_sized(T* out, size_t size, const T& defaults) {
  if (out == nullptr || size < sizeof(uint32_t) * 2 || size > (1u << 16)) return LMRT_ERR_INVALID_ARGUMENT;
  std::memcpy(out, &defaults, std::min(size, sizeof(T)));
  if (size > sizeof(T)) std::memset(reinterpret_cast<unsigned char*>(out) + sizeof(T), 0, size - sizeof(T));
  out->struct_size = static_cast<uint32_t>(size);
  return LMRT_OK;
}

inline void copy_cstr(std::string_view s, char* dst, size_t cap) {
  const size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace lmrt::abi
