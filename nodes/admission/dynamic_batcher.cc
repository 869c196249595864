#include "nodes/admission/dynamic_batcher.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace sluice {

namespace {

Nanos to_nanos(const google::protobuf::Duration& d) {
  return static_cast<Nanos>(d.seconds()) * kNanosPerSecond + d.nanos();
}

}  // namespace

DynamicBatcher::DynamicBatcher(const DynamicBatcherConfig& config, const NodeContext& ctx)
    : name_(ctx.name),
      clock_(ctx.clock),
      make_batch_(ctx.make_batch),
      window_(to_nanos(config.window())),
      margin_(to_nanos(config.deadline_margin())),
      adaptive_(config.adaptive()) {
  if (window_ < 100 * kNanosPerMicro || window_ > kNanosPerSecond) {
    throw std::invalid_argument("window: must be between 100us and 1s (5-20ms is the useful range), got " +
                                std::to_string(nanos_to_seconds(window_)) + "s");
  }
  if (margin_ < 0) throw std::invalid_argument("deadline_margin: must not be negative");
  for (int i = 0; i < config.max_batch_size(); ++i) {
    if (config.max_batch(i) == 0 || config.max_batch(i) > 65536) {
      throw std::invalid_argument("max_batch[" + std::to_string(i) + "]: must be between 1 and 65536, got " +
                                  std::to_string(config.max_batch(i)));
    }
    caps_.push_back(config.max_batch(i));
  }
  if (caps_.empty()) caps_ = {8, 32, 128};
  if (!make_batch_) throw std::invalid_argument("the runtime gave no make_batch");
  std::size_t n = std::max<std::size_t>(1, ctx.class_names.size());
  classes_.resize(n);
  if (ctx.metrics) {
    for (std::size_t i = 0; i < n; ++i) {
      std::string cls = i < ctx.class_names.size() ? ctx.class_names[i] : std::to_string(i);
      Labels l{{"stage", name_}, {"class", cls}};
      classes_[i].size = &ctx.metrics->histogram("sluice_batch_size", "Requests per batch a batcher emitted", l, Histogram::size_buckets());
      classes_[i].wait = &ctx.metrics->histogram("sluice_batch_wait_seconds",
                                                 "Time a batch stayed open at a batcher (first request to flush)", l);
    }
  }
}

DynamicBatcher::~DynamicBatcher() { stop(); }

DynamicBatcher::Flush DynamicBatcher::take_locked(std::size_t cls, Nanos now) {
  ClassState& c = classes_[cls];
  Flush f;
  f.batch = make_batch_();
  f.batch->requests = std::move(c.open.requests);
  f.dones = std::move(c.open.dones);
  if (c.size) c.size->observe(static_cast<double>(f.batch->requests.size()));
  if (c.wait) c.wait->observe(nanos_to_seconds(now - c.open.opened));
  c.open = Open{};
  return f;
}

void DynamicBatcher::emit(Flush& f) {
  // One absorbed batch's done carries the new batch; the rest are released empty.
  for (std::size_t i = 1; i < f.dones.size(); ++i) f.dones[i](nullptr);
  if (!f.dones.empty()) f.dones[0](std::move(f.batch));
}

void DynamicBatcher::start_batch(BatchPtr batch, Done done) {
  if (batch->requests.size() != 1) {
    done(std::move(batch));  // already a batch (or empty): passed on as it is
    return;
  }
  const RequestPtr& r = batch->requests.front();
  std::vector<Flush> flushes;
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      flushes.push_back(Flush{std::move(batch), {}});
      flushes.back().dones.push_back(std::move(done));
    } else {
      Nanos now = clock_->now();
      std::size_t cls = std::min<std::size_t>(r->priority, classes_.size() - 1);
      ClassState& c = classes_[cls];
      c.arrivals.record(now);
      Open& o = c.open;
      if (o.requests.empty()) {
        o.opened = now;
        o.flush_at = now + window_;
      }
      if (r->deadline != kNoDeadline) o.flush_at = std::min(o.flush_at, r->deadline - margin_);
      o.requests.push_back(r);
      o.dones.push_back(std::move(done));
      // Adaptive: another arrival is unlikely before the flush time, so waiting buys nothing.
      double expected_more = c.arrivals.rate_at(now) * nanos_to_seconds(std::max<Nanos>(0, o.flush_at - now));
      bool full = o.requests.size() >= max_batch(cls);
      if (full || o.flush_at <= now || (adaptive_ && expected_more < 1.0)) {
        flushes.push_back(take_locked(cls, now));
      }
    }
  }
  wake_.notify_one();
  for (auto& f : flushes) emit(f);
}

void DynamicBatcher::tick(Nanos now) {
  std::vector<Flush> flushes;
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < classes_.size(); ++i) {  // most urgent class first
      if (!classes_[i].open.requests.empty() && classes_[i].open.flush_at <= now) flushes.push_back(take_locked(i, now));
    }
  }
  for (auto& f : flushes) emit(f);
}

Nanos DynamicBatcher::next_flush_locked() const {
  Nanos at = kNoDeadline;
  for (const auto& c : classes_) {
    if (!c.open.requests.empty()) at = std::min(at, c.open.flush_at);
  }
  return at;
}

Nanos DynamicBatcher::next_flush() const {
  std::lock_guard lock(mu_);
  return next_flush_locked();
}

void DynamicBatcher::start() {
  std::lock_guard lock(mu_);
  if (timer_.joinable() || stopping_) return;
  timer_ = std::thread([this] { run_timer(); });
}

void DynamicBatcher::run_timer() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // Computed under the lock that start_batch holds while opening a batch: no lost wake-up.
    Nanos at = next_flush_locked();
    Nanos wait = at == kNoDeadline ? 100 * kNanosPerMilli : std::clamp<Nanos>(at - clock_->now(), 0, 100 * kNanosPerMilli);
    if (wait > 0) {
      wake_.wait_for(lock, std::chrono::nanoseconds(wait));
      continue;
    }
    lock.unlock();
    tick(clock_->now());
    lock.lock();
  }
}

void DynamicBatcher::stop() {
  std::vector<Flush> flushes;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    Nanos now = clock_->now();
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      if (!classes_[i].open.requests.empty()) flushes.push_back(take_locked(i, now));
    }
  }
  wake_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  for (auto& f : flushes) emit(f);
}

}  // namespace sluice
