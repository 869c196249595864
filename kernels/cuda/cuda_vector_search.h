// CudaVectorSearch: exact maximum-inner-product search over vectors held in GPU memory as F32 or
// F16 (half the bytes):
// the device half of the retrieval's exact index on the GPU
// (nodes/retrieval/dense/cuda_exact_index.h). Plain C++ (no CUDA headers).
//
// Contract:
// - Scores are bit for bit those of the CPU exact index's SIMD kernels
//   (nodes/retrieval/dense/exact_scan_kernel.inc, AVX2 and AVX-512): each (query, vector) score
//   is the fused multiply-add chain over the dimensions in order from 0, starting at +0. With
//   F16 storage the vectors are rounded to half (nearest even) when added, and the scores are
//   those of the rounded vectors (widened to float exactly): a CPU index of the rounded vectors
//   answers the same.
// - Order: higher score first, then lower id (retrieval's ranks_before), so results equal the
//   CPU index's. A query gets min(k, size()) results; the rest of its k slots are untouched.
// - Limits: k at most kMaxK and a dimension of at most kMaxDim; search() throws
//   std::invalid_argument beyond them (the caller searches on the CPU instead) and for a
//   batch over kMaxQueries (the caller splits it).
// - add() appends (ids continue from size()) and copies the vectors to the device at once.
//   Device memory grows by doubling; device_bytes() is what it holds.
// - CUDA errors throw std::runtime_error naming the call (kernels/cuda/cuda_check.h).
// - Not thread-safe: one call at a time (nodes/retrieval/dense/search_coalescer.h serialises
//   the index's callers and merges their queries into one launch).
//
// How (cuda_vector_search.cu): the vectors sit in panels of 32, dimension-major inside a panel,
// so a warp reads one dimension of 32 vectors as 128 contiguous bytes. One thread block scores
// a tile of 2,048 vectors for up to 8 queries (the queries in shared memory), turns each
// (score, id) into one 64-bit key that sorts in the contract's order, sorts the tile's keys
// with CUB's block radix sort and keeps the first k; CUB's segmented radix sort then orders
// each query's candidates from all tiles, and only k keys per query come back to the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace sluice::kernels {

enum class VectorStorage { kF32, kF16 };

class CudaVectorSearch {
 public:
  static constexpr std::size_t kMaxK = 2048;       // one tile's vectors
  static constexpr std::size_t kMaxDim = 4096;     // one query's floats fit the block's shared memory
  static constexpr std::size_t kMaxQueries = 256;  // one launch's queries

  // On the current CUDA device. Throws std::runtime_error without one, std::invalid_argument
  // for a dimension of 0.
  explicit CudaVectorSearch(std::size_t dimension, VectorStorage storage = VectorStorage::kF32);
  ~CudaVectorSearch();
  CudaVectorSearch(const CudaVectorSearch&) = delete;
  CudaVectorSearch& operator=(const CudaVectorSearch&) = delete;

  std::size_t dimension() const;
  std::size_t size() const;
  VectorStorage storage() const;
  std::size_t device_bytes() const;

  // Appends n row-major vectors of dimension() floats.
  void add(const float* vectors, std::size_t n);
  // For each of nq row-major queries: its best min(k, size()) ids and scores at ids[q * k ..]
  // and scores[q * k ..], best first.
  void search(const float* queries, std::size_t nq, std::size_t k, std::uint32_t* ids, float* scores);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kernels
