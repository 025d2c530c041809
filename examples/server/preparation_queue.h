// One thread that prepares generation requests off the event loops: parsing the body, rendering the
// chat template, tokenizing, checking grammars. For a 4 MB body that is seconds of work, which on an
// event loop stalled every other connection on it (/health included). In arrival order, with a bounded
// queue; one thread, so that a client sending large bodies holds at most one core.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace server {

class PreparationQueue {
 public:
  // Runs on the queue's thread. `abandon` is true when the queue is stopping before the task began: the
  // task must answer its client without doing the work.
  using Task = std::function<void(bool abandon)>;

  explicit PreparationQueue(size_t max_queue);
  ~PreparationQueue();  // runs stop()
  PreparationQueue(const PreparationQueue&) = delete;
  PreparationQueue& operator=(const PreparationQueue&) = delete;

  // Queues a task; false at once when `max_queue` tasks already wait or the queue is stopping.
  bool submit(Task task);
  // Refuses new tasks, lets the running one finish, abandons the queued ones; returns when the thread is done.
  void stop();
  // Tasks waiting or running.
  size_t pending() const;

 private:
  void work();

  const size_t max_queue_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool running_task_ = false;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace server
