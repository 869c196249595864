// Batch: what travels along every graph edge. A single request is a batch of one, so a
// batcher is a node like any other and a fan-in joins its branches' results by batch id.
//
// A batch is shared (BatchPtr) by the parallel branches of a fan-out; they may work on it at
// the same time, so branches write their results into their requests' attachments, never
// into the batch itself. Every node hands every batch on, even when all its requests have
// failed: a join waits for each branch, and the runtime's final stage makes sure every
// request completes.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/request.h"

namespace sluice {

// Cache-line aligned for the same reason as Request: its reference counts change on every hop.
struct alignas(64) Batch {
  std::uint64_t id = 0;                 // unique per pipeline; the join key
  std::vector<RequestPtr> requests;
  // Leaves of the graph this batch has still to reach; the runtime's final stage checks that
  // every request was answered once the last leaf is reached. Set by whoever makes the batch
  // (the pipeline at intake, NodeContext::make_batch inside the graph).
  std::atomic<int> pending_leaves{1};
};

using BatchPtr = std::shared_ptr<Batch>;

}  // namespace sluice
