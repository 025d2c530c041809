// `lmrt quantize --interleave -m MODEL -o FILE`: rewrites a model's Q4_0 matrices as lmrt's interleaved
// Q4_0x16 (tools/interleave_file.h), the layout the x86 decode kernels stream fastest.
#include <chrono>
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "tools/interleave_file.h"

namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2, {{"model", "m", true}, {"output", "o", true}, {"interleave", "", false}}, &args,
                       &error)) {
    cli::print_error("quantize", error);
    return 2;
  }
  if (!args.positional.empty()) {
    cli::print_error("quantize", "unexpected argument '" + args.positional.front() + "'");
    return 2;
  }
  if (!args.has("interleave")) {
    cli::print_error("quantize",
                     "give --interleave: rewriting Q4_0 matrices as lmrt's interleaved Q4_0x16 is the only conversion "
                     "it does (usage: lmrt quantize --interleave -m MODEL -o FILE)");
    return 2;
  }
  const std::string in = cli::model_path(args), out = args.get("output");
  if (in.empty() || out.empty()) {
    cli::print_error("quantize",
                     in.empty() ? "no model: give one with -m FILE or LMRT_MODEL" : "give the output with -o FILE");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  lmrt::InterleaveReport r;
  const lmrt::Status s = lmrt::interleave_model_file(in, out, &r);
  if (!s.ok()) {
    cli::print_error("quantize", s.message());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %llu Q4_0 matrices interleaved as Q4_0x16 (%s), %llu tensors copied (%s), %s in %.1f s\n",
              out.c_str(), static_cast<unsigned long long>(r.tensors_converted), mib(r.bytes_converted).c_str(),
              static_cast<unsigned long long>(r.tensors_copied), mib(r.bytes_copied).c_str(),
              mib(r.output_bytes).c_str(), secs);
  return 0;
}
