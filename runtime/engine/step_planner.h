// Which tokens go into the next forward pass of the batch engine. Every decoding sequence puts in its
// one pending token (streams never wait for a prompt); the room left, up to n_batch tokens, goes to
// prompts still being prefilled, at most `chunk` tokens of each, starting from a different prompt each
// step (round robin) so that no prompt waits behind another for ever. Only the choice lives here: the
// engine turns the plan into positions, cells and views, the graph does the math.
#pragma once

#include <cstdint>
#include <vector>

namespace lmrt {

class StepPlanner {
 public:
  struct Lane {
    bool decoding = false;     // has a pending token to evaluate
    uint32_t prompt_left = 0;  // prompt tokens not yet evaluated (0 when decoding)
  };
  struct Take {
    uint32_t lane = 0;
    uint32_t n = 0;  // tokens of that lane in the step (1 for a decoding lane)
  };

  // n_lanes: the engine's sequences; n_batch: tokens per forward pass; chunk: prompt tokens per lane
  // per step; min_tail: a prompt whose rest after this step's chunk would be shorter than this takes
  // that rest now (when the batch has room), so that its last tokens are not a step of their own (a
  // pass over the weights for 1 to 3 tokens, which also attend token by token rather than in tiles:
  // LlamaGraph::kMinTiledRun). Reserves everything plan() uses.
  StepPlanner(uint32_t n_lanes, uint32_t n_batch, uint32_t chunk, uint32_t min_tail = 1);

  // The takes of the next step, decoding lanes first (in lane order), then prompt chunks; empty when
  // no lane has work. `lanes` has n_lanes entries.
  const std::vector<Take>& plan(const std::vector<Lane>& lanes);

 private:
  uint32_t n_batch_, chunk_, min_tail_;
  uint32_t next_prefill_ = 0;  // the lane whose prompt goes first next time
  std::vector<Take> takes_;
};

}  // namespace lmrt
