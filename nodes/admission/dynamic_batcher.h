// DynamicBatcher (`dynamic_batcher`): forms batches for a batch-capable stage.
//
// Requests arrive one per batch (from the intake or the router) and wait in an open batch of
// their own class, so a P0 request never waits behind a P2 batch (no head-of-line blocking
// between classes). An open batch is flushed (emitted as one batch made with
// NodeContext::make_batch) at the first of:
//   - it holds `max_batch` of its class (full);
//   - its window, counted from its first request, has passed (window expiry);
//   - `deadline_margin` before the tightest deadline among its requests (deadline-aware: a
//     batch never waits longer than the remaining latency budget of any request in it);
//   - adaptive: the class's measured arrival rate says no further request is expected before
//     the batch would flush anyway (rate x time left < 1), so a lone request on an idle system
//     is sent at once instead of waiting out the window.
// Classes flush in priority order when several are due at once. With `max_outstanding` > 0
// at most that many emitted batches may be unanswered (a batch is answered when all its
// requests have completed): while the next stage is busy, open batches keep filling (a full one
// is sealed and a new one opens) and as soon as it has room, one batch leaves, whatever the
// window once full, otherwise at most `window` after the stage got room (requests let on as the
// last batch completed are still arriving): waiting requests in priority order (all of P0, then
// P1, ...), up to the largest max_batch; the per-class caps bound the window mode's batches. An accelerator is thus fed what queued during its last batch
// and P0 never queues behind a P2 batch in the stage's FIFO (continuous batching; the window
// only matters in the unlimited mode). An incoming
// batch of more than one request is already a batch and is passed on unchanged.
//
// Each absorbed incoming batch's `done` is kept until its request leaves in a flushed batch:
// one of them emits the new batch, the others are released with done(nullptr). Metrics per
// node: sluice_batch_size and sluice_batch_wait_seconds (from the first request's arrival here
// to the flush), labelled {stage, class}.
//
// Time: decisions use the injected clock; `tick(now)` flushes what is due. start() launches a
// timer thread that sleeps until the next flush; tests call tick() with a ManualClock.
// Thread-safety: all public methods may be called from any thread; emission happens outside
// the lock.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "graph/metrics.h"
#include "graph/mutex.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "graph/thread_annotations.h"
#include "nodes/admission/rate_meter.h"

namespace sluice {

class DynamicBatcher final : public AsyncNode {
 public:
  // Throws std::invalid_argument naming the field when the config is unusable.
  DynamicBatcher(const DynamicBatcherConfig& config, const NodeContext& ctx);
  ~DynamicBatcher() override;

  void start_batch(BatchPtr batch, Done done) override;
  void start() override;
  void stop() override;

  // Flushes every open batch that is due at `now`.
  void tick(Nanos now);
  // When the earliest open batch is due; kNoDeadline when none is open.
  Nanos next_flush() const;
  std::size_t max_batch(std::size_t cls) const { return caps_[std::min(cls, caps_.size() - 1)]; }
  Nanos window() const { return window_; }

 private:
  struct Open {
    std::vector<RequestPtr> requests;
    std::vector<Done> dones;
    Nanos opened = 0;
    Nanos flush_at = kNoDeadline;
  };
  struct ClassState {
    Open open;
    std::deque<Open> sealed;  // full batches waiting for the next stage to free
    RateMeter arrivals{kNanosPerSecond};
    Histogram* size = nullptr;
    Histogram* wait = nullptr;
  };
  struct Flush {
    BatchPtr batch;
    std::vector<Done> dones;
  };
  Flush take_locked(Open& o, std::size_t cls, Nanos now) REQUIRES(mu_);
  // Emits what may leave now (sealed first, then due open batches; urgent classes first).
  void drain_locked(Nanos now, std::vector<Flush>& out) REQUIRES(mu_);
  bool can_emit_locked() REQUIRES(mu_);
  static void emit(Flush& f);
  Nanos next_flush_locked() const REQUIRES(mu_);
  void run_timer();

  std::string name_;
  Clock* clock_;
  std::function<BatchPtr()> make_batch_;
  Nanos window_;
  Nanos margin_;
  bool adaptive_;
  std::vector<std::size_t> caps_;
  std::uint32_t max_outstanding_;
  bool per_class_;

  mutable Mutex mu_;
  CondVar wake_;
  std::deque<BatchPtr> outstanding_ GUARDED_BY(mu_);  // emitted, not yet answered (only when max_outstanding_ > 0)
  bool had_room_ GUARDED_BY(mu_) = true;              // continuous mode: the stage had room at the last look
  Nanos room_since_ GUARDED_BY(mu_) = 0;              // since when (a batch waits at most `window` after it)
  std::vector<ClassState> classes_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // Started under mu_, joined by stop() outside it (the timer takes mu_), so not annotated.
  std::thread timer_;
};

}  // namespace sluice
