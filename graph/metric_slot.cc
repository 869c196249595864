#include "graph/metric_slot.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "graph/mutex.h"

namespace sluice {

std::size_t metric_slot_count() {
  // Hardware threads (TBB workers) + 16 for HTTP, Kafka and engine threads + the shared row;
  // capped so a very wide machine does not make every histogram large.
  static const std::size_t count =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 112) + 16 + 1;
  return count;
}

namespace detail {
namespace {

struct SlotPool {
  Mutex mu;
  std::vector<std::uint32_t> free GUARDED_BY(mu);  // exclusive rows nobody owns
  std::uint32_t next GUARDED_BY(mu) = 0;           // rows never handed out start here
};

SlotPool& pool() {
  static SlotPool* p = new SlotPool();  // never destroyed: threads may exit after static destruction
  return *p;
}

// Gives the exclusive row back when its thread exits.
struct SlotReturn {
  ~SlotReturn() {
    if (!t_metric_slot.exclusive) return;
    SlotPool& p = pool();
    {
      MutexLock lock(p.mu);
      p.free.push_back(t_metric_slot.index);
    }
    // Updates from destructors that run after this one go to the shared row.
    t_metric_slot = {static_cast<std::uint32_t>(metric_slot_count() - 1), false};
  }
};

}  // namespace

void assign_metric_slot() {
  const std::uint32_t shared = static_cast<std::uint32_t>(metric_slot_count() - 1);
  SlotPool& p = pool();
  MetricSlot slot{shared, false};
  {
    MutexLock lock(p.mu);
    if (!p.free.empty()) {
      slot = {p.free.back(), true};
      p.free.pop_back();
    } else if (p.next < shared) {
      slot = {p.next++, true};
    }
  }
  t_metric_slot = slot;
  if (slot.exclusive) {
    thread_local SlotReturn give_back;
    (void)give_back;
  }
}

}  // namespace detail
}  // namespace sluice
