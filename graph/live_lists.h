// LiveLists: the requests a pipeline has let in, kept so that drain can abandon the ones still
// running at its deadline.
//
// One list per intake thread (indexed like the metric rows, graph/metric_slot.h), touched only by
// that thread, by drain and by the release after a burst, so neither intake nor completion
// shares a lock or a cache line with the other. A list holds its requests (RequestPtr) and
// drops the completed ones lazily, at three moments:
//  - each add first checks the next kPrunePerAdd entries, which keeps a list at light load to
//    the few requests its thread has in flight, and lets the intake thread, which allocated a
//    request, usually free it too;
//  - an add that finds the list at twice its size after its last sweep (and at least
//    kSweepFloor) sweeps it whole first. So a list never holds more than
//    max(kSweepFloor, 2 x the requests in flight from it at its last sweep) entries: under
//    sustained overload, about twice its share of runtime.max_in_flight. (Two checks per add
//    alone settled at three times that, and nothing bounded it.)
//  - release_completed() sweeps every list and gives back their spare capacity. The pipeline
//    calls it when a burst ends (InFlight::leave, graph/in_flight.h: the in-flight count fell to
//    half its peak, or to zero after such a fall), because once intake stops no add prunes:
//    before, the envelopes of a burst's last requests stayed listed until the next traffic, with
//    their prompts and attachments (11,846 of them and 146 MB after a 3.7x overload run).
// A completed request has already released its client's buffers (graph/request.h); what a
// listed one still holds is its envelope: input, attachments, trace.
//
// Thread-safety: thread-safe; a list's lock is uncontended but for drain, the release after a
// burst and threads sharing the overflow row.
#pragma once

#include <algorithm>
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
  static constexpr std::size_t kSweepFloor = 64;

  LiveLists() : lists_(std::make_unique<List[]>(metric_slot_count())) {}

  // Adds `request` to the calling thread's list.
  void add(const RequestPtr& request) {
    List& list = lists_[metric_slot().index];
    MutexLock lock(list.mu);
    prune(list, kPrunePerAdd);
    if (list.requests.size() >= list.sweep_at) sweep(list);
    list.requests.push_back(request);
  }
  // Drops the completed requests of every list and the lists' spare capacity. Takes each
  // list's lock in turn; costs one check per listed request.
  void release_completed();
  // Requests the lists hold: in flight, or completed and not yet pruned. Takes each list's lock.
  std::size_t entries() const;
  // Empties every list and returns the requests not done yet. For drain: nothing is added after.
  std::vector<RequestPtr> take_unfinished();

 private:
  struct alignas(64) List {
    mutable Mutex mu;
    std::vector<RequestPtr> requests GUARDED_BY(mu);
    std::size_t cursor GUARDED_BY(mu) = 0;             // where the next prune starts checking
    std::size_t sweep_at GUARDED_BY(mu) = kSweepFloor;  // the size at which an add sweeps first
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
  // Drops every completed entry; the next sweep is due at twice what is left.
  static void sweep(List& list) REQUIRES(list.mu) {
    std::erase_if(list.requests, [](const RequestPtr& r) { return r->done(); });
    list.cursor = 0;
    list.sweep_at = std::max(kSweepFloor, 2 * list.requests.size());
  }

  std::unique_ptr<List[]> lists_;
};

}  // namespace sluice
