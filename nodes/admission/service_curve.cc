#include "nodes/admission/service_curve.h"

#include <chrono>
#include <cmath>
#include <stdexcept>

namespace sluice {

ServiceCurveHarness::ServiceCurveHarness(const ServiceCurveConfig& config, const NodeContext& ctx)
    : clock_(ctx.clock),
      base_time_(static_cast<Nanos>(config.base_time().seconds()) * kNanosPerSecond + config.base_time().nanos()),
      batch_cost_(config.batch_cost()),
      slots_(config.slots() == 0 ? 1 : config.slots()),
      text_(config.text()),
      stage_index_(ctx.stage_index),
      shrink_factor_(ctx.shrink_factor) {
  if (base_time_ <= 0) throw std::invalid_argument("base_time: must be positive");
}

ServiceCurveHarness::~ServiceCurveHarness() { stop(); }

Nanos ServiceCurveHarness::service_time(std::size_t b) const {
  if (b == 0) return 0;
  return static_cast<Nanos>(static_cast<double>(base_time_) * (1.0 + batch_cost_ * std::log2(static_cast<double>(b))));
}

void ServiceCurveHarness::start() {
  MutexLock lock(mu_);
  if (!workers_.empty() || stopping_) return;
  for (std::uint32_t i = 0; i < slots_; ++i) workers_.emplace_back([this] { serve(); });
}

void ServiceCurveHarness::start_batch(BatchPtr batch, Done done) {
  {
    MutexLock lock(mu_);
    if (!stopping_) {
      fifo_.emplace_back(std::move(batch), std::move(done));
      wake_.notify_one();
      return;
    }
  }
  for (auto& r : batch->requests) {
    r->complete(Status::Error(StatusCode::kUnavailable, "service_curve harness stopped", AbortCause::kShutdown), clock_->now());
  }
  done(std::move(batch));
}

void ServiceCurveHarness::serve() {
  MutexLock lock(mu_);
  while (true) {
    while (!stopping_ && fifo_.empty()) wake_.wait(lock);
    if (fifo_.empty()) return;  // stopping and nothing left
    auto [batch, done] = std::move(fifo_.front());
    fifo_.pop_front();
    bool stopping = stopping_;
    lock.unlock();
    std::size_t active = 0, shrunk = 0;
    for (const auto& r : batch->requests) {
      if (!r->active()) continue;
      ++active;
      shrunk += r->trace().degradation(stage_index_) == Degradation::kShrink ? 1 : 0;
    }
    const Nanos full = service_time(active);
    const Nanos early = static_cast<Nanos>(static_cast<double>(full) * shrink_factor_);
    // Shrunk requests first, after factor x the batch's time; the rest at its full time.
    for (const bool shrunk_pass : {true, false}) {
      if (shrunk_pass && shrunk == 0) continue;
      if (!shrunk_pass && shrunk == active) break;
      const Nanos wait = shrunk == 0 ? full : shrunk_pass ? early : full - early;
      if (!stopping && active > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      const Nanos now = clock_->now();
      for (const auto& r : batch->requests) {
        if (!r->active()) continue;
        if ((r->trace().degradation(stage_index_) == Degradation::kShrink) != shrunk_pass && shrunk > 0) continue;
        if (stopping) {
          r->complete(Status::Error(StatusCode::kUnavailable, "service_curve harness stopped", AbortCause::kShutdown), now);
          continue;
        }
        r->emit_token(text_, now);
        r->usage.completion_tokens = 1;
        r->complete(Status::Ok(), now);
      }
    }
    done(std::move(batch));
    lock.lock();
  }
}

void ServiceCurveHarness::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  // Never started (tests, failed builds): answer what is queued.
  std::deque<std::pair<BatchPtr, Done>> rest;
  {
    MutexLock lock(mu_);
    rest.swap(fifo_);
  }
  for (auto& [b, d] : rest) {
    for (auto& r : b->requests) {
      r->complete(Status::Error(StatusCode::kUnavailable, "service_curve harness stopped", AbortCause::kShutdown), clock_->now());
    }
    d(std::move(b));
  }
}

}  // namespace sluice
