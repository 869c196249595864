// CudaExactIndex: the exact index on the GPU (vector_index.h's contract; kind "exact"), built
// only where CUDA is (SLUICE_HAVE_CUDA_INDEX). Results equal ExactIndex's: the device kernel
// computes the same scores bit for bit and orders them the same way
// (kernels/cuda/cuda_vector_search.h), so the CPU index is this one's twin in the tests.
//
// - Memory: the vectors live in device memory (F32, or F16 with `device: cuda-f16`, panels of
//   32) and, as the CPU twin, in host
//   memory too: save(), vector() and searches beyond the device kernel's limits (k over 2,048,
//   a dimension over 4,096) are served by the host copy.
// - Concurrent searches are merged into one launch (search_coalescer.h): a GPU index queried
//   one query at a time is slower than the CPU one (facebookresearch/faiss#375).
// - Thread-safety as vector_index.h: add() before any search, search() from any thread.
#pragma once

#include <memory>

#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/search_coalescer.h"

namespace sluice::kernels {
class CudaVectorSearch;
}

namespace sluice::retrieval {

class CudaExactIndex final : public VectorIndex {
 public:
  // On the current CUDA device, its vectors there in F16 when half_vectors (then the device's
  // answers are those of the vectors rounded to half; the host copy, which save(), vector()
  // and searches beyond the kernel's limits use, stays F32). Throws std::runtime_error
  // without a device.
  CudaExactIndex(std::size_t dimension, CoalescerOptions coalescing, bool half_vectors = false);
  ~CudaExactIndex() override;

  std::size_t dimension() const override { return host_.dimension(); }
  std::size_t size() const override { return host_.size(); }
  std::string kind() const override { return "exact"; }
  void add(const float* vectors, std::size_t n) override;
  std::vector<std::vector<ScoredDoc>> search(const float* queries, std::size_t nq, std::size_t k) const override;
  void save(std::ostream& out) const override { host_.save(out); }
  void vector(std::size_t i, float* out) const override { host_.vector(i, out); }

  SearchCoalescer::Stats coalescing() const { return coalescer_->stats(); }
  std::size_t device_bytes() const;

 private:
  std::vector<std::vector<ScoredDoc>> search_on_device(const float* queries, std::size_t nq, std::size_t k) const;

  ExactIndex host_;
  std::unique_ptr<kernels::CudaVectorSearch> device_;  // called only by the coalescer's one batch at a time
  std::unique_ptr<SearchCoalescer> coalescer_;
};

}  // namespace sluice::retrieval
