// lmrt logits: the logits of a sequence of token ids evaluated as one batch, written as a raw float32 file
// (the interface of llama.cpp's `oracle logits`, so the two can be compared file to file with `lmrt kld`).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "logits_file.h"
#include "runtime/util/same_file.h"

int cmd_logits(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(
          argc, argv, 2,
          {{"model", "m", true}, {"ids", "", true}, {"output", "o", true}, {"all", "", false}, {"threads", "t", true}},
          &args, &error)) {
    cli::print_error("logits", error);
    return 2;
  }
  if (!args.has("ids") || !args.has("output")) {
    cli::print_error("logits", "usage: lmrt logits -m MODEL --ids \"1 2 3\" -o OUT.f32 [--all] [-t N]");
    return 2;
  }
  std::vector<int32_t> ids;
  {
    std::istringstream in(args.get("ids"));
    std::string word;
    while (in >> word) {
      long long v;
      if (!cli::parse_int(word, 0, INT32_MAX, &v)) {
        cli::print_error("logits", "--ids: '" + word + "' is not a token id");
        return 2;
      }
      ids.push_back(static_cast<int32_t>(v));
    }
  }
  if (ids.empty()) {
    cli::print_error("logits", "--ids is empty");
    return 2;
  }
  long long threads = 0;
  if (args.has("threads") && !cli::parse_int(args.get("threads"), 1, 1024, &threads)) {
    cli::print_error("logits", "-t must be a number of threads from 1 to 1024");
    return 2;
  }
  if (const lmrt::Status s = lmrt::check_output_is_not_input(cli::model_path(args), args.get("output")); !s.ok()) {
    cli::print_error("logits", s.message());
    return 2;
  }
  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;
  // One batch: the context holds exactly the ids, and n_batch covers them all.
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = static_cast<uint32_t>(ids.size());
  p.n_batch = static_cast<uint32_t>(ids.size());
  p.n_threads = static_cast<uint32_t>(threads);
  p.logits_all = args.has("all") ? 1 : 0;
  lmrt_context* ctx = nullptr;
  char err[512] = {0};
  if (lmrt_context_create(model, &p, &ctx, err, sizeof err) != LMRT_OK) {
    cli::print_error("logits", err);
    lmrt_model_close(model);
    return 1;
  }
  int rc = 0;
  std::vector<float> out;
  size_t n_vocab = 0;
  if (lmrt_eval(ctx, ids.data(), ids.size()) != LMRT_OK) {
    cli::print_error("logits", lmrt_context_last_error(ctx));
    rc = 1;
  } else {
    for (size_t i = args.has("all") ? 0 : ids.size() - 1; i < ids.size(); ++i) {
      const float* row = nullptr;
      if (lmrt_get_logits(ctx, i, &row, &n_vocab) != LMRT_OK) {
        cli::print_error("logits", lmrt_context_last_error(ctx));
        rc = 1;
        break;
      }
      out.insert(out.end(), row, row + n_vocab);
    }
  }
  if (rc == 0 && !cli::write_logits_file(args.get("output"), out, &error)) {
    cli::print_error("logits", error);
    rc = 1;
  }
  if (rc == 0) {
    // The last row's argmax and its probability, as `oracle logits` prints them.
    const float* last = out.data() + out.size() - n_vocab;
    size_t best = 0;
    double sum = 0.0;
    for (size_t i = 0; i < n_vocab; ++i)
      if (last[i] > last[best]) best = i;
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(last[i]) - last[best]);
    std::printf("n_vocab %zu rows %zu argmax_last %zu p_top1_last %.6f\n", n_vocab, out.size() / n_vocab, best,
                1.0 / sum);
  }
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return rc;
}
