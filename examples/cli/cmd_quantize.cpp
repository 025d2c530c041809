// `lmrt quantize -m MODEL -o FILE TYPE [-t N]`: quantizes an F32/F16/BF16/Q8_0 model to one of
// llama.cpp's file types (tools/quantize_file.h), with a progress bar when stderr is a terminal.
// `lmrt quantize --interleave -m MODEL -o FILE`: rewrites a model's Q4_0 matrices as lmrt's interleaved
// Q4_0x16 (tools/interleave_file.h), the layout the x86 decode kernels stream fastest.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "cli_common.h"
#include "tools/interleave_file.h"
#include "tools/quantize_file.h"

namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int interleave(const std::string& in, const std::string& out) {
  const auto t0 = std::chrono::steady_clock::now();
  lmrt::InterleaveReport r;
  const lmrt::Status s = lmrt::interleave_model_file(in, out, &r);
  if (!s.ok()) {
    cli::print_error("quantize", s.message());
    return 1;
  }
  std::printf("wrote %s: %llu Q4_0 matrices interleaved as Q4_0x16 (%s), %llu tensors copied (%s), %s in %.1f s\n",
              out.c_str(), static_cast<unsigned long long>(r.tensors_converted), mib(r.bytes_converted).c_str(),
              static_cast<unsigned long long>(r.tensors_copied), mib(r.bytes_copied).c_str(),
              mib(r.output_bytes).c_str(), seconds_since(t0));
  return 0;
}

// "\r[#####.....]  42 %" on stderr, redrawn only when the percentage changes.
void draw_progress(uint64_t done, uint64_t total, int* last_percent) {
  const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
  if (percent == *last_percent) return;
  *last_percent = percent;
  constexpr int kWidth = 40;
  std::string bar(kWidth, '.');
  for (int i = 0; i < percent * kWidth / 100; ++i) bar[i] = '#';
  std::fprintf(stderr, "\rquantizing [%s] %3d %%", bar.c_str(), percent);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2,
                       {{"model", "m", true}, {"output", "o", true}, {"threads", "t", true}, {"interleave", "", false}},
                       &args, &error)) {
    cli::print_error("quantize", error);
    return 2;
  }
  const std::string usage = "usage: lmrt quantize -m MODEL -o FILE TYPE [-t THREADS] (TYPE one of " +
                            lmrt::quant_file_type_names() + "), or lmrt quantize --interleave -m MODEL -o FILE";
  const std::string in = cli::model_path(args), out = args.get("output");
  if (in.empty() || out.empty()) {
    cli::print_error("quantize",
                     (in.empty() ? "no model: give one with -m FILE or LMRT_MODEL" : "give the output with -o FILE") +
                         std::string("; ") + usage);
    return 2;
  }
  if (args.has("interleave")) {
    if (!args.positional.empty() || args.has("threads")) {
      cli::print_error("quantize", "--interleave takes no TYPE and no -t; " + usage);
      return 2;
    }
    return interleave(in, out);
  }
  if (args.positional.size() != 1) {
    cli::print_error("quantize", (args.positional.empty() ? std::string("give the TYPE to quantize to")
                                                          : "one TYPE only, not '" + args.positional[1] + "'") +
                                     "; " + usage);
    return 2;
  }
  lmrt::QuantizeFileOptions opt;
  if (!lmrt::quant_file_type_from_name(args.positional[0], &opt.file_type)) {
    cli::print_error("quantize",
                     "unknown TYPE '" + args.positional[0] + "' (one of " + lmrt::quant_file_type_names() + ")");
    return 2;
  }
  long long threads = 0;
  if (args.has("threads") && !cli::parse_int(args.get("threads"), 1, 512, &threads)) {
    cli::print_error("quantize", "-t takes a thread count from 1 to 512, not '" + args.get("threads") + "'");
    return 2;
  }
  opt.n_threads = threads > 0 ? static_cast<size_t>(threads) : std::max(1u, std::thread::hardware_concurrency());
  int last_percent = -1;
  if (::isatty(STDERR_FILENO) != 0)
    opt.progress = [&](uint64_t done, uint64_t total) { draw_progress(done, total, &last_percent); };

  const auto t0 = std::chrono::steady_clock::now();
  lmrt::QuantizeFileReport r;
  const lmrt::Status s = lmrt::quantize_model_file(in, out, opt, &r);
  if (!s.ok()) {
    if (last_percent >= 0 && last_percent < 100) std::fputc('\n', stderr);
    cli::print_error("quantize", s.message());
    return 1;
  }
  std::string mix;
  for (const auto& [name, count] : r.type_counts)
    mix += (mix.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  std::printf("wrote %s (%s): %llu tensors quantized, %llu copied (%s); %s -> %s in %.1f s with %zu threads\n",
              out.c_str(), lmrt::quant_file_type_name(opt.file_type),
              static_cast<unsigned long long>(r.tensors_quantized), static_cast<unsigned long long>(r.tensors_copied),
              mix.c_str(), mib(r.input_bytes).c_str(), mib(r.output_bytes).c_str(), seconds_since(t0), opt.n_threads);
  return 0;
}
