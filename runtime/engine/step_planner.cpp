#include "runtime/engine/step_planner.h"

#include <algorithm>

namespace lmrt {

StepPlanner::StepPlanner(uint32_t n_lanes, uint32_t n_batch, uint32_t chunk, uint32_t min_tail)
    : n_batch_(std::max<uint32_t>(n_batch, 1)), chunk_(std::max<uint32_t>(chunk, 1)), min_tail_(min_tail) {
  takes_.reserve(n_lanes);
}

const std::vector<StepPlanner::Take>& StepPlanner::plan(const std::vector<Lane>& lanes) {
  takes_.clear();
  const uint32_t n_lanes = static_cast<uint32_t>(lanes.size());
  uint32_t used = 0;
  for (uint32_t i = 0; i < n_lanes && used < n_batch_; ++i)
    if (lanes[i].decoding) {
      takes_.push_back({i, 1});
      ++used;
    }
  bool first = true;
  const uint32_t start = next_prefill_;
  for (uint32_t k = 0; k < n_lanes && used < n_batch_; ++k) {
    const uint32_t i = (start + k) % n_lanes;
    if (lanes[i].decoding || lanes[i].prompt_left == 0) continue;
    uint32_t n = std::min({lanes[i].prompt_left, chunk_, n_batch_ - used});
    if (lanes[i].prompt_left - n < min_tail_ && lanes[i].prompt_left <= n_batch_ - used) n = lanes[i].prompt_left;
    takes_.push_back({i, n});
    used += n;
    if (first) {
      next_prefill_ = (i + 1) % n_lanes;  // the next step starts after the prompt that went first now
      first = false;
    }
  }
  return takes_;
}

}  // namespace lmrt
