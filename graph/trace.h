// Trace: the per-stage timestamps of one request. Every node boundary stamps it (the runtime
// does this, nodes never time themselves), so queue wait and service time are known per stage.
//
// Stamps are appended lock-free: parallel branches may stamp the same request at once, each
// into its own slot. Readers read in the sink's on_complete (on the completing thread, where
// the completing stage's own stamp still has finished == 0), or after the pipeline is done
// with the request's batch.
// Capacity is fixed so a trace never allocates; stamps past capacity are counted and dropped.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "graph/clock.h"

namespace sluice {

struct StageStamp {
  std::uint16_t stage;   // index into the pipeline's stage names
  Nanos queued;          // when the batch became ready for this stage
  Nanos started;         // when the stage began on it
  Nanos finished;        // when the stage handed it on (0 while running)
};

class Trace {
 public:
  static constexpr std::uint32_t kCapacity = 16;

  // Appends a stamp; returns its slot for finish(), or kCapacity when it was dropped.
  std::uint32_t record(const StageStamp& stamp) {
    std::uint32_t slot = count_.fetch_add(1, std::memory_order_relaxed);
    if (slot >= kCapacity) return kCapacity;
    stamps_[slot] = stamp;
    return slot;
  }
  // Sets the finish time of a stamp recorded earlier. A stage that completes its request
  // finishes after the client was answered; readers at completion see finished == 0 there
  // and use the request's completion time.
  void finish(std::uint32_t slot, Nanos finished) {
    if (slot < kCapacity) stamps_[slot].finished = finished;
  }
  // Number of valid stamps (at most kCapacity).
  std::uint32_t size() const {
    std::uint32_t n = count_.load(std::memory_order_acquire);
    return n < kCapacity ? n : kCapacity;
  }
  std::uint32_t dropped() const {
    std::uint32_t n = count_.load(std::memory_order_acquire);
    return n > kCapacity ? n - kCapacity : 0;
  }
  const StageStamp& operator[](std::uint32_t i) const { return stamps_[i]; }

 private:
  std::atomic<std::uint32_t> count_{0};
  // Not zeroed: only the first size() stamps are ever read.
  std::array<StageStamp, kCapacity> stamps_;
};

}  // namespace sluice
