// Read bandwidth of this machine: T threads each stream their share of a buffer far larger than the
// caches with 256-bit loads, prints the median GB/s over several passes for each access pattern and
// reports the best pattern's median as the bandwidth. One stream per thread is not always the ceiling: on
// Zen 5 a core reads the most from several distant streams at once, on Zen 4 from one (BENCHMARKS.md,
// 2026-12-07), and lmrt's decode reads whichever way is faster there, so the roofline uses the best pattern.
// usage: read_bandwidth THREADS [MiB=1024] [PASSES=9]     (build: g++ -O2 -mavx2 -pthread)
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kWordsPerStep = 4;  // 128 bytes of each stream per step

// XOR of every 32-byte word of S equal contiguous streams covering [p, p + words), read side by side.
template <int S>
__m256i read_streams(const __m256i* p, size_t words) {
  const size_t per = words / S / kWordsPerStep * kWordsPerStep;
  __m256i acc[S];
  for (int s = 0; s < S; ++s) acc[s] = _mm256_setzero_si256();
  for (size_t i = 0; i < per; i += kWordsPerStep)
    for (int s = 0; s < S; ++s)
      for (size_t j = 0; j < kWordsPerStep; ++j)
        acc[s] = _mm256_xor_si256(acc[s], _mm256_load_si256(p + s * per + i + j));
  for (int s = 1; s < S; ++s) acc[0] = _mm256_xor_si256(acc[0], acc[s]);
  return acc[0];
}

__m256i read_span(int streams, const __m256i* p, size_t words) {
  switch (streams) {
    case 1:
      return read_streams<1>(p, words);
    case 2:
      return read_streams<2>(p, words);
    case 4:
      return read_streams<4>(p, words);
    default:
      return read_streams<8>(p, words);
  }
}

// Median GB/s of `passes` timed passes (after one warm-up) with `threads` threads of `streams` streams.
double measure(__m256i* buf, size_t words, int threads, int streams, int passes) {
  const size_t share = words / threads / (8 * kWordsPerStep) * (8 * kWordsPerStep);
  std::vector<double> gbs;
  volatile long long sink = 0;
  for (int pass = 0; pass < passes + 1; ++pass) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<long long> out(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        out[t] = _mm256_extract_epi64(read_span(streams, buf + t * share, share), 0);
      });
    while (ready.load() < threads) {
    }
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (long long o : out) sink = sink + o;
    if (pass > 0) gbs.push_back(static_cast<double>(share * threads * sizeof(__m256i)) / s / 1e9);
  }
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: read_bandwidth THREADS [MiB=1024] [PASSES=9]\n");
    return 2;
  }
  const int threads = std::max(1, std::atoi(argv[1]));
  const size_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1024;
  const int passes = argc > 3 ? std::max(1, std::atoi(argv[3])) : 9;
  const size_t bytes = mib << 20;
  // Transparent huge pages, as lmrt's repacked weights and buffers get (runtime/util/huge_page_buffer.h): on a host
  // whose THP mode is madvise, 4 KiB pages read markedly slower (TLB misses), and the ceiling would be too low.
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 1;
  madvise(mem, bytes, MADV_HUGEPAGE);
  auto* buf = static_cast<__m256i*>(mem);
  std::memset(buf, 1, bytes);
  const size_t words = bytes / sizeof(__m256i);

  double best = 0;
  int best_streams = 1;
  for (int streams : {1, 2, 4, 8}) {
    const double g = measure(buf, words, threads, streams, passes);
    std::fprintf(stderr, "  %d thread(s) x %d stream(s): median %.1f GB/s\n", threads, streams, g);
    if (g > best) best = g, best_streams = streams;
  }
  std::printf("read bandwidth, %d thread(s), %zu MiB: median %.1f GB/s (best of 1/2/4/8 streams per thread: %d)\n",
              threads, mib, best, best_streams);
  munmap(mem, bytes);
  return 0;
}
