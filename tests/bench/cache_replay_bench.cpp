// Replay of a cached 256-token completion vs generating it: medians over repetitions.
// usage: cache_replay_bench MODEL.gguf [REPS]   (prints one JSON line)
#include <lmrt/lmrt.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int count_pieces(void* user, const lmrt_token_event*) {
  ++*static_cast<int*>(user);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [REPS]\n", argv[0]);
    return 2;
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  char err[512];
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  lmrt_cache* cache = nullptr;
  if (lmrt_model_open(argv[1], nullptr, &model, err, sizeof err) != LMRT_OK) {
    std::fprintf(stderr, "%s\n", err);
    return 1;
  }
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 512;
  if (lmrt_context_create(model, &cp, &ctx, err, sizeof err) != LMRT_OK) return 1;
  const std::string path = "/tmp/lmrt-cache-bench-" + std::to_string(::getpid()) + ".sqlite";
  if (lmrt_cache_open(path.c_str(), nullptr, &cache, err, sizeof err) != LMRT_OK) {
    std::fprintf(stderr, "%s\n", err);
    return 1;
  }
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = "Once upon a time";
  req.prompt_len = static_cast<size_t>(-1);
  req.max_tokens = 256;
  req.logprobs = 5;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  std::vector<double> generate_ms, replay_ms;
  int pieces = 0;
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < reps; ++i) {  // uncached: a fresh context each time, no prefix reuse
    lmrt_context_reset(ctx);
    const auto t0 = Clock::now();
    lmrt_generate(ctx, &req, count_pieces, &pieces, &res);
    generate_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const uint32_t tokens = res.completion_tokens;
  req.cache = cache;
  lmrt_generate(ctx, &req, nullptr, nullptr, &res);  // the miss that stores it
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    lmrt_generate(ctx, &req, count_pieces, &pieces, &res);
    replay_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!res.cache_hit) std::fprintf(stderr, "expected a cache hit\n");
  }
  std::printf("{\"tokens\":%u,\"reps\":%d,\"generate_ms_median\":%.3f,\"replay_ms_median\":%.3f,\"speedup\":%.1f}\n",
              tokens, reps, median(generate_ms), median(replay_ms), median(generate_ms) / median(replay_ms));
  lmrt_context_free(ctx);
  lmrt_cache_close(cache);
  lmrt_model_close(model);
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  return 0;
}
