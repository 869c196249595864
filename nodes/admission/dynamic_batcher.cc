#include "nodes/admission/dynamic_batcher.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <stdexcept>

#include "graph/proto_duration.h"

namespace sluice {

namespace {

}  // namespace

DynamicBatcher::DynamicBatcher(const DynamicBatcherConfig& config, const NodeContext& ctx)
    : name_(ctx.name),
      clock_(ctx.clock),
      make_batch_(ctx.make_batch),
      window_(duration_nanos(config.window())),
      margin_(duration_nanos(config.deadline_margin())),
      adaptive_(config.adaptive()),
      max_outstanding_(config.max_outstanding()),
      per_class_(config.per_class()) {
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

DynamicBatcher::Flush DynamicBatcher::take_locked(Open& o, std::size_t cls, Nanos now) {
  ClassState& c = classes_[cls];
  Flush f;
  f.batch = make_batch_();
  f.batch->requests = std::move(o.requests);
  f.dones = std::move(o.dones);
  if (c.size) c.size->observe(static_cast<double>(f.batch->requests.size()));
  if (c.wait) c.wait->observe(nanos_to_seconds(now - o.opened));
  o = Open{};
  if (max_outstanding_ > 0) outstanding_.push_back(f.batch);
  return f;
}

bool DynamicBatcher::can_emit_locked() {
  if (max_outstanding_ == 0) return true;
  // A batch is answered when all its requests are done; bounded by max_outstanding_.
  for (auto it = outstanding_.begin(); it != outstanding_.end();) {
    bool answered = true;
    for (const auto& r : (*it)->requests) answered = answered && r->done();
    it = answered ? outstanding_.erase(it) : it + 1;
  }
  return outstanding_.size() < max_outstanding_;
}

void DynamicBatcher::drain_locked(Nanos now, std::vector<Flush>& out) {
  if (max_outstanding_ > 0) {
    // Continuous batching: the stage has room now. The batch takes waiting requests in
    // priority order up to the largest cap, so P0 never waits behind P2 and the accelerator
    // gets full batches. (Capping P0's share would make P0 wait for later batches while P2
    // fills this one.)
    while (true) {
      if (!can_emit_locked()) {
        had_room_ = false;
        return;
      }
      if (!had_room_) {
        had_room_ = true;
        room_since_ = now;  // the stage just answered a batch
      }
      std::size_t waiting = 0;
      for (const auto& c : classes_) {
        waiting += c.open.requests.size();
        for (const auto& o : c.sealed) waiting += o.requests.size();
      }
      std::size_t full = *std::max_element(caps_.begin(), caps_.end());
      // Once the stage has room, a batch waits at most `window` to fill (the requests the
      // router lets on as the last batch completes are still arriving); an idle stage's room
      // is older than the window, so a lone request leaves at once.
      if (waiting == 0 || (waiting < full && now - room_since_ < window_)) return;
      std::size_t top = classes_.size();
      for (std::size_t i = 0; i < classes_.size() && top == classes_.size(); ++i) {
        if (!classes_[i].sealed.empty() || !classes_[i].open.requests.empty()) top = i;
      }
      if (top == classes_.size()) return;
      std::size_t cap = *std::max_element(caps_.begin(), caps_.end());
      std::size_t class_room = 0;
      Open merged;
      merged.opened = now;
      auto take_from = [&](Open& from) {
        std::size_t k = std::min({cap - merged.requests.size(), from.requests.size(), class_room});
        class_room -= k;
        if (k == 0) return;
        merged.opened = std::min(merged.opened, from.opened);
        std::move(from.requests.begin(), from.requests.begin() + static_cast<std::ptrdiff_t>(k), std::back_inserter(merged.requests));
        std::move(from.dones.begin(), from.dones.begin() + static_cast<std::ptrdiff_t>(k), std::back_inserter(merged.dones));
        from.requests.erase(from.requests.begin(), from.requests.begin() + static_cast<std::ptrdiff_t>(k));
        from.dones.erase(from.dones.begin(), from.dones.begin() + static_cast<std::ptrdiff_t>(k));
      };
      for (std::size_t i = top; i < classes_.size() && merged.requests.size() < cap; ++i) {
        ClassState& c = classes_[i];
        class_room = cap;
        while (!c.sealed.empty() && merged.requests.size() < cap && class_room > 0) {
          take_from(c.sealed.front());
          if (c.sealed.front().requests.empty()) c.sealed.pop_front();
        }
        if (merged.requests.size() < cap) {
          take_from(c.open);
          if (c.open.requests.empty()) c.open = Open{};
        }
      }
      out.push_back(take_locked(merged, top, now));
    }
    return;
  }
  while (can_emit_locked()) {
    bool emitted = false;
    for (std::size_t i = 0; i < classes_.size() && !emitted; ++i) {  // most urgent class first
      ClassState& c = classes_[i];
      if (!c.sealed.empty()) {
        out.push_back(take_locked(c.sealed.front(), i, now));
        c.sealed.pop_front();
        emitted = true;
      } else if (!c.open.requests.empty() && c.open.flush_at <= now) {
        out.push_back(take_locked(c.open, i, now));
        emitted = true;
      }
    }
    if (!emitted) return;
  }
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
    MutexLock lock(mu_);
    if (stopping_) {
      flushes.push_back(Flush{std::move(batch), {}});
      flushes.back().dones.push_back(std::move(done));
    } else {
      Nanos now = clock_->now();
      std::size_t cls = per_class_ ? std::min<std::size_t>(r->priority, classes_.size() - 1) : 0;
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
      // Adaptive: on an idle system, when another arrival is unlikely before the flush time,
      // waiting buys nothing.
      double expected_more = c.arrivals.rate_at(now) * nanos_to_seconds(std::max<Nanos>(0, o.flush_at - now));
      if (adaptive_ && expected_more < 1.0 && (max_outstanding_ == 0 || (can_emit_locked() && outstanding_.empty()))) {
        o.flush_at = now;
      }
      if (o.requests.size() >= max_batch(cls)) {
        o.flush_at = std::min(o.flush_at, now);
        c.sealed.push_back(std::move(o));
        o = Open{};
      }
      drain_locked(now, flushes);
    }
  }
  wake_.notify_one();
  for (auto& f : flushes) emit(f);
}

void DynamicBatcher::tick(Nanos now) {
  std::vector<Flush> flushes;
  {
    MutexLock lock(mu_);
    drain_locked(now, flushes);
  }
  for (auto& f : flushes) emit(f);
}

Nanos DynamicBatcher::next_flush_locked() const {
  Nanos at = kNoDeadline;
  bool waiting = false;
  for (const auto& c : classes_) {
    if (!c.sealed.empty()) at = std::min(at, c.sealed.front().flush_at);
    if (!c.open.requests.empty()) at = std::min(at, c.open.flush_at);
    waiting = waiting || !c.sealed.empty() || !c.open.requests.empty();
  }
  if (max_outstanding_ > 0 && waiting) return had_room_ ? room_since_ + window_ : 0;
  return at;
}

Nanos DynamicBatcher::next_flush() const {
  MutexLock lock(mu_);
  return next_flush_locked();
}

void DynamicBatcher::start() {
  MutexLock lock(mu_);
  if (timer_.joinable() || stopping_) return;
  timer_ = std::thread([this] { run_timer(); });
}

void DynamicBatcher::run_timer() {
  MutexLock lock(mu_);
  while (!stopping_) {
    // Computed under the lock that start_batch holds while opening a batch: no lost wake-up.
    Nanos at = next_flush_locked();
    Nanos wait = at == kNoDeadline ? 100 * kNanosPerMilli : std::clamp<Nanos>(at - clock_->now(), 0, 100 * kNanosPerMilli);
    // Due but held back by max_outstanding: poll for the next stage to answer.
    if (wait == 0 && max_outstanding_ > 0 && !can_emit_locked()) wait = 200 * kNanosPerMicro;
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
    MutexLock lock(mu_);
    stopping_ = true;
    Nanos now = clock_->now();
    for (std::size_t i = 0; i < classes_.size(); ++i) {
      for (auto& o : classes_[i].sealed) flushes.push_back(take_locked(o, i, now));
      classes_[i].sealed.clear();
      if (!classes_[i].open.requests.empty()) flushes.push_back(take_locked(classes_[i].open, i, now));
    }
  }
  wake_.notify_all();
  if (timer_.joinable() && timer_.get_id() != std::this_thread::get_id()) timer_.join();
  for (auto& f : flushes) emit(f);
}

}  // namespace sluice
