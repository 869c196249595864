#include "nodes/retrieval/dense/cuda_exact_index.h"

#include <algorithm>

#include "kernels/cuda/cuda_vector_search.h"

namespace sluice::retrieval {

CudaExactIndex::CudaExactIndex(std::size_t dimension, CoalescerOptions coalescing, bool half_vectors)
    : host_(dimension),
      device_(std::make_unique<kernels::CudaVectorSearch>(
          dimension, half_vectors ? kernels::VectorStorage::kF16 : kernels::VectorStorage::kF32)) {
  coalescing.max_queries = std::min(coalescing.max_queries, kernels::CudaVectorSearch::kMaxQueries);
  coalescer_ = std::make_unique<SearchCoalescer>(
      dimension, [this](const float* q, std::size_t nq, std::size_t k) { return search_on_device(q, nq, k); }, coalescing);
}

CudaExactIndex::~CudaExactIndex() = default;

std::size_t CudaExactIndex::device_bytes() const { return device_->device_bytes(); }

void CudaExactIndex::add(const float* vectors, std::size_t n) {
  host_.add(vectors, n);
  device_->add(vectors, n);
}

std::vector<std::vector<ScoredDoc>> CudaExactIndex::search(const float* queries, std::size_t nq, std::size_t k) const {
  if (k > kernels::CudaVectorSearch::kMaxK || dimension() > kernels::CudaVectorSearch::kMaxDim) {
    return host_.search(queries, nq, k);
  }
  if (nq == 0 || k == 0 || size() == 0) return std::vector<std::vector<ScoredDoc>>(nq);
  return coalescer_->search(queries, nq, k);
}

std::vector<std::vector<ScoredDoc>> CudaExactIndex::search_on_device(const float* queries, std::size_t nq,
                                                                     std::size_t k) const {
  const std::size_t keep = std::min(k, size());
  std::vector<std::uint32_t> ids(nq * k);
  std::vector<float> scores(nq * k);
  device_->search(queries, nq, k, ids.data(), scores.data());
  std::vector<std::vector<ScoredDoc>> out(nq);
  for (std::size_t q = 0; q < nq; ++q) {
    out[q].reserve(keep);
    for (std::size_t r = 0; r < keep; ++r) out[q].push_back(ScoredDoc{ids[q * k + r], scores[q * k + r]});
  }
  return out;
}

}  // namespace sluice::retrieval
