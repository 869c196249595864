// InFlight: the requests a pipeline admitted and has not completed yet, the runtime.max_in_flight
// bound on them, drain's wait for the count to reach zero, and when a burst has ended.
//
// try_enter and leave are one atomic read-modify-write each, with no lock: they run for every
// request. The mutex is taken only by drain and by the completion that brings the count to zero
// while draining. It guards no data; it makes that wake-up impossible to lose: the drainer
// checks the count and starts waiting with the mutex held, and the last completion notifies
// with it held.
//
// The end of a burst: leave() reports kEbbing when the count has fallen to half its peak since
// the last such moment (a peak of at least kBurstFloor), and kIdle when it then reaches zero.
// The pipeline then releases what the burst left in its live lists (graph/live_lists.h) and, at
// kIdle, the allocator's cached memory (graph/free_memory.h). A burst of peak P ends in at most
// log2(P / kBurstFloor) + 2 such moments; light traffic, whose count stays under kBurstFloor, in
// none. The peak shares the count's cache line, and try_enter writes it only while the count
// climbs past it.
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
  static constexpr std::size_t kBurstFloor = 32;
  enum class BurstEnd { kNone, kEbbing, kIdle };

  // Counts a request in unless `max` are in already; returns whether it did.
  bool try_enter(std::size_t max) {
    const std::size_t before = count_.fetch_add(1, std::memory_order_acq_rel);
    if (before < max) {
      std::size_t peak = peak_.load(std::memory_order_relaxed);
      while (before + 1 > peak && !peak_.compare_exchange_weak(peak, before + 1, std::memory_order_relaxed)) {
      }
      return true;
    }
    count_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  // Takes back a try_enter whose request was then refused: no completion will follow.
  void undo_enter() { count_.fetch_sub(1, std::memory_order_acq_rel); }
  // A request counted in has completed. Says whether a burst is ending (above): then the caller
  // releases what the burst left behind.
  [[nodiscard]] BurstEnd leave() {
    const std::size_t after = count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if (after == 0 && draining()) {
      MutexLock lock(mu_);
      emptied_.notify_all();
    }
    return burst_ended(after);
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
  BurstEnd burst_ended(std::size_t after) {
    std::size_t peak = peak_.load(std::memory_order_relaxed);
    if (peak >= kBurstFloor && after <= peak / 2) {
      // One completion wins; a failed exchange means another did, or the count climbed again.
      if (!peak_.compare_exchange_strong(peak, after, std::memory_order_relaxed)) return BurstEnd::kNone;
      release_at_zero_.store(after != 0, std::memory_order_relaxed);
      return after == 0 ? BurstEnd::kIdle : BurstEnd::kEbbing;
    }
    if (after == 0 && release_at_zero_.load(std::memory_order_relaxed) &&
        release_at_zero_.exchange(false, std::memory_order_relaxed)) {
      return BurstEnd::kIdle;
    }
    return BurstEnd::kNone;
  }

  std::atomic<std::size_t> count_{0};
  std::atomic<std::size_t> peak_{0};            // the count's highest since the last burst end
  std::atomic<bool> release_at_zero_{false};  // a burst ended above zero: once more at zero
  std::atomic<bool> draining_{false};
  Mutex mu_;
  CondVar emptied_;
};

}  // namespace sluice
