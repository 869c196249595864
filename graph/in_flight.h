// InFlight: the requests a pipeline admitted and has not completed yet, the runtime.max_in_flight
// bound on them, and drain's wait for the count to reach zero.
//
// try_enter and leave are one atomic operation each, with no lock: they run for every request.
// The mutex is taken only by drain and by the completion that brings the count to zero while
// draining. It guards no data; it makes that wake-up impossible to lose: the drainer checks the
// count and starts waiting with the mutex held, and the last completion notifies with it held.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>

#include "graph/clock.h"
#include "graph/mutex.h"

namespace sluice {

class InFlight {
 public:
  // Counts a request in unless `max` are in already; returns whether it did.
  bool try_enter(std::size_t max) {
    if (count_.fetch_add(1, std::memory_order_acq_rel) < max) return true;
    count_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  // Takes back a try_enter whose request was then refused: no completion will follow.
  void undo_enter() { count_.fetch_sub(1, std::memory_order_acq_rel); }
  // A request counted in has completed.
  void leave() {
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == 1 && draining()) {
      MutexLock lock(mu_);
      emptied_.notify_all();
    }
  }
  std::size_t count() const { return count_.load(std::memory_order_acquire); }

  void start_draining() { draining_.store(true, std::memory_order_release); }
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  // Waits until no request is in, or `timeout` has passed.
  void wait_until_empty(Nanos timeout) EXCLUDES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout);
    MutexLock lock(mu_);
    while (count() != 0) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      emptied_.wait_for(lock, deadline - now);
    }
  }

 private:
  std::atomic<std::size_t> count_{0};
  std::atomic<bool> draining_{false};
  Mutex mu_;
  CondVar emptied_;
};

}  // namespace sluice
