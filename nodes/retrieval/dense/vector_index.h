// VectorIndex: nearest neighbours by inner product over unit vectors (so, cosine), behind one
// interface with two engines:
//   ExactIndex (exact_index.h): brute force with a register-blocked SIMD kernel, threaded and
//              batched; exact, best for small and medium knowledge bases.
//   HnswIndex  (hnsw_index.h): hnswlib's HNSW graph; approximate, for large ones.
// Vectors get consecutive DocIndex ids in the order added (the knowledge base maps them to chunks).
//
// Thread-safety: search() is const and safe from many threads once adding is finished; add()
// must not run concurrently with search() (the knowledge base builds a new snapshot and swaps
// it in instead of mutating a live index).
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "nodes/retrieval/scored.h"

namespace sluice::retrieval {

class VectorIndex {
 public:
  virtual ~VectorIndex() = default;
  virtual std::size_t dimension() const = 0;
  virtual std::size_t size() const = 0;
  virtual std::string kind() const = 0;  // "exact" or "hnsw"
  // Appends n row-major vectors of dimension() floats.
  virtual void add(const float* vectors, std::size_t n) = 0;
  // For each of nq row-major queries: the k best (highest inner product first).
  virtual std::vector<std::vector<ScoredDoc>> search(const float* queries, std::size_t nq,
                                                     std::size_t k) const = 0;
  virtual void save(std::ostream& out) const = 0;
  // Copies stored vector i (dimension() floats) into out; i < size().
  virtual void vector(std::size_t i, float* out) const = 0;
};

}  // namespace sluice::retrieval
