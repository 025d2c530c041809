/* A shared object that is not an lmrt plugin: it exports no lmrt_plugin_init. */
#include <stdint.h>

__attribute__((visibility("default"))) int32_t something_else(void) { return 42; }
