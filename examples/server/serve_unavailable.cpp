// `lmrt serve` in a build without libmicrohttpd or nlohmann-json: say what is missing.
#include <cstdio>

#include "serve_main.h"

int cmd_serve(int, char**) {
  std::fprintf(stderr,
               "lmrt serve: this lmrt was built without the HTTP server; install libmicrohttpd-dev and "
               "nlohmann-json3-dev and rebuild\n");
  return 2;
}
