// Hop: what travels along a oneTBB edge of a pipeline: the batch and when it became ready for
// the next stage, so each stage's queue wait is known even when parallel branches share the
// batch. Internal to the runtime (graph/pipeline_flow.h builds the edges it travels).
#pragma once

#include <utility>

#include "graph/batch.h"
#include "graph/clock.h"
#include "graph/tsan_annotations.h"

namespace sluice {

struct Hop {
  BatchPtr batch;
  Nanos ready_at = 0;
#if defined(__SANITIZE_THREAD__)
  // oneTBB copies, moves and destroys hops inside its task objects, whose hand-off between
  // threads is invisible to TSan (the library is not instrumented), on the receiving thread
  // before any stage code runs. In TSan builds the hop's own bytes are treated as oneTBB's
  // (not checked), every copy acquires the batch and every destruction releases it before
  // the reference is dropped outside the unchecked region (graph/tsan_annotations.h).
  Hop() = default;
  Hop(BatchPtr b, Nanos t) : batch(std::move(b)), ready_at(t) {}
  // The unchecked region opens before the members are built (owned_begin) and closes in the
  // body, so even their default construction is inside it.
  Hop(const Hop& o) : batch(owned_begin(o.batch)), ready_at(o.ready_at) { owned_end(); }
  Hop(Hop&& o) noexcept : batch(owned_begin(std::move(o.batch))), ready_at(o.ready_at) { owned_end(); }
  Hop& operator=(const Hop& o) { return assign(o); }
  Hop& operator=(Hop&& o) noexcept { return assign(std::move(o)); }
  ~Hop() { drop(); }

 private:
  template <class P>
  static P&& owned_begin(P&& p) {
    SLUICE_TBB_OWNED_BEGIN();
    return std::forward<P>(p);
  }
  void owned_end() {
    Batch* p = batch.get();
    SLUICE_TBB_OWNED_END();
    if (p) SLUICE_HANDOFF_ACQUIRE(p);
  }
  template <class Other>
  Hop& assign(Other&& o) {
    drop();
    SLUICE_TBB_OWNED_BEGIN();
    batch = std::forward<Other>(o).batch;
    ready_at = o.ready_at;
    owned_end();
    return *this;
  }
  void drop() {
    SLUICE_TBB_OWNED_BEGIN();
    BatchPtr held = std::move(batch);
    SLUICE_TBB_OWNED_END();
    if (held) SLUICE_HANDOFF_RELEASE(held.get());
  }  // `held` releases its reference here, checked
#endif
};

}  // namespace sluice
