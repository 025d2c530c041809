// Versions, the kernels' instruction set and the names of statuses and finish reasons.
#include "abi/api_support.h"
#include "lmrt/lmrt.h"
#include "runtime/generate/generator.h"
#include "simd/kernels.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

uint32_t lmrt_abi_version(void) { return LMRT_ABI_VERSION; }
uint32_t lmrt_version_number(void) { return LMRT_VERSION_NUMBER; }
const char* lmrt_version_string(void) { return LMRT_VERSION_STRING; }
const char* lmrt_isa(void) { return lmrt::simd::isa_name(lmrt::simd::best_isa()); }

const char* lmrt_status_str(lmrt_status status) {
  switch (status) {
    case LMRT_OK:
      return "ok";
    case LMRT_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case LMRT_ERR_IO:
      return "I/O error";
    case LMRT_ERR_BAD_FORMAT:
      return "bad or damaged model file";
    case LMRT_ERR_UNSUPPORTED:
      return "unsupported model feature";
    case LMRT_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case LMRT_ERR_CONTEXT_FULL:
      return "context full";
    case LMRT_ERR_CANCELLED:
      return "cancelled";
    case LMRT_ERR_BAD_UTF8:
      return "invalid UTF-8";
    case LMRT_ERR_PLUGIN:
      return "plugin error";
    case LMRT_ERR_CACHE:
      return "cache error";
    case LMRT_ERR_INTERNAL:
      return "internal error";
    case LMRT_ERR_BUFFER_TOO_SMALL:
      return "buffer too small";
  }
  return "unknown status";
}

const char* lmrt_finish_reason_str(lmrt_finish_reason reason) {
  return lmrt::finish_reason_name(static_cast<lmrt::FinishReason>(
      reason >= LMRT_FINISH_NONE && reason <= LMRT_FINISH_ERROR ? reason : LMRT_FINISH_NONE));
}
}  // extern "C"
