// Unit tests of the server's metrics text and its answers while loading (no network).
#include <gtest/gtest.h>

#include <string>

#include "loading_answer.h"
#include "server_metrics.h"

namespace server {
namespace {

// The value of the sample line that starts with `series` + " ", or -1.
double sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(ServerMetrics, HistogramBucketsAreCumulativeWithTheBoundInclusive) {
  ServerMetrics m;
  // ttft 1 ms (on the 0.001 bound: in its bucket), 30 ms; per-token: 9 tokens after the first at 4 ms.
  m.record_choice(nullptr, 5, 0, 1, 1.0, 0, 6);
  m.record_choice(nullptr, 7, 3, 10, 30.0, 36.0, 17);
  const std::string text = m.render(MetricsGauges{1, 2, 3, 8, 1024, std::nullopt});
  EXPECT_EQ(sample(text, "lmrt_time_to_first_token_seconds_bucket{le=\"0.001\"}"), 1);
  EXPECT_EQ(sample(text, "lmrt_time_to_first_token_seconds_bucket{le=\"0.025\"}"), 1);
  EXPECT_EQ(sample(text, "lmrt_time_to_first_token_seconds_bucket{le=\"0.05\"}"), 2);
  EXPECT_EQ(sample(text, "lmrt_time_to_first_token_seconds_bucket{le=\"+Inf\"}"), 2);
  EXPECT_EQ(sample(text, "lmrt_time_to_first_token_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(sample(text, "lmrt_time_to_first_token_seconds_sum"), 0.031);
  EXPECT_EQ(sample(text, "lmrt_time_per_output_token_seconds_bucket{le=\"0.0025\"}"), 0);
  EXPECT_EQ(sample(text, "lmrt_time_per_output_token_seconds_bucket{le=\"0.005\"}"), 9);
  EXPECT_EQ(sample(text, "lmrt_time_per_output_token_seconds_count"), 9);
  EXPECT_EQ(sample(text, "lmrt_prompt_tokens_total"), 12);
  EXPECT_EQ(sample(text, "lmrt_prompt_tokens_reused_total"), 3);
  EXPECT_EQ(sample(text, "lmrt_completion_tokens_total"), 11);
  EXPECT_EQ(sample(text, "lmrt_kv_cells_used"), 17);  // one context (nullptr here): its last choice counts
  EXPECT_EQ(sample(text, "lmrt_slots_busy"), 1);
  EXPECT_EQ(sample(text, "lmrt_slots_total"), 2);
  EXPECT_EQ(sample(text, "lmrt_queue_depth"), 3);
  EXPECT_EQ(sample(text, "lmrt_kv_cells_total"), 1024);
}

TEST(ServerMetrics, StatusesAreCountedPerCode) {
  ServerMetrics m;
  for (int s : {200, 200, 429, 200, 401}) m.record_status(s);
  const std::string text = m.render(MetricsGauges{});
  EXPECT_EQ(sample(text, "lmrt_requests_total{code=\"200\"}"), 3);
  EXPECT_EQ(sample(text, "lmrt_requests_total{code=\"429\"}"), 1);
  EXPECT_EQ(sample(text, "lmrt_requests_total{code=\"401\"}"), 1);
  EXPECT_NE(text.find("# TYPE lmrt_requests_total counter\n"), std::string::npos);
}

TEST(ServerLoading, HealthSaysLoadingAndHostRulesStillApply) {
  AccessPolicy policy{"127.0.0.1", {}, "", "key"};
  HttpRequest health{"GET", "/health", {{"host", "127.0.0.1:8080"}}, "", "127.0.0.1"};
  HttpOutcome out = loading_answer(policy, health);
  EXPECT_EQ(out.response.status, 503);
  EXPECT_EQ(out.response.body, R"({"status":"loading"})");
  HttpRequest api{"POST", "/v1/completions", {{"host", "127.0.0.1"}}, "{}", "127.0.0.1"};
  out = loading_answer(policy, api);
  EXPECT_EQ(out.response.status, 503);
  EXPECT_NE(out.response.body.find("\"loading\""), std::string::npos);
  HttpRequest rebound{"GET", "/health", {{"host", "evil.example"}}, "", "127.0.0.1"};
  EXPECT_EQ(loading_answer(policy, rebound).response.status, 421);
}

}  // namespace
}  // namespace server
