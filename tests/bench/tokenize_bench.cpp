// Tokenizer speed through the C API: tokenizes a file REPS times and prints the median thread CPU
// time and wall time (the model is opened once, outside the timing), tokens and MB/s. CPU time is
// the number to compare on a shared machine: wall time counts other processes' turns too.
// usage: lmrt_tokenize_bench MODEL FILE [REPS=5]     (no BOS, special tokens not parsed)
#include <lmrt/lmrt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL FILE [REPS=5]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  lmrt_model* model = nullptr;
  char err[512] = {0};
  if (lmrt_model_open(argv[1], nullptr, &model, err, sizeof err) != LMRT_OK) {
    std::fprintf(stderr, "%s\n", err);
    return 1;
  }
  std::vector<int32_t> ids(text.size() + 16);
  std::vector<double> cpu, wall;
  size_t n = 0;
  for (int r = 0; r < reps; ++r) {
    const double c0 = thread_cpu_s();
    const auto w0 = std::chrono::steady_clock::now();
    if (lmrt_tokenize(model, text.data(), text.size(), 0, ids.data(), ids.size(), &n) != LMRT_OK) {
      std::fprintf(stderr, "tokenize: %s\n", lmrt_model_last_error(model));
      lmrt_model_close(model);
      return 1;
    }
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
    cpu.push_back(thread_cpu_s() - c0);
  }
  const double c = median(cpu);
  std::printf("bytes %zu tokens %zu cpu_s %.3f wall_s %.3f MB_per_cpu_s %.2f\n", text.size(), n, c, median(wall),
              text.size() / 1e6 / c);
  lmrt_model_close(model);
  return 0;
}
