// Runs the choices of one API request as requests of the server's batch engine: they decode in the
// same forward passes as every other client's. The engine's thread hands each piece, and at the end
// the finish notice (lmrt_engine_params.on_finish = notice_finish), to the request's own thread
// through a bounded PieceHandoff and never waits for a client: when the handoff is full, a piece
// joins the last one of its choice still waiting (the text only grows, the entries do not). The
// request's thread sleeps until an entry comes, writes to the client, notices a client that went
// away and cancels its requests.
#pragma once

#include <lmrt/lmrt.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "generation.h"

namespace server {

class PieceHandoff {
 public:
  struct Entry {
    int index;  // the choice
    Piece piece;
    bool finished = false;  // the choice's finish notice (after its last piece; no text)
  };
  explicit PieceHandoff(size_t capacity) : capacity_(capacity) {}

  // From the engine's thread: never waits for the consumer.
  void push(int index, Piece piece);
  // The choice finished: always its own entry (one per choice, so the handoff stays bounded).
  void push_finished(int index);
  // Moves every waiting entry to *out (in order), waiting up to `wait` for the first. False when none.
  bool take(std::vector<Entry>* out, std::chrono::milliseconds wait);
  size_t size() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Entry> entries_;
};

// One choice to generate: its place among the request's choices, its prompt and seed offset.
struct ChoiceTask {
  int index;
  const std::vector<int32_t>* prompt;
  uint64_t seed_offset;
};

// The server's engine's lmrt_engine_params.on_finish: passes a request's finish to its handoff.
void notice_finish(void* user_data, uint64_t request_id, lmrt_finish_reason reason);

struct BatchedRun {
  lmrt_engine* engine = nullptr;
  uint32_t n_ctx = 0;                 // the cells one request may hold (prompt + generated), as a context of its own
  std::function<bool()> should_stop;  // polled at least every 50 ms
  std::function<bool(int index, const Piece&)> on_piece;   // false: stop (the client is gone)
  std::function<bool(int index, ChoiceResult&&)> on_done;  // a finished choice (status != OK: its failure)
};

// Submits every task and calls on_piece / on_done on the calling thread until all have finished.
// Returns false when should_stop or a callback said stop: the unfinished choices are cancelled.
// Every engine request is released before it returns, so no callback outlives it.
bool run_batched_choices(const BatchedRun& run, const std::vector<ChoiceTask>& tasks, const SamplingParams& p);

}  // namespace server
