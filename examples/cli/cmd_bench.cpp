// lmrt bench: load time, prefill and decode throughput and peak RSS on one model, with the prompt
// and timing definitions of ../shared/peers/README.md so the numbers line up with llama.cpp's.
// `lmrt bench --synthetic NAME -o FILE` writes a synthetic model instead (internal writer code
// compiled into the CLI; see CMakeLists.txt).
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_prefix.h"
#include "bench_prompt.h"
#include "bench_sequences.h"
#include "cli_common.h"
#include "tools/synthetic_model.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int32_t argmax(const float* x, size_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

double peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

struct Rep {
  double prefill_tps = 0;
  double decode_tps = 0;
  std::vector<int32_t> ids;
};

// Runs one P-token prefill and G - 1 greedy single-token decodes after a context reset.
bool run_once(lmrt_context* ctx, const std::vector<int32_t>& prompt, uint32_t g, Rep* out) {
  lmrt_context_reset(ctx);
  const float* logits = nullptr;
  size_t n_vocab = 0;
  const auto t0 = Clock::now();
  if (lmrt_eval(ctx, prompt.data(), prompt.size()) != LMRT_OK ||
      lmrt_get_logits(ctx, prompt.size() - 1, &logits, &n_vocab) != LMRT_OK)
    return false;
  int32_t tok = argmax(logits, n_vocab);
  const double prefill_ms = ms_since(t0);
  out->ids.assign(1, tok);
  const auto t1 = Clock::now();
  for (uint32_t i = 1; i < g; ++i) {
    if (lmrt_eval(ctx, &tok, 1) != LMRT_OK || lmrt_get_logits(ctx, 0, &logits, &n_vocab) != LMRT_OK) return false;
    tok = argmax(logits, n_vocab);
    out->ids.push_back(tok);
  }
  const double decode_ms = ms_since(t1);
  out->prefill_tps = prompt.size() / (prefill_ms / 1000.0);
  out->decode_tps = g > 1 ? (g - 1) / (decode_ms / 1000.0) : 0.0;
  return true;
}

int write_synthetic(const cli::Args& args) {
  const std::string out = args.get("output");
  if (out.empty()) {
    cli::print_error("bench", "--synthetic needs -o FILE");
    return 2;
  }
  lmrt::SyntheticShape shape;
  const std::string name = args.get("synthetic");
  if (name != "custom") {
    const lmrt::Status s = lmrt::synthetic_shape(name, &shape);
    if (!s.ok()) {
      cli::print_error("bench", s.message() + " (or 'custom' with --dim --layers --heads --kv-heads --ffn --vocab)");
      return 2;
    }
  }
  struct Dim {
    const char* opt;
    uint32_t* field;
  } dims[] = {{"dim", &shape.dim}, {"layers", &shape.layers}, {"heads", &shape.heads}, {"kv-heads", &shape.kv_heads},
              {"ffn", &shape.ffn}, {"vocab", &shape.vocab},   {"ctx", &shape.ctx}};
  for (const Dim& d : dims) {
    if (!args.has(d.opt)) continue;
    long long v = 0;
    if (!cli::parse_int(args.get(d.opt), 1, 1 << 24, &v)) {
      cli::print_error("bench", std::string("--") + d.opt + " must be a positive integer");
      return 2;
    }
    *d.field = static_cast<uint32_t>(v);
  }
  if (name == "custom" && !args.has("kv-heads")) shape.kv_heads = shape.heads;
  lmrt::SyntheticOptions opt;
  if (args.has("seed")) {
    long long v = 0;
    if (!cli::parse_int(args.get("seed"), 0, 1LL << 62, &v)) {
      cli::print_error("bench", "--seed must be a non-negative integer");
      return 2;
    }
    opt.seed = static_cast<uint64_t>(v);
  }
  opt.tokenizer_path = args.get("tokenizer");
  if (opt.tokenizer_path.empty()) {
    const char* shared = std::getenv("LMRT_SHARED_DIR");
    if (shared == nullptr) {
      cli::print_error("bench", "give the llama2.c tokenizer.bin with --tokenizer FILE (or set LMRT_SHARED_DIR)");
      return 2;
    }
    opt.tokenizer_path = std::string(shared) + "/models/llama2-tokenizer.bin";
  }
  const auto t0 = Clock::now();
  const lmrt::Status s = lmrt::write_synthetic_model(out, shape, opt);
  if (!s.ok()) {
    cli::print_error("bench", s.message());
    return 1;
  }
  struct stat st {};
  stat(out.c_str(), &st);
  std::fprintf(stderr,
               "wrote %s: %lld bytes, dim %u layers %u heads %u kv heads %u ffn %u vocab %u ctx %u, Q4_0, "
               "seed %llu, in %.1f s\n",
               out.c_str(), static_cast<long long>(st.st_size), shape.dim, shape.layers, shape.heads, shape.kv_heads,
               shape.ffn, shape.vocab, shape.ctx, static_cast<unsigned long long>(opt.seed), ms_since(t0) / 1000.0);
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  cli::Args args;
  std::string error;
  // One option a line:
  // clang-format off
  if (!cli::parse_args(argc, argv, 2,
                       {{"model", "m", true},
                        {"threads", "t", true},
                        {"prompt", "p", true},
                        {"gen", "n", true},
                        {"reps", "r", true},
                        {"json", "", false},
                        {"synthetic", "", true},
                        {"output", "o", true},
                        {"tokenizer", "", true},
                        {"seed", "", true},
                        {"dim", "", true},
                        {"layers", "", true},
                        {"heads", "", true},
                        {"kv-heads", "", true},
                        {"ffn", "", true},
                        {"vocab", "", true},
                        {"ctx", "", true},
                        {"sequences", "", true},
                        {"chat-turns", "", true},
                        {"shared-prefix", "", true},
                        {"chunk", "", true}},
                       &args, &error)) {
    // clang-format on
    cli::print_error("bench", error);
    return 2;
  }
  if (args.has("synthetic")) return write_synthetic(args);

  long long threads = 1, p = 128, g = 128, reps = 3;
  if ((args.has("threads") && !cli::parse_int(args.get("threads"), 1, 512, &threads)) ||
      (args.has("prompt") && !cli::parse_int(args.get("prompt"), 1, 1 << 20, &p)) ||
      (args.has("gen") && !cli::parse_int(args.get("gen"), 1, 1 << 20, &g)) ||
      (args.has("reps") && !cli::parse_int(args.get("reps"), 1, 1000, &reps))) {
    cli::print_error("bench", "-t must be in 1..512, -p and -n positive, --reps in 1..1000");
    return 2;
  }
  std::vector<uint32_t> counts;  // --sequences 1,2,4: the batch engine's aggregate decode instead
  if (args.has("sequences")) {
    const std::string list = args.get("sequences");
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      long long n = 0;
      if (!cli::parse_int(list.substr(at, comma - at), 1, 16, &n)) {
        cli::print_error("bench", "--sequences takes counts in 1..16 separated by commas, e.g. 1,2,4,8,16");
        return 2;
      }
      counts.push_back(static_cast<uint32_t>(n));
      at = comma + 1;
    }
  }
  // --chat-turns N, --shared-prefix S [--sequences N]: prefix reuse in the engine, on against off.
  PrefixBenchOptions po;
  long long turns = 0, shared = 0, chunk = 64;
  if ((args.has("chat-turns") && !cli::parse_int(args.get("chat-turns"), 1, 100, &turns)) ||
      (args.has("shared-prefix") && !cli::parse_int(args.get("shared-prefix"), 1, 1 << 20, &shared)) ||
      (args.has("chunk") && !cli::parse_int(args.get("chunk"), 1, 1 << 20, &chunk))) {
    cli::print_error("bench", "--chat-turns must be in 1..100, --shared-prefix and --chunk positive");
    return 2;
  }
  if (shared > 0 && counts.size() > 1) {
    cli::print_error("bench", "--shared-prefix takes one --sequences count");
    return 2;
  }
  po.threads = static_cast<uint32_t>(threads);
  po.p = args.has("prompt") ? static_cast<uint32_t>(p) : 32;
  po.g = args.has("gen") ? static_cast<uint32_t>(g) : 32;
  po.reps = static_cast<uint32_t>(reps);
  po.chunk = static_cast<uint32_t>(chunk);
  po.turns = static_cast<uint32_t>(turns);
  po.shared = static_cast<uint32_t>(shared);
  if (!counts.empty()) po.sequences = counts.front();
  po.json = args.has("json");
  // A forced LMRT_ISA this CPU does not run is ignored by the library: say so, or a table would name the wrong ISA.
  if (const char* forced = std::getenv("LMRT_ISA"); forced != nullptr && std::strcmp(forced, lmrt_isa()) != 0)
    std::fprintf(stderr, "lmrt bench: LMRT_ISA=%s is not an instruction set this CPU runs; running %s\n", forced,
                 lmrt_isa());
  const std::string path = cli::model_path(args);
  const auto t_load = Clock::now();
  lmrt_model* model = cli::open_model(path);
  if (model == nullptr) return 1;
  const double load_ms = ms_since(t_load);
  if (po.turns > 0 || po.shared > 0) {
    const int rc = po.turns > 0 ? bench_chat_turns(model, po) : bench_shared_prefix(model, po);
    lmrt_model_close(model);
    return rc;
  }
  if (!counts.empty()) {
    const int rc = bench_sequences(model, counts, static_cast<uint32_t>(threads), static_cast<uint32_t>(p),
                                   static_cast<uint32_t>(g), static_cast<uint32_t>(reps), args.has("json"));
    lmrt_model_close(model);
    return rc;
  }
  lmrt_model_info info;
  info.struct_size = sizeof info;
  lmrt_model_get_info(model, &info);
  if (info.n_vocab <= 259) {
    cli::print_error("bench", "the synthetic prompt needs a vocabulary of more than 259 tokens");
    lmrt_model_close(model);
    return 1;
  }

  // Context as the llama.cpp peer sizes it: P + G rounded up to 256; the whole prompt in one batch.
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = static_cast<uint32_t>((p + g + 255) / 256 * 256);
  cp.n_batch = static_cast<uint32_t>(p);
  cp.n_threads = static_cast<uint32_t>(threads);
  lmrt_context* ctx = nullptr;
  char err[1024] = {0};
  if (lmrt_context_create(model, &cp, &ctx, err, sizeof err) != LMRT_OK) {
    cli::print_error("bench", std::string("cannot create the context: ") + err);
    lmrt_model_close(model);
    return 1;
  }
  const int32_t bos = info.bos_token >= 0 ? info.bos_token : 1;
  Rep warm;
  // Warm-up like the peer's: faults the weights in and wakes the threads.
  bool ok = run_once(ctx, bench_prompt(static_cast<uint32_t>(std::min<long long>(p, 32)), info.n_vocab, bos), 2, &warm);
  const std::vector<int32_t> prompt = bench_prompt(static_cast<uint32_t>(p), info.n_vocab, bos);
  std::vector<Rep> runs(static_cast<size_t>(reps));
  for (Rep& r : runs) ok = ok && run_once(ctx, prompt, static_cast<uint32_t>(g), &r);
  if (!ok) {
    cli::print_error("bench", lmrt_context_last_error(ctx));
    lmrt_context_free(ctx);
    lmrt_model_close(model);
    return 1;
  }
  std::vector<double> pre, dec;
  for (const Rep& r : runs) pre.push_back(r.prefill_tps), dec.push_back(r.decode_tps);
  lmrt_model_arch arch{};
  arch.struct_size = sizeof arch;
  const double head_dim = lmrt_model_get_arch(model, &arch) == LMRT_OK && arch.head_dim != 0
                              ? arch.head_dim
                              : static_cast<double>(info.n_embd) / info.n_head;  // gemma: not n_embd / n_head
  const double kv_bytes = 2.0 * 2.0 * info.n_layer * cp.n_ctx * head_dim * info.n_head_kv;  // K and V, F16
  const double rss = peak_rss_mib();
  const double file_mib = static_cast<double>(info.file_bytes) / (1024.0 * 1024.0);
  const char* isa = lmrt_isa();
  if (args.has("json")) {
    std::string ids;
    for (int32_t id : runs[0].ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    std::printf(
        "{\"model\":%s,\"threads\":%lld,\"P\":%lld,\"G\":%lld,\"reps\":%lld,\"isa\":%s,\"load_ms\":%.2f,"
        "\"prefill_tps_median\":%.2f,\"decode_tps_median\":%.2f,\"peak_rss_mib\":%.1f,\"file_mib\":%.1f,"
        "\"kv_mib\":%.1f,\"ids\":[%s]}\n",
        cli::json_string(path).c_str(), threads, p, g, reps, cli::json_string(isa).c_str(), load_ms, median(pre),
        median(dec), rss, file_mib, kv_bytes / (1024.0 * 1024.0), ids.c_str());
  } else {
    std::printf("model %s (%.1f MiB)  threads=%lld P=%lld G=%lld reps=%lld ctx=%u isa=%s\n", path.c_str(), file_mib,
                threads, p, g, reps, cp.n_ctx, isa);
    std::printf("load ms: %.1f\n", load_ms);
    for (size_t i = 0; i < runs.size(); ++i)
      std::printf("rep %zu: prefill %.1f tok/s   decode %.1f tok/s\n", i, runs[i].prefill_tps, runs[i].decode_tps);
    std::printf("prefill tokens/s: %.1f\ndecode tokens/s: %.1f\n", median(pre), median(dec));
    std::printf("peak RSS: %.1f MiB (file %.1f MiB + KV %.1f MiB + 64 MiB = %.1f MiB budget)\n", rss, file_mib,
                kv_bytes / (1024.0 * 1024.0), file_mib + kv_bytes / (1024.0 * 1024.0) + 64.0);
  }
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return 0;
}
