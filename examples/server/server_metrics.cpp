#include "server_metrics.h"

#include <cmath>
#include <cstdio>

namespace server {

namespace {

void header(std::string* out, const char* name, const char* help, const char* type) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

// Enough digits for counters up to 2^53 and for sums of seconds; bucket bounds print as written.
std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

void scalar(std::string* out, const char* name, const char* help, const char* type, double value) {
  header(out, name, help, type);
  *out += name;
  *out += ' ';
  *out += number(value);
  *out += '\n';
}

}  // namespace

void LatencyHistogram::observe(double seconds, uint64_t count) {
  if (count == 0 || !std::isfinite(seconds) || seconds < 0) return;
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets_[i].fetch_add(count, std::memory_order_relaxed);
  count_.fetch_add(count, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e6)) * count, std::memory_order_relaxed);
}

void LatencyHistogram::write(std::string* out, const char* name, const char* help) const {
  header(out, name, help, "histogram");
  // Buckets are kept per interval and written cumulatively; the +Inf bucket equals _count.
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    *out += name;
    *out += "_bucket{le=\"";
    *out += i < kBounds.size() ? number(kBounds[i]) : "+Inf";
    *out += "\"} " + std::to_string(cumulative) + "\n";
  }
  *out += name;
  *out += "_sum " + number(static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6) + "\n";
  *out += name;
  *out += "_count " + std::to_string(cumulative) + "\n";
}

void ServerMetrics::record_status(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++by_status_[status];
}

void ServerMetrics::record_choice(const lmrt_context* ctx, uint32_t prompt_tokens, uint32_t reused_tokens,
                                  uint32_t completion_tokens, double ttft_ms, double decode_ms, uint32_t kv_cells) {
  prompt_tokens_.fetch_add(prompt_tokens, std::memory_order_relaxed);
  reused_tokens_.fetch_add(reused_tokens, std::memory_order_relaxed);
  completion_tokens_.fetch_add(completion_tokens, std::memory_order_relaxed);
  choices_.fetch_add(1, std::memory_order_relaxed);
  if (completion_tokens > 0) ttft_.observe(ttft_ms / 1000);
  // decode_ms covers every token after the first: each of them counts once at the choice's mean.
  if (completion_tokens > 1) per_token_.observe(decode_ms / 1000 / (completion_tokens - 1), completion_tokens - 1);
  std::lock_guard<std::mutex> lock(mu_);
  kv_cells_[ctx] = kv_cells;
}

std::string ServerMetrics::render(const MetricsGauges& g) const {
  std::string out;
  uint64_t kv_used = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    header(&out, "lmrt_requests_total", "HTTP requests answered, by status code.", "counter");
    for (const auto& [status, n] : by_status_)
      out += "lmrt_requests_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
    for (const auto& [ctx, cells] : kv_cells_) kv_used += cells;
  }
  if (g.kv_cells_used) kv_used = *g.kv_cells_used;
  scalar(&out, "lmrt_generations_total", "Finished generations (each choice of a request counts once).", "counter",
         static_cast<double>(choices_.load()));
  scalar(&out, "lmrt_prompt_tokens_total", "Prompt tokens of finished generations.", "counter",
         static_cast<double>(prompt_tokens_.load()));
  scalar(&out, "lmrt_prompt_tokens_reused_total",
         "Prompt tokens whose KV entries were reused instead of evaluated (held prefix or prefix cache).", "counter",
         static_cast<double>(reused_tokens_.load()));
  scalar(&out, "lmrt_completion_tokens_total", "Generated tokens.", "counter",
         static_cast<double>(completion_tokens_.load()));
  scalar(&out, "lmrt_queue_depth", "Requests (or choices) being prepared or waiting for a context or a sequence.",
         "gauge", static_cast<double>(g.queued));
  scalar(&out, "lmrt_queue_limit", "Requests that may wait before the server answers 429.", "gauge",
         static_cast<double>(g.queue_limit));
  scalar(&out, "lmrt_slots_busy", "Sequences (or contexts) generating now.", "gauge",
         static_cast<double>(g.slots_busy));
  scalar(&out, "lmrt_slots_total", "Sequences of the batch engine (or contexts) of the server (--parallel).", "gauge",
         static_cast<double>(g.slots_total));
  scalar(&out, "lmrt_kv_cells_used",
         "KV cells (token positions) held: the shared arena's now, or as each context's last generation left it.",
         "gauge", static_cast<double>(kv_used));
  scalar(&out, "lmrt_kv_cells_total", "KV cells of the shared arena or of all contexts (n_ctx x --parallel).", "gauge",
         static_cast<double>(g.kv_cells_total));
  ttft_.write(&out, "lmrt_time_to_first_token_seconds",
              "From the start of a generation (prompt prefill included, queue wait not) to its first token.");
  per_token_.write(&out, "lmrt_time_per_output_token_seconds",
                   "Decode time of each generated token after the first (its generation's mean).");
  return out;
}

}  // namespace server
