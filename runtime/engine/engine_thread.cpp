#include "runtime/engine/engine_thread.h"

#include <algorithm>
#include <chrono>
#include <new>
#include <string>

namespace lmrt {

namespace {

Status from_sink(const char* what) {
  return Error(Code::invalid_argument, std::string(what) + " cannot be called from a request's callback");
}

}  // namespace

EngineThread::EngineThread(std::unique_ptr<BatchEngine> engine) : engine_(std::move(engine)) {
  engine_->observe_finishes([this](uint64_t id) { record_finish(id); });
}

EngineThread::~EngineThread() { (void)stop(); }

std::unique_lock<std::mutex> EngineThread::lock_for_caller() {
  want_.fetch_add(1);
  std::unique_lock<std::mutex> lock(mu_);
  want_.fetch_sub(1);
  return lock;
}

Status EngineThread::start() {
  if (in_sink()) return from_sink("start");
  std::lock_guard<std::mutex> control(control_mu_);
  auto lock = lock_for_caller();
  if (started_.load()) return Error(Code::invalid_argument, "the engine is already started");
  if (runs_ > 0)
    return Error(Code::invalid_argument,
                 "lmrt_engine_run is stepping the engine on another thread: start it after that returns");
  if (thread_.joinable()) thread_.join();  // it ended by itself on a failure (kept for stop())
  quit_ = false;
  thread_status_ = Status::Ok();
  started_.store(true);
  thread_ = std::thread([this] { loop(); });
  return Status::Ok();
}

Status EngineThread::stop() {
  if (in_sink()) return from_sink("stop");
  std::lock_guard<std::mutex> control(control_mu_);
  std::thread t;
  {
    auto lock = lock_for_caller();
    if (!thread_.joinable()) return Status::Ok();
    quit_ = true;
    t = std::move(thread_);
  }
  work_.notify_all();
  t.join();
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failure = std::move(thread_status_);
    thread_status_ = Status::Ok();
  }
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    started_.store(false);
  }
  finishes_.notify_all();
  return failure;
}

void EngineThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!quit_) {
    if (engine_->n_running() + engine_->n_queued() == 0) {
      work_.wait(lock, [&] { return quit_ || engine_->n_running() + engine_->n_queued() > 0; });
      continue;
    }
    Status s;
    try {  // nothing may escape the thread (std::terminate)
      s = step_locked(nullptr);
    } catch (const std::bad_alloc&) {
      s = Error(Code::out_of_memory, "a memory allocation failed during a step");
    } catch (const std::exception& e) {
      s = Error(Code::internal, std::string("internal error during a step: ") + e.what());
    }
    if (!s.ok()) {  // an internal failure: the engine cannot go on
      thread_status_ = std::move(s);
      break;
    }
    // std::mutex is not fair: let the callers that wait for the lock in before the next step.
    if (want_.load() > 0) {
      lock.unlock();
      while (want_.load() > 0) std::this_thread::yield();
      lock.lock();
    }
  }
  {
    std::lock_guard<std::mutex> status(status_mu_);
    started_.store(false);
  }
  lock.unlock();
  finishes_.notify_all();
}

Status EngineThread::step_locked(uint32_t* n_unfinished) {
  stepper_.store(std::this_thread::get_id());
  bool busy = false;
  Status s = engine_->step(&busy);
  stepper_.store(std::thread::id());
  if (n_unfinished != nullptr) *n_unfinished = engine_->n_running() + engine_->n_queued();
  return s;
}

void EngineThread::record_finish(uint64_t id) {
  {
    std::lock_guard<std::mutex> lock(status_mu_);
    auto it = std::find(live_.begin(), live_.end(), id);
    if (it != live_.end()) {
      *it = live_.back();
      live_.pop_back();
    }
    done_.insert(id);
  }
  finishes_.notify_all();
}

Status EngineThread::submit(EngineRequest request, uint64_t* id) {
  if (in_sink()) return from_sink("submit");
  {
    auto lock = lock_for_caller();
    LMRT_RETURN_IF_ERROR(engine_->submit(std::move(request), id));
    std::lock_guard<std::mutex> status(status_mu_);
    live_.push_back(*id);
  }
  work_.notify_one();
  return Status::Ok();
}

Status EngineThread::cancel(uint64_t id) {
  if (in_sink()) return engine_->cancel(id);  // the sink's thread holds the lock
  auto lock = lock_for_caller();
  return engine_->cancel(id);
}

Status EngineThread::step(uint32_t* n_unfinished) {
  if (in_sink()) return from_sink("step");
  auto lock = lock_for_caller();
  if (started_.load()) return Error(Code::invalid_argument, "the engine runs on its own thread: stop it first");
  return step_locked(n_unfinished);
}

Status EngineThread::run() {
  if (in_sink()) return from_sink("run");
  {
    auto lock = lock_for_caller();
    if (started_.load()) return Error(Code::invalid_argument, "the engine runs on its own thread: stop it first");
    ++runs_;
  }
  struct Leave {
    EngineThread* self;
    ~Leave() {
      auto lock = self->lock_for_caller();
      --self->runs_;
    }
  } leave{this};
  uint32_t left = 1;
  while (left > 0) {
    LMRT_RETURN_IF_ERROR(step(&left));
    // As between the engine thread's steps: std::mutex is not fair, and without this a submit or
    // cancel from another thread waited for the whole run.
    while (want_.load() > 0) std::this_thread::yield();
  }
  return Status::Ok();
}

Status EngineThread::wait(uint64_t id, int64_t timeout_ms, bool* finished) {
  if (in_sink()) return from_sink("wait");
  *finished = false;
  std::unique_lock<std::mutex> lock(status_mu_);
  if (done_.count(id) == 0 && std::find(live_.begin(), live_.end(), id) == live_.end())
    return Error(Code::invalid_argument, "no request " + std::to_string(id));
  // Neither live nor done: another thread released it after it finished, before this one woke (else
  // this waiter would sleep forever).
  auto ended = [&] { return std::find(live_.begin(), live_.end(), id) == live_.end(); };
  auto ready = [&] { return ended() || !started_.load(); };
  if (timeout_ms < 0) {
    finishes_.wait(lock, ready);
  } else {
    finishes_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready);
  }
  *finished = ended();
  return Status::Ok();
}

Status EngineThread::release(uint64_t id) {
  if (in_sink()) return from_sink("release");
  auto lock = lock_for_caller();
  LMRT_RETURN_IF_ERROR(engine_->release(id));
  std::lock_guard<std::mutex> status(status_mu_);
  done_.erase(id);
  return Status::Ok();
}

Status EngineThread::with_engine(const std::function<Status(BatchEngine&)>& fn) {
  if (in_sink()) return from_sink("this function");
  auto lock = lock_for_caller();
  return fn(*engine_);
}

}  // namespace lmrt
