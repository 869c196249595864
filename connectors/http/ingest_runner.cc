#include "connectors/http/ingest_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace sluice::http {

bool IngestRunner::try_run(Job job) {
  MutexLock lock(mu_);
  if (stopping_ || job_) return false;
  job_ = std::move(job);
  if (running_gauge_) running_gauge_->set(1);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  cv_.notify_one();
  return true;
}

bool IngestRunner::busy() const {
  MutexLock lock(mu_);
  return static_cast<bool>(job_);
}

std::uint32_t IngestRunner::retry_after_seconds() const {
  MutexLock lock(mu_);
  return static_cast<std::uint32_t>(std::max(1.0, std::ceil(last_seconds_)));
}

void IngestRunner::loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && !job_) cv_.wait(lock);
    if (!job_) return;  // stopping with nothing left to run
    auto job = job_;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    std::function<void()> then = job();  // must not throw (HttpSource catches inside)
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (seconds_) seconds_->observe(took);
    lock.lock();
    last_seconds_ = took;
    job_ = nullptr;
    if (running_gauge_) running_gauge_->set(0);
    lock.unlock();
    if (then) then();  // after the slot is free: the client's next ingest is accepted
    lock.lock();
  }
}

void IngestRunner::stop() {
  std::thread thread;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    thread = std::move(thread_);  // no try_run starts one once stopping_ is set
  }
  cv_.notify_one();
  if (thread.joinable()) thread.join();
}

}  // namespace sluice::http
