// Single-thread speed of every 8-bit-activation matmul of an ISA's kernel table (the Q4_0 kernel and
// simd/quant_kernels.h), on one weight shape: decode (one token) in GB/s of weight bytes read, over enough copies
// of the matrix that they stream from memory (and over one copy, from cache), and prefill (n_tok tokens)
// in GFLOP/s; and a batch of NTOK tokens over the copies from memory, as a batched decode step of NTOK sequences
// reads them, in GB/s of weight bytes (its ratio to the decode column is what a step of NTOK tokens costs against
// one of a single token). Medians over passes, and the best pass. Times are the thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), so time spent descheduled on a shared, loaded host does not count; memory
// stalls do. Weights are random valid blocks (the speed does not depend on them).
// usage: quant_matmul_bench [ISA=best] [ROWS=5632] [N=2048] [COPIES=24] [PASSES=15] [NTOK=64] [KERNEL]
// (KERNEL: only the kernel of that name, e.g. Q4_0x16; or several, comma-separated, e.g. Q6_K,Q6_Kx8, measured
// pass by pass in one process so that their figures compare on a noisy host)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "formats/blocks.h"
#include "formats/q4_0x16.h"
#include "runtime/util/huge_page_buffer.h"
#include "simd/kernels.h"

namespace {

using namespace lmrt;
using namespace lmrt::simd;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds of CPU time this thread has used.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double best(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

struct Kernel {
  const char* name;
  MatmulFn fn;
  size_t block_elems, block_bytes;
  bool q8_k;  // Q8_K activations (else BlockQ8Act)
};

// Every block type the ISA's table multiplies with 8-bit activations: Q4_0 first, then the others in the
// type table's order (Q4_0x16 when the rows are whole groups of 16).
std::vector<Kernel> kernels(Isa isa, size_t rows) {
  const Kernels& k = kernels_for(isa);
  std::vector<Kernel> v;
  for (const TensorTypeTraits& t : all_tensor_types()) {
    if (t.type == TensorType::q4_0x16 && rows % kQ4_0x16Rows != 0) continue;
    const Matmul& m = matmul_for(k, t.type);
    if (m.input == ActivationFormat::f32) continue;
    v.push_back({t.name, m.fn, t.block_size, t.block_bytes, m.input == ActivationFormat::q8_k});
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Isa isa = best_isa();
  if (argc > 1 && std::strcmp(argv[1], "best") != 0) {
    bool found = false;
    for (Isa i : kAllIsas)
      if (std::strcmp(argv[1], isa_name(i)) == 0 && isa_available(i)) {
        isa = i;
        found = true;
      }
    if (!found) {
      std::fprintf(stderr, "ISA %s is not available here\n", argv[1]);
      return 2;
    }
  }
  const size_t rows = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 5632;
  const size_t n = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 2048;
  const size_t copies = argc > 4 ? std::strtoul(argv[4], nullptr, 10) : 24;
  const int passes = argc > 5 ? std::atoi(argv[5]) : 15;
  const size_t n_tok = argc > 6 ? std::strtoul(argv[6], nullptr, 10) : 64;
  const char* only = argc > 7 ? argv[7] : nullptr;
  if (n % 256 != 0 || rows == 0 || copies == 0 || passes <= 0 || n_tok == 0) {
    std::fprintf(stderr, "N must be a multiple of 256; ROWS, COPIES, PASSES, NTOK positive\n");
    return 2;
  }
  std::printf("isa %s, %zu x %zu, %zu copies, %d passes, prefill %zu tokens, 1 thread\n", isa_name(isa), rows, n,
              copies, passes, n_tok);
  std::printf("%-22s %8s %20s %20s %20s %20s\n", "kernel", "MB/copy", "decode GB/s med/best", "cached GB/s med/best",
              "prefill GF/s med/best", "batch GB/s med/best");

  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> xf(n_tok * n);
  for (float& f : xf) f = normal(rng);
  std::vector<BlockQ8_K> x8k(n_tok * n / 256);
  std::vector<BlockQ8Act> x8(n_tok * n / 32);
  const Kernels& table = kernels_for(isa);
  for (size_t t = 0; t < n_tok; ++t) {
    kernels_for(Isa::scalar).quantize_q8_k(xf.data() + t * n, x8k.data() + t * n / 256, n);
    table.quantize_q8_act(xf.data() + t * n, x8.data() + t * n / 32, n);
  }
  std::vector<float> y(n_tok * rows);

  // The kernels measured together, pass by pass: the ones KERNEL names, or each kernel of the table alone.
  std::vector<std::vector<Kernel>> groups;
  const std::vector<Kernel> all = kernels(isa, rows);
  if (only != nullptr) {
    groups.emplace_back();
    for (std::string names = only; !names.empty();) {
      const size_t comma = names.find(',');
      const std::string name = names.substr(0, comma);
      names = comma == std::string::npos ? "" : names.substr(comma + 1);
      auto it = std::find_if(all.begin(), all.end(), [&](const Kernel& k) { return name == k.name; });
      if (it == all.end()) {
        std::fprintf(stderr, "no 8-bit-activation kernel named %s in the %s table\n", name.c_str(), isa_name(isa));
        return 2;
      }
      groups.back().push_back(*it);
    }
  } else {
    for (const Kernel& k : all) groups.push_back({k});
  }

  struct Run {
    Kernel k;
    size_t row_bytes = 0, bytes = 0;
    lmrt::HugePageBuffer w;
    std::vector<double> stream, cached, prefill, batch;
  };
  for (const std::vector<Kernel>& group : groups) {
    std::vector<Run> runs(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      Run& r = runs[i];
      r.k = group[i];
      r.row_bytes = n / r.k.block_elems * r.k.block_bytes;
      r.bytes = rows * r.row_bytes;
      // On huge pages, as the model's repacked weights are (runtime/util/huge_page_buffer.h): on 4 KiB pages
      // the kernels streamed slower here than the model's decode does.
      if (!r.w.allocate(copies * r.bytes)) {
        std::fprintf(stderr, "cannot allocate %zu bytes\n", copies * r.bytes);
        return 1;
      }
      std::span<uint8_t> w(r.w.data(), copies * r.bytes);
      for (auto& b : w) b = static_cast<uint8_t>(rng());
      // Random bytes with every 16-bit pair that reads as an fp16 Inf or NaN made finite, so the scales are
      // finite wherever the layout keeps them (the quant bytes' values do not change the speed).
      for (size_t blk = 0; blk < w.size() / r.k.block_bytes; ++blk)
        for (size_t o = 0; o + 1 < r.k.block_bytes; o += 2)
          if ((w[blk * r.k.block_bytes + o + 1] & 0x7C) == 0x7C) w[blk * r.k.block_bytes + o + 1] = 0x3C;
    }
    // Pass p of every kernel of the group before pass p + 1 of any: on a shared host the slow and fast spells
    // then fall on all of them alike, so their medians compare.
    for (int p = 0; p < passes; ++p)
      for (Run& r : runs) {
        const Kernel& k = r.k;
        const uint8_t* w = r.w.data();
        const size_t row_bytes = r.row_bytes, bytes = r.bytes;
        const void* x = k.q8_k ? static_cast<const void*>(x8k.data()) : static_cast<const void*>(x8.data());
        const size_t x_row_bytes = k.q8_k ? n / 256 * sizeof(BlockQ8_K) : n / 32 * sizeof(BlockQ8Act);
        double t0 = cpu_seconds();
        for (size_t c = 0; c < copies; ++c)
          k.fn(w + c * bytes, row_bytes, x, x_row_bytes, n, 1, 0, rows, y.data(), rows);
        r.stream.push_back(static_cast<double>(copies * bytes) / (cpu_seconds() - t0) / 1e9);
        t0 = cpu_seconds();
        for (size_t c = 0; c < 4; ++c) k.fn(w, row_bytes, x, x_row_bytes, n, 1, 0, rows, y.data(), rows);
        r.cached.push_back(static_cast<double>(4 * bytes) / (cpu_seconds() - t0) / 1e9);
        t0 = cpu_seconds();
        for (size_t c = 0; c < copies; ++c)
          k.fn(w + c * bytes, row_bytes, x, x_row_bytes, n, n_tok, 0, rows, y.data(), rows);
        r.batch.push_back(static_cast<double>(copies * bytes) / (cpu_seconds() - t0) / 1e9);
        if (p < 3) {
          t0 = cpu_seconds();
          k.fn(w, row_bytes, x, x_row_bytes, n, n_tok, 0, rows, y.data(), rows);
          r.prefill.push_back(2.0 * static_cast<double>(rows * n * n_tok) / (cpu_seconds() - t0) / 1e9);
        }
      }
    for (const Run& r : runs)
      std::printf("%-22s %8.1f %13.1f %6.1f %13.1f %6.1f %13.1f %6.1f %13.1f %6.1f\n", r.k.name,
                  static_cast<double>(r.bytes) / 1e6, median(r.stream), best(r.stream), median(r.cached),
                  best(r.cached), median(r.prefill), best(r.prefill), median(r.batch), best(r.batch));
  }
  return 0;
}
