// The server's counters, gauges and latency histograms, written out in Prometheus's text
// exposition format (version 0.0.4) for GET /metrics. Recording is lock-free on the hot path
// (atomics); the per-context KV gauge and the status table take a short mutex.
#pragma once

#include <lmrt/lmrt.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace server {

// A cumulative histogram over fixed upper bounds (seconds), as Prometheus reads one.
class LatencyHistogram {
 public:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,   30};
  // Adds `count` observations of `seconds` each.
  void observe(double seconds, uint64_t count = 1);
  // "# HELP/# TYPE" and the _bucket, _sum and _count lines of `name`.
  void write(std::string* out, const char* name, const char* help) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  // the last one is +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
};

// What the server reports besides its own counters, read when /metrics is asked for.
struct MetricsGauges {
  size_t slots_busy = 0, slots_total = 0, queued = 0, queue_limit = 0;
  uint64_t kv_cells_total = 0;
  std::optional<uint64_t> kv_cells_used;  // the batch engine's arena; else what the contexts' last choices left
};

class ServerMetrics {
 public:
  // An HTTP answer was given with this status (any route, refusals included).
  void record_status(int status);
  // A finished generation (one choice) on `ctx`: tokens, latencies and the KV cells it now holds.
  void record_choice(const lmrt_context* ctx, uint32_t prompt_tokens, uint32_t reused_tokens,
                     uint32_t completion_tokens, double ttft_ms, double decode_ms, uint32_t kv_cells);
  // The exposition text.
  std::string render(const MetricsGauges& gauges) const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> by_status_;
  std::map<const lmrt_context*, uint32_t> kv_cells_;  // per context, as its last choice left it
  std::atomic<uint64_t> prompt_tokens_{0}, reused_tokens_{0}, completion_tokens_{0}, choices_{0};
  LatencyHistogram ttft_, per_token_;
};

// The content type of the exposition format.
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace server
