// Mutex and MutexLock: std::mutex and a scoped lock with Clang thread-safety annotations
// (graph/thread_annotations.h), so members can say GUARDED_BY(mu_) and functions
// REQUIRES(mu_). Same cost as std::mutex / std::unique_lock.
//
// Waiting: CondVar::wait(lock, pred) takes the MutexLock, as std::condition_variable takes a
// std::unique_lock; the predicate runs with the mutex held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "graph/thread_annotations.h"

namespace sluice {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Releases early and re-takes the lock (e.g. around a callback that must not run under it).
  void unlock() RELEASE() { lock_.unlock(); }
  void lock() ACQUIRE() { lock_.lock(); }

 private:
  friend class CondVar;
  std::unique_lock<std::mutex> lock_;
};

class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }
  void wait(MutexLock& lock) { cv_.wait(lock.lock_); }
  template <class Pred>
  void wait(MutexLock& lock, Pred pred) {
    cv_.wait(lock.lock_, pred);
  }
  template <class Rep, class Period, class Pred>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d, Pred pred) {
    return cv_.wait_for(lock.lock_, d, pred);
  }
  template <class Clock, class Duration, class Pred>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t, Pred pred) {
    return cv_.wait_until(lock.lock_, t, pred);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& d) {
    return cv_.wait_for(lock.lock_, d);
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& t) {
    return cv_.wait_until(lock.lock_, t);
  }

 private:
  std::condition_variable cv_;
};

}  // namespace sluice
