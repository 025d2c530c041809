#include "preparation_queue.h"

#include <utility>

namespace server {

PreparationQueue::PreparationQueue(size_t max_queue) : max_queue_(max_queue), thread_([this] { work(); }) {}

PreparationQueue::~PreparationQueue() { stop(); }

bool PreparationQueue::submit(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (quit_ || queue_.size() >= max_queue_) return false;
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return true;
}

void PreparationQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

size_t PreparationQueue::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size() + (running_task_ ? 1 : 0);
}

void PreparationQueue::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return quit_ || !queue_.empty(); });
    if (queue_.empty()) return;  // quit_, nothing left to answer
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_task_ = true;
    const bool abandon = quit_;
    lock.unlock();
    task(abandon);
    task = nullptr;  // its captures (the request body) go before the next wait
    lock.lock();
    running_task_ = false;
  }
}

}  // namespace server
