// visible_parallel_for: oneTBB's parallel_for, with its hand-offs marked for ThreadSanitizer.
//
// Contract: the same as tbb::parallel_for(first, last, body) (body(i) for every index, in any
// order, on any of the arena's threads) and tbb::parallel_for(range, body) (body(sub-range) for
// sub-ranges that cover `range`); it returns when every call has returned. In a TSan build
// (graph/tsan_annotations.h), everything the caller did before the call happens-before every
// body call, and every body call happens-before the return; two body calls are NOT ordered
// with each other, so a race between two iterations is still reported. Outside TSan it is
// tbb::parallel_for.
//
// Why: oneTBB's library is not instrumented, so TSan sees neither its hand-off of the loop to
// its workers nor their completion: every loop over data the caller wrote just before was
// reported (the LSA fit of a knowledge base, docs/testing.md "ThreadSanitizer"). The body and
// the sub-range a worker receives are copies inside oneTBB's task objects, read here as
// oneTBB's memory (SLUICE_TBB_OWNED_*), the same way as MatmulRunner::parallel_impl.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "graph/tsan_annotations.h"

namespace sluice {

// The two addresses one loop is ordered through: the caller releases `start` before the loop
// and acquires `done` after it; each body call acquires `start` and releases `done`. No body
// acquires `done`, so the calls are not ordered with each other.
struct ParallelForOrder {
  char start = 0;
  char done = 0;
};

template <class Index, class Body>
void visible_parallel_for(Index first, Index last, const Body& body) {
  ParallelForOrder order;
  ParallelForOrder* const at = &order;
  const Body* const fn = &body;
  SLUICE_HANDOFF_RELEASE(&at->start);
  tbb::parallel_for(first, last, [at, fn](Index i) {
    SLUICE_TBB_OWNED_BEGIN();
    ParallelForOrder* const o = at;
    const Body* const f = fn;
    SLUICE_TBB_OWNED_END();
    SLUICE_HANDOFF_ACQUIRE(&o->start);
    (*f)(i);
    SLUICE_HANDOFF_RELEASE(&o->done);
  });
  SLUICE_HANDOFF_ACQUIRE(&at->done);
}

template <class Value, class Body>
void visible_parallel_for(const tbb::blocked_range<Value>& range, const Body& body) {
  ParallelForOrder order;
  ParallelForOrder* const at = &order;
  const Body* const fn = &body;
  SLUICE_HANDOFF_RELEASE(&at->start);
  tbb::parallel_for(range, [at, fn](const tbb::blocked_range<Value>& r) {
    SLUICE_TBB_OWNED_BEGIN();
    ParallelForOrder* const o = at;
    const Body* const f = fn;
    const tbb::blocked_range<Value> sub = r;
    SLUICE_TBB_OWNED_END();
    SLUICE_HANDOFF_ACQUIRE(&o->start);
    (*f)(sub);
    SLUICE_HANDOFF_RELEASE(&o->done);
  });
  SLUICE_HANDOFF_ACQUIRE(&at->done);
}

}  // namespace sluice
