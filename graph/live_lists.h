// LiveLists: the requests a pipeline has let in, kept so that drain can abandon the ones still
// running at its deadline.
//
// One list per intake thread (indexed like the metric rows, graph/metric_slot.h), touched only by
// that thread and by drain, so neither intake nor completion shares a lock or a cache line with
// the other. A list holds its requests (RequestPtr) and drops the completed ones lazily: each add
// first checks the next kPrunePerAdd entries, so a list stays within about twice the requests its
// thread has in flight, and the intake thread, which allocated a request, usually frees it too.
// Thread-safe; a list's lock is uncontended but for drain and threads sharing the overflow row.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "graph/metric_slot.h"
#include "graph/mutex.h"
#include "graph/request.h"

namespace sluice {

class LiveLists {
 public:
  static constexpr std::size_t kPrunePerAdd = 2;

  LiveLists() : lists_(std::make_unique<List[]>(metric_slot_count())) {}

  // Adds `request` to the calling thread's list.
  void add(const RequestPtr& request) {
    List& list = lists_[metric_slot().index];
    MutexLock lock(list.mu);
    prune(list, kPrunePerAdd);
    list.requests.push_back(request);
  }
  // Requests the lists hold: in flight, or completed and not yet pruned. Takes each list's lock.
  std::size_t entries() const;
  // Empties every list and returns the requests not done yet. For drain: nothing is added after.
  std::vector<RequestPtr> take_unfinished();

 private:
  struct alignas(64) List {
    mutable Mutex mu;
    std::vector<RequestPtr> requests GUARDED_BY(mu);
    std::size_t cursor GUARDED_BY(mu) = 0;  // where the next prune starts checking
  };
  // Checks up to `checks` entries from the cursor on, dropping the completed ones.
  static void prune(List& list, std::size_t checks) REQUIRES(list.mu) {
    auto& v = list.requests;
    for (std::size_t i = 0; i < checks && !v.empty(); ++i) {
      if (list.cursor >= v.size()) list.cursor = 0;
      if (v[list.cursor]->done()) {
        std::swap(v[list.cursor], v.back());
        v.pop_back();  // the last reference when the graph is done with it too
      } else {
        ++list.cursor;
      }
    }
  }

  std::unique_ptr<List[]> lists_;
};

}  // namespace sluice
