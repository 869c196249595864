#include "graph/live_lists.h"

namespace sluice {

void LiveLists::release_completed() {
  for (std::size_t i = 0; i < metric_slot_count(); ++i) {
    List& list = lists_[i];
    MutexLock lock(list.mu);
    sweep(list);
    // The burst's capacity goes too (16 bytes an entry); kSweepFloor's worth stays, so light
    // traffic after it does not reallocate.
    if (list.requests.capacity() > std::max(kSweepFloor, 4 * list.requests.size())) {
      std::vector<RequestPtr> kept;
      kept.reserve(std::max(kSweepFloor, list.requests.size()));
      for (auto& r : list.requests) kept.push_back(std::move(r));
      list.requests.swap(kept);
    }
  }
}

std::size_t LiveLists::entries() const {
  std::size_t total = 0;
  for (std::size_t i = 0; i < metric_slot_count(); ++i) {
    MutexLock lock(lists_[i].mu);
    total += lists_[i].requests.size();
  }
  return total;
}

std::vector<RequestPtr> LiveLists::take_unfinished() {
  std::vector<RequestPtr> unfinished;
  for (std::size_t i = 0; i < metric_slot_count(); ++i) {
    List& list = lists_[i];
    MutexLock lock(list.mu);
    for (const auto& r : list.requests) {
      if (!r->done()) unfinished.push_back(r);
    }
    list.requests.clear();
    list.cursor = 0;
  }
  return unfinished;
}

}  // namespace sluice
