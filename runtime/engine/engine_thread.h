// A BatchEngine shared by threads. Every call takes the engine's lock; start() runs the steps on a
// thread of its own, which sleeps on a condition variable while no request is left (no busy wait)
// and lets callers that wait for the lock in between two steps, so a submit never waits for more
// than the step under way. Sinks run on the stepping thread with the lock held: from a sink only
// cancel() is allowed (it sees that its thread holds the lock); anything else is refused, since it
// would change the engine under the step.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "runtime/engine/batch_engine.h"
#include "runtime/util/status.h"

namespace lmrt {

class EngineThread {
 public:
  explicit EngineThread(std::unique_ptr<BatchEngine> engine);
  ~EngineThread();  // stops the thread
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  // Starts the engine's thread. Errors: invalid_argument (already started, run() under way on another
  // thread, or called from a sink).
  Status start();
  // Stops the thread after the step under way and joins it; requests keep their state (a later
  // start() or step() goes on with them) and waiters wake. Stopping a stopped engine is a no-op.
  // Errors: invalid_argument (called from a sink: the thread would join itself); the failure that
  // ended the thread by itself, if any.
  Status stop();
  bool started() const { return started_.load(); }
  // True on the thread inside a step (a sink's caller).
  bool in_sink() const { return stepper_.load() == std::this_thread::get_id(); }

  Status submit(EngineRequest request, uint64_t* id);
  Status cancel(uint64_t id);
  // One step (or all of them) on the calling thread. Errors: invalid_argument while started, from
  // a sink; the engine's own. While a run() is under way, start() is refused: it would take the engine
  // from under that run() part way through.
  Status step(uint32_t* n_unfinished);
  Status run();
  // Waits until request `id` finished (*finished = true; also when another thread released it
  // meanwhile), timeout_ms passed (< 0: no limit) or the thread stopped (*finished = false). On a
  // stopped engine it returns at once. It takes only the lock of the finish table (filled as
  // requests finish), never the engine's: waiters and pollers never hold up a step. Errors:
  // invalid_argument (unknown id, from a sink).
  Status wait(uint64_t id, int64_t timeout_ms, bool* finished);
  // Forgets a finished request. Errors: as BatchEngine::release; from a sink.
  Status release(uint64_t id);
  // Calls fn with the engine under the lock (for result, release and the counters). Errors:
  // invalid_argument (from a sink); else fn's.
  Status with_engine(const std::function<Status(BatchEngine&)>& fn);

 private:
  // The lock for a caller: counted in want_ while it waits, so the stepping thread lets it in.
  std::unique_lock<std::mutex> lock_for_caller();
  Status step_locked(uint32_t* n_unfinished);
  // Moves a request that just finished from live_ to done_ and wakes waiters (the engine's finish
  // observer, on the stepping thread with mu_ held).
  void record_finish(uint64_t id);
  void loop();

  std::unique_ptr<BatchEngine> engine_;
  // Held for the whole of start() and stop(), join included: a start() between a stop()'s join and
  // its end would otherwise see its new thread marked stopped, and the next start() join a thread
  // that never ends (deadlock).
  std::mutex control_mu_;
  std::mutex mu_;                 // guards engine_ and everything below but the atomics
  std::condition_variable work_;  // a request arrived, or stop
  std::thread thread_;
  bool quit_ = false;
  int runs_ = 0;  // callers inside run()
  Status thread_status_;
  std::atomic<bool> started_{false};
  std::atomic<int> want_{0};                // callers waiting for mu_
  std::atomic<std::thread::id> stepper_{};  // the thread inside a step (its sinks' thread)
  // The finish table, under status_mu_ (taken after mu_ when both are held).
  std::mutex status_mu_;
  std::condition_variable finishes_;   // a request finished, or the thread stopped
  std::vector<uint64_t> live_;         // submitted, not finished
  std::unordered_set<uint64_t> done_;  // finished, not released
};

}  // namespace lmrt
