// ExactIndex: exact maximum-inner-product search (see vector_index.h for the contract).
//
// Storage: vectors are kept in panels of 16 (dimension-major inside a panel), the layout the
// register-blocked kernel streams (exact_scan_kernel.inc); the last panel is zero-padded.
// Search: the corpus is cut into chunks that fit the L2 cache (`chunk_vectors`), and every query
// block of up to 8 runs over a chunk while it is hot, so a batch of queries reads the corpus
// from memory once per thread, not once per query. Scores go into per-query TopK heaps.
// Threads: a batch is split by queries across oneTBB workers; a batch smaller than 8 queries per
// worker is split by corpus range instead, with the per-range heaps merged.
// The kernel is chosen once at start-up: AVX-512, AVX2+FMA or portable, by CPU support.
#pragma once

#include <memory>
#include <vector>

#include "nodes/retrieval/dense/vector_index.h"

namespace sluice::retrieval {

class ExactIndex final : public VectorIndex {
 public:
  explicit ExactIndex(std::size_t dimension) : dim_(dimension) {}

  std::size_t dimension() const override { return dim_; }
  std::size_t size() const override { return size_; }
  std::string kind() const override { return "exact"; }
  void add(const float* vectors, std::size_t n) override;
  std::vector<std::vector<ScoredDoc>> search(const float* queries, std::size_t nq,
                                             std::size_t k) const override;
  void save(std::ostream& out) const override;
  static std::unique_ptr<ExactIndex> load(std::istream& in);

  // Which kernel this process uses: "avx512", "avx2" or "generic".
  static const char* kernel_name();
  // Copies vector i back out (dimension() floats).
  void vector(std::size_t i, float* out) const override;

 private:
  void scan(const float* queries, std::size_t nq, std::size_t begin_panel, std::size_t end_panel,
            std::vector<TopK>& tops) const;

  std::size_t dim_;
  std::size_t size_ = 0;
  std::vector<float> panels_;  // ceil(size_/16) panels of dim_ * 16 floats
};

}  // namespace sluice::retrieval
