// A fixed pool of worker threads for datasync's transfers: push, pull and verify submit one task
// per file, chunk or pack and wait for all of them. The queue is bounded, so a producer that
// outruns the workers blocks instead of buffering without limit (push keeps at most
// jobs + queue bound chunk buffers alive). The first task error is kept and later tasks are
// skipped (they see failed() and return early).
//
// Thread-safety: Submit, failed and Wait may be called from any thread; Wait from one at a time.
#ifndef CUTOVER_DATASYNC_TASK_POOL_H_
#define CUTOVER_DATASYNC_TASK_POOL_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"

namespace cutover {

class TaskPool {
 public:
  // Starts `jobs` workers (at least 1); Submit blocks while `max_queued` tasks wait.
  explicit TaskPool(int jobs, size_t max_queued = 0)
      : max_queued_(max_queued == 0 ? static_cast<size_t>(jobs < 1 ? 1 : jobs) : max_queued) {
    for (int i = 0; i < (jobs < 1 ? 1 : jobs); ++i) threads_.emplace_back([this] { Loop(); });
  }
  // Waits for every task, then stops the workers.
  ~TaskPool() {
    (void)Wait();
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`; once a task has failed, drops it instead.
  void Submit(std::function<Status()> task) {
    std::unique_lock<std::mutex> l(mu_);
    space_cv_.wait(l, [this] { return queue_.size() < max_queued_ || stop_; });
    if (failed_.load(std::memory_order_relaxed)) return;
    queue_.push_back(std::move(task));
    ++pending_;
    cv_.notify_one();
  }

  // True once any task returned an error.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // Waits until every submitted task has run; returns the first error.
  Status Wait() {
    std::unique_lock<std::mutex> l(mu_);
    done_cv_.wait(l, [this] { return pending_ == 0; });
    return first_error_;
  }

 private:
  void Loop() {
    for (;;) {
      std::function<Status()> task;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      space_cv_.notify_one();
      Status s = failed() ? Status::Ok() : task();
      std::lock_guard<std::mutex> l(mu_);
      if (!s.ok() && first_error_.ok()) {
        first_error_ = s;
        failed_.store(true, std::memory_order_relaxed);
      }
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_, space_cv_, done_cv_;
  std::deque<std::function<Status()>> queue_;
  size_t pending_ = 0;
  bool stop_ = false;
  Status first_error_;
  std::atomic<bool> failed_{false};
  std::vector<std::thread> threads_;
};

}  // namespace cutover

#endif  // CUTOVER_DATASYNC_TASK_POOL_H_
