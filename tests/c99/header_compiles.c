/* lmrt.h must compile as strict C99 with every warning an error (see tests/CMakeLists.txt). */
#include <lmrt/lmrt.h>

int lmrt_header_compiles_as_c99(void) {
  lmrt_model_params mp;
  lmrt_context_params cp;
  lmrt_generate_request req;
  lmrt_generate_result res;
  res.struct_size = (uint32_t)sizeof res;
  (void)lmrt_model_params_init(&mp);
  (void)lmrt_context_params_init(&cp);
  (void)lmrt_generate_request_init(&req);
  return (int)res.struct_size + (int)LMRT_ABI_VERSION;
}
