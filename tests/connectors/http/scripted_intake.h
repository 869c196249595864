// ScriptedIntake: a RequestIntake for HTTP tests that stands where the pipeline would. It
// hands each submitted request to the test (next_request), which then plays the engine:
// emits tokens and completes it from the test thread, exactly when the test wants, so
// framing and ordering can be checked without timing assumptions. It can also refuse
// submissions the way the pipeline's admission does (completing the request itself).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "connectors/http/request_intake.h"

namespace sluice::http::testing {

class ScriptedIntake final : public RequestIntake {
 public:
  Status submit(const std::string& source, const RequestPtr& request) override {
    {
      std::lock_guard lock(mu_);
      if (throw_on_submit_) throw std::runtime_error(*throw_on_submit_);  // a bug in the layer below
    }
    if (reject_with_) {
      Status s = *reject_with_;
      request->complete(s, clock_.now());
      return s;
    }
    std::lock_guard lock(mu_);
    sources_.push_back(source);
    queue_.push_back(request);
    cv_.notify_all();
    return Status::Ok();
  }
  int class_index(std::string_view name) const override {
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      if (classes_[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  const std::vector<std::string>& class_names() const override { return classes_; }
  bool draining() const override { return draining_; }
  bool ready() const override { return ready_; }
  std::uint64_t next_request_id() override { return next_id_++; }
  const std::vector<std::string>& stage_names() const override { return stages_; }
  Clock& clock() const override { return clock_; }
  MetricsRegistry& metrics() const override { return metrics_; }

  // The next submitted request; throws after 10 s without one.
  RequestPtr next_request() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return !queue_.empty(); })) {
      throw std::runtime_error("no request was submitted within 10 s");
    }
    RequestPtr r = queue_.front();
    queue_.pop_front();
    return r;
  }
  std::string last_source() {
    std::lock_guard lock(mu_);
    return sources_.empty() ? "" : sources_.back();
  }

  void reject_with(Status s) { reject_with_ = std::move(s); }
  // submit() throws (what a bug below the HTTP layer looks like to it) until cleared.
  void throw_on_submit(std::optional<std::string> what) {
    std::lock_guard lock(mu_);
    throw_on_submit_ = std::move(what);
  }
  std::atomic<bool> draining_{false};
  std::atomic<bool> ready_{true};
  mutable ManualClock clock_{1000 * kNanosPerSecond};
  mutable MetricsRegistry metrics_;

 private:
  std::vector<std::string> classes_{"P0", "P1", "P2"};
  std::vector<std::string> stages_{"admit", "template"};
  std::atomic<std::uint64_t> next_id_{1};
  std::optional<Status> reject_with_;
  std::optional<std::string> throw_on_submit_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestPtr> queue_;
  std::vector<std::string> sources_;
};

// Waits (up to 10 s) until `condition()` holds; for effects that happen on the server's
// event loop (a cancellation after a disconnect). Returns whether it held.
template <class Fn>
bool eventually(Fn condition) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace sluice::http::testing
