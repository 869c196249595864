// FillEpoch: keeps a lookup that fills the in-process store (L1) from the shared Redis tier
// (store: redis) from putting back an entry that an invalidation has just removed.
//
// The race it closes: a lookup misses L1, reads the entry from Redis and stores it in L1; an
// invalidation (DELETE /v1/cache here, or another instance's, heard over pub/sub) deletes the
// entry from Redis and removes it from L1. When the removal runs between the read and the store,
// L1 keeps what the invalidation meant to remove, until the entry's ttl.
//
// Protocol:
//   invalidation: delete from Redis (or, for another instance's, hear that it did), bump(), then
//                 remove from L1;
//   fill:         taken = begin() before reading Redis; store into L1 only if current(taken)
//                 holds inside the store's critical section (ExactStore::put_if).
// The fill's critical section comes either before the removal's (which then removes the entry)
// or after it, and so after the bump, which it then sees. A fill whose read came after the Redis
// delete finds nothing to store. The owner passes begin() 0 while it is not subscribed to the
// other instances' invalidations (it could miss one then); 0 is never current.
//
// Thread-safety: every method from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace sluice::cache {

class FillEpoch {
 public:
  std::uint64_t begin() const { return epoch_.load(std::memory_order_acquire); }
  bool current(std::uint64_t taken) const { return taken != 0 && epoch_.load(std::memory_order_acquire) == taken; }
  void bump() { epoch_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<std::uint64_t> epoch_{1};
};

}  // namespace sluice::cache
