// lmrt kld: how far one logits file is from another (mean KL divergence, top-1 agreement, relative RMS
// error), e.g. lmrt's logits of a quantized file against llama.cpp's, or against the F16 source's.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "logits_file.h"
#include "runtime/util/logit_stats.h"

int cmd_kld(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2, {{"vocab", "", true}, {"model", "m", true}, {"json", "", false}}, &args,
                       &error)) {
    cli::print_error("kld", error);
    return 2;
  }
  if (args.positional.size() != 2) {
    cli::print_error("kld", "usage: lmrt kld BASE.f32 OTHER.f32 [--vocab N | -m MODEL] [--json]");
    return 2;
  }
  // The row length: --vocab, else the model's vocabulary.
  long long n_vocab = 0;
  if (args.has("vocab")) {
    if (!cli::parse_int(args.get("vocab"), 1, 1 << 24, &n_vocab)) {
      cli::print_error("kld", "--vocab must be a positive number");
      return 2;
    }
  } else if (args.has("model")) {
    lmrt_model* model = cli::open_model(args.get("model"));
    if (model == nullptr) return 1;
    lmrt_model_info info;
    info.struct_size = sizeof info;
    const lmrt_status s = lmrt_model_get_info(model, &info);
    lmrt_model_close(model);
    if (s != LMRT_OK) {
      cli::print_error("kld", "cannot read the model's vocabulary size");
      return 1;
    }
    n_vocab = info.n_vocab;
  } else {
    cli::print_error("kld", "give the row length with --vocab N (or -m MODEL to take the model's)");
    return 2;
  }
  std::vector<float> base, other;
  for (auto [path, v] : {std::pair{&args.positional[0], &base}, std::pair{&args.positional[1], &other}}) {
    if (!cli::read_logits_file(*path, v, &error)) {
      cli::print_error("kld", error);
      return 1;
    }
    if (v->empty() || v->size() % static_cast<size_t>(n_vocab) != 0) {
      cli::print_error("kld", "'" + *path + "' holds " + std::to_string(v->size()) +
                                  " floats, not a whole number of rows of " + std::to_string(n_vocab));
      return 1;
    }
  }
  if (base.size() != other.size()) {
    cli::print_error("kld", "the files hold different numbers of rows (" + std::to_string(base.size() / n_vocab) +
                                " and " + std::to_string(other.size() / n_vocab) + ")");
    return 1;
  }
  const size_t rows = base.size() / n_vocab;
  const lmrt::LogitStats s = lmrt::compare_logits(base.data(), other.data(), rows, static_cast<size_t>(n_vocab));
  if (args.has("json")) {
    std::printf(
        "{\"rows\":%zu,\"n_vocab\":%lld,\"kld_mean\":%.9g,\"kld_max\":%.9g,\"top1_agree\":%zu,\"top1_rate\":%.6f,"
        "\"rms_rel\":%.9g,\"max_abs\":%.9g}\n",
        s.rows, n_vocab, s.kld_mean, s.kld_max, s.top1_agree, static_cast<double>(s.top1_agree) / s.rows, s.rms_rel,
        s.max_abs);
  } else {
    std::printf("rows                %zu (n_vocab %lld)\n", s.rows, n_vocab);
    std::printf("mean KL divergence  %.6f nats (max %.6f)\n", s.kld_mean, s.kld_max);
    std::printf("top-1 agreement     %zu/%zu (%.1f %%)\n", s.top1_agree, s.rows, 100.0 * s.top1_agree / s.rows);
    std::printf("relative RMS error  %.3f %%\n", 100.0 * s.rms_rel);
    std::printf("max |difference|    %.6f\n", s.max_abs);
  }
  return 0;
}
