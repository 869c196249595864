// HnswIndex: approximate inner-product search on hnswlib's HNSW graph (Debian's libhnswlib-dev,
// header-only), kept behind VectorIndex so no hnswlib type leaks out.
//
// Knobs (defaults are hnswlib's own and the anchors' setting):
//   m (16): graph degree; memory and recall grow with it.
//   ef_construction (200): build-time beam; build time and graph quality.
//   ef_search (32): query-time beam; recall@10 0.979 at 32 on the anchors' data, raise for more.
// add() inserts over oneTBB workers (see `parallel_insert`); capacity grows by resizing the
// graph. search() queries in parallel for batches.
// Sanitizer builds compile this file with hnswlib's NO_MANUAL_VECTORIZATION: hnswlib 0.6.2's
// SSE prefetch in searchBaseLayer reads one link past a full neighbour list (a 4-byte over-read
// used only as a prefetch address), which AddressSanitizer rightly reports.
#pragma once

#include <cstdint>
#include <memory>

#include "nodes/retrieval/dense/vector_index.h"

namespace sluice::retrieval {

struct HnswOptions {
  std::size_t m = 16;
  std::size_t ef_construction = 200;
  std::size_t ef_search = 32;
  std::uint64_t seed = 100;
  // Insert over oneTBB workers (hnswlib's insert is thread-safe); false inserts on the caller's
  // thread only, for deterministic graphs.
  bool parallel_insert = true;
};

class HnswIndex final : public VectorIndex {
 public:
  HnswIndex(std::size_t dimension, HnswOptions options);
  ~HnswIndex() override;

  std::size_t dimension() const override { return dim_; }
  std::size_t size() const override;
  std::string kind() const override { return "hnsw"; }
  void add(const float* vectors, std::size_t n) override;
  std::vector<std::vector<ScoredDoc>> search(const float* queries, std::size_t nq,
                                             std::size_t k) const override;
  void save(std::ostream& out) const override;
  static std::unique_ptr<HnswIndex> load(std::istream& in);
  const HnswOptions& options() const { return options_; }
  // Leaves vector i out of every later search (hnswlib's markDelete; it keeps its place in the
  // graph, so callers rebuild once many are removed). Not safe while searches or adds run.
  void mark_removed(std::size_t i);
  // Changes the query-time beam. Not safe while searches run (hnswlib keeps ef in the graph).
  void set_ef_search(std::size_t ef);
  void vector(std::size_t i, float* out) const override;

 private:
  struct Impl;
  std::size_t dim_;
  HnswOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::retrieval
