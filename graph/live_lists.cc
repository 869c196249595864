#include "graph/live_lists.h"

namespace sluice {

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
