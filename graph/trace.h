// Trace: the per-stage timestamps of one request. Every node boundary stamps it (the runtime
// does this, nodes never time themselves), so queue wait and service time are known per stage.
//
// Each stage writes its own slot, the slot of its index in the pipeline (a request passes a
// stage at most once), so stamping takes no read-modify-write even when parallel branches
// stamp the same request at once. Fields are accessed as relaxed atomics (plain moves on x86) so a reader
// racing with a branch still running sees either the old or the new value of a field, never
// a torn one; a slot becomes visible to readers once its start is stamped (release/acquire).
// Readers read in the sink's on_complete (on the completing thread, where the completing
// stage's own finish is still 0) or after the pipeline is done with the request.
// Capacity is fixed so a trace never allocates; stages at index kCapacity and beyond are
// counted in dropped() and not stamped.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/clock.h"
#include "graph/degradation.h"

namespace sluice {

struct StageStamp {
  std::uint16_t stage;   // index into the pipeline's stage names
  Nanos queued;          // when the batch became ready for this stage
  Nanos started;         // when the stage began on it
  Nanos finished;        // when the stage handed it on (0 while running)
  Degradation degradation = Degradation::kNone;  // what the stage's budget made it do
  std::uint16_t batch = 1;  // requests in the batch the stage took it in (saturates at 65535)
};

class Trace {
 public:
  static constexpr std::uint32_t kCapacity = 32;

  // Stamps stage `stage` as begun: ready since `queued`, started at `started`, in a batch of
  // `batch` requests.
  void start(std::uint16_t stage, Nanos queued, Nanos started, std::size_t batch = 1) {
    if (stage >= kCapacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Slot& s = slots_[stage];
    std::atomic_ref<Nanos>(s.queued).store(queued, std::memory_order_relaxed);
    std::atomic_ref<Nanos>(s.started).store(started, std::memory_order_relaxed);
    std::atomic_ref<Nanos>(s.finished).store(0, std::memory_order_relaxed);
    std::atomic_ref<Degradation>(s.degradation).store(Degradation::kNone, std::memory_order_relaxed);
    std::atomic_ref<std::uint16_t>(s.batch).store(static_cast<std::uint16_t>(batch > 65535 ? 65535 : batch),
                                                  std::memory_order_relaxed);
    present_[stage].store(true, std::memory_order_release);
  }
  // Records the degradation the stage applies (after start, before the stage's work).
  void degrade(std::uint16_t stage, Degradation d) {
    if (stage < kCapacity) std::atomic_ref<Degradation>(slots_[stage].degradation).store(d, std::memory_order_relaxed);
  }
  // What the stage's budget made it do for this request; kNone when it was not degraded (or
  // has not started).
  Degradation degradation(std::uint16_t stage) const {
    if (stage >= kCapacity || !present_[stage].load(std::memory_order_acquire)) return Degradation::kNone;
    return std::atomic_ref<Degradation>(slots_[stage].degradation).load(std::memory_order_relaxed);
  }
  // Whether any stage was degraded.
  bool degraded() const {
    for (std::uint16_t i = 0; i < kCapacity; ++i) {
      if (degradation(i) != Degradation::kNone) return true;
    }
    return false;
  }
  // Stamps the stage's hand-on time. A stage that completes its request finishes after the
  // client was answered; readers at completion see finished == 0 there and use the
  // request's completion time.
  void finish(std::uint16_t stage, Nanos finished) {
    if (stage < kCapacity) std::atomic_ref<Nanos>(slots_[stage].finished).store(finished, std::memory_order_relaxed);
  }
  // The stamped stages in stage order.
  std::vector<StageStamp> stamps() const {
    std::vector<StageStamp> out;
    for (std::uint16_t i = 0; i < kCapacity; ++i) {
      if (!present_[i].load(std::memory_order_acquire)) continue;
      Slot& s = slots_[i];
      out.push_back({i, std::atomic_ref<Nanos>(s.queued).load(std::memory_order_relaxed),
                     std::atomic_ref<Nanos>(s.started).load(std::memory_order_relaxed),
                     std::atomic_ref<Nanos>(s.finished).load(std::memory_order_relaxed),
                     std::atomic_ref<Degradation>(s.degradation).load(std::memory_order_relaxed),
                     std::atomic_ref<std::uint16_t>(s.batch).load(std::memory_order_relaxed)});
    }
    return out;
  }
  // Number of stamped stages.
  std::uint32_t size() const {
    std::uint32_t n = 0;
    for (const auto& p : present_) n += p.load(std::memory_order_acquire) ? 1 : 0;
    return n;
  }
  // Stages past capacity that were not stamped.
  std::uint32_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  // Plain fields accessed through std::atomic_ref, so a new request does not zero them.
  struct Slot {
    Nanos queued;
    Nanos started;
    Nanos finished;
    Degradation degradation;
    std::uint16_t batch;
  };
  std::array<std::atomic<bool>, kCapacity> present_{};  // the only part zeroed per request
  std::atomic<std::uint32_t> dropped_{0};
  mutable std::array<Slot, kCapacity> slots_;           // read only where present_
};

}  // namespace sluice
