// lmrt tokenize: print the token ids of a text (-p TEXT or -f FILE), one line, space separated.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"

int cmd_tokenize(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2,
                       {{"model", "m", true},
                        {"prompt", "p", true},
                        {"file", "f", true},
                        {"no-bos", "", false},
                        {"special", "", false}},
                       &args, &error)) {
    cli::print_error("tokenize", error);
    return 2;
  }
  if (args.has("prompt") == args.has("file")) {
    cli::print_error("tokenize", "give the text with -p TEXT or -f FILE");
    return 2;
  }
  std::string text = args.get("prompt");
  if (args.has("file")) {
    std::ifstream in(args.get("file"), std::ios::binary);
    std::ostringstream buf;
    if (!in) {
      cli::print_error("tokenize", "cannot read " + args.get("file"));
      return 1;
    }
    buf << in.rdbuf();  // an empty file sets failbit only: its text is ""
    text = buf.str();
  }
  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;
  const uint32_t flags =
      (args.has("no-bos") ? 0u : LMRT_TOKENIZE_ADD_BOS) | (args.has("special") ? LMRT_TOKENIZE_PARSE_SPECIAL : 0u);
  // A text rarely has more tokens than bytes (plus BOS/EOS and a space prefix): one call usually does.
  std::vector<int32_t> ids(text.size() + 8);
  size_t n = 0;
  lmrt_status s = lmrt_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  if (s == LMRT_ERR_BUFFER_TOO_SMALL) {
    ids.resize(n);
    s = lmrt_tokenize(model, text.data(), text.size(), flags, ids.data(), ids.size(), &n);
  }
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
