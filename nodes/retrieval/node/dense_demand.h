// DenseDemand: whether any fuse node of a pipeline ranks with the dense path on a snapshot, so
// the embed and dense nodes in front of it do no work whose result nobody reads.
//
// Below the path-agreement bar a fuse node leads with BM25 (kb/retriever.h, lexical_led) at
// `low_agreement_bm25_weight`; at weight 1 (the default) it reads neither the query vector nor
// the dense hits, so embedding the query and searching the vectors (24 and 110 us of stage time
// a request on CACM, docs/benchmarks.md) would be thrown away. The embed and dense nodes ask
// wanted(snapshot) per request (an uncontended lock and one comparison per fuse node) and skip
// the requests pinned to a snapshot no fuse node would use it on (kb/retriever.h, dense_ranks);
// the fuse node then ranks BM25's candidates in BM25's order, as it does with the dense hits
// (hybrid_rank), only without their dense ranks.
//
// One DenseDemand per (pipeline, knowledge base), found through dense_demand_for() by the nodes
// of one pipeline; a fuse node adds its options when built and removes them when it goes. With
// no fuse node registered the dense path is wanted (a dense-only pipeline, nodes built by hand).
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/mutex.h"
#include "graph/thread_annotations.h"
#include "nodes/retrieval/kb/kb_snapshot.h"
#include "nodes/retrieval/kb/retriever.h"

namespace sluice::retrieval {

class DenseDemand {
 public:
  // Returns a ticket for remove_fuse.
  std::uint64_t add_fuse(const RetrieveOptions& options);
  void remove_fuse(std::uint64_t ticket);
  // False only when fuse nodes are registered and none ranks with the dense path on `snapshot`
  // (kb/retriever.h, dense_ranks: each led by BM25 at weight 1).
  bool wanted(const KbSnapshot& snapshot) const;

 private:
  mutable Mutex mu_;
  std::uint64_t next_ticket_ GUARDED_BY(mu_) = 1;
  std::vector<std::pair<std::uint64_t, RetrieveOptions>> fuses_ GUARDED_BY(mu_);
};

// The DenseDemand shared by the nodes of the pipeline `pipeline` (its name and fingerprint,
// graph/node.h) over the knowledge base `kb`; it lives while a node holds it.
std::shared_ptr<DenseDemand> dense_demand_for(const std::string& pipeline, const void* kb);

}  // namespace sluice::retrieval
