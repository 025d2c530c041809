/* A plugin built for plugin ABI 2.0 (another major): the host must refuse it by name. */
#include <lmrt/lmrt_plugin.h>

LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api* host,
                                            lmrt_plugin_descriptor* out) {
  (void)host_abi_version;
  (void)host;
  out->abi_version = (uint32_t)(2u << 16);
  out->name = "from_the_future";
  out->version = "9.0.0";
  return 0;
}
