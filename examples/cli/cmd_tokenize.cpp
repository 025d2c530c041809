// lmrt tokenize: print the token ids of a text, one line, space separated.
#include <cstdio>
#include <string>
#include <vector>

#include "cli_common.h"

int cmd_tokenize(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2,
                       {{"model", "m", true}, {"prompt", "p", true}, {"no-bos", "", false}, {"special", "", false}},
                       &args, &error)) {
    cli::print_error("tokenize", error);
    return 2;
  }
  if (!args.has("prompt")) {
    cli::print_error("tokenize", "give the text with -p TEXT");
    return 2;
  }
  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;
  const std::string text = args.get("prompt");
  const uint32_t flags =
      (args.has("no-bos") ? 0u : LMRT_TOKENIZE_ADD_BOS) | (args.has("special") ? LMRT_TOKENIZE_PARSE_SPECIAL : 0u);
  size_t n = 0;
  lmrt_status s = lmrt_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
  std::vector<int32_t> ids(n);
  if (s == LMRT_ERR_BUFFER_TOO_SMALL || s == LMRT_OK)
    s = lmrt_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  if (s != LMRT_OK) {
    cli::print_error("tokenize", std::string(lmrt_status_str(s)) + ": " + lmrt_model_last_error(model));
    lmrt_model_close(model);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) std::printf(i ? " %d" : "%d", ids[i]);
  std::printf("\n");
  lmrt_model_close(model);
  return 0;
}
