// Read bandwidth of this machine: T threads each stream their share of a buffer far larger than the
// caches with 256-bit loads; prints the median GB/s over several passes.
// usage: read_bandwidth THREADS [MiB=1024] [PASSES=9]     (build: g++ -O2 -mavx2 -pthread)
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// XOR of every 32-byte word in [p, p + bytes), so the loads cannot be optimised away.
__m256i read_span(const __m256i* p, size_t words) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i + 4 <= words; i += 4) {
    a = _mm256_xor_si256(a, _mm256_load_si256(p + i));
    b = _mm256_xor_si256(b, _mm256_load_si256(p + i + 1));
    c = _mm256_xor_si256(c, _mm256_load_si256(p + i + 2));
    d = _mm256_xor_si256(d, _mm256_load_si256(p + i + 3));
  }
  return _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
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
  auto* buf = static_cast<__m256i*>(std::aligned_alloc(64, bytes));
  if (buf == nullptr) return 1;
  std::memset(buf, 1, bytes);
  const size_t words = bytes / sizeof(__m256i), share = words / threads / 4 * 4;

  std::vector<double> gbs;
  std::atomic<int> ready{0};
  volatile long long sink = 0;
  for (int pass = 0; pass < passes + 1; ++pass) {  // the first pass only warms up
    ready = 0;
    std::vector<std::thread> pool;
    std::vector<long long> out(threads);
    std::atomic<bool> go{false};
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        const __m256i v = read_span(buf + t * share, share);
        out[t] = _mm256_extract_epi64(v, 0);
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
  std::printf("read bandwidth, %d thread(s), %zu MiB: median %.1f GB/s (min %.1f, max %.1f)\n", threads, mib,
              gbs[gbs.size() / 2], gbs.front(), gbs.back());
  std::free(buf);
  return 0;
}
