#include "kernels/cuda/cuda_vector_search.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_vector_search_kernels.h"
#include "kernels/cuda/device_memory.h"

namespace sluice::kernels {
namespace {

using cuda_detail::kPanelVectors;
using cuda_detail::kVectorTile;

// Scratch bounds: candidate keys of one pass (and as much again sorted), and vectors staged
// per copy in add(). A batch whose candidates would exceed it runs in several passes.
constexpr size_t kCandidateBytes = size_t(64) << 20;
constexpr size_t kAddChunkVectors = 65536;

// Grows `buffer` to at least `bytes` (contents not kept).
void reserve(DeviceBuffer& buffer, size_t bytes) {
  if (buffer.bytes() >= bytes) return;
  buffer = DeviceBuffer();  // the old one released first
  buffer = DeviceBuffer(bytes);
}

// The inverse of the kernel's rank_key.
void decode(uint64_t key, uint32_t* id, float* score) {
  uint32_t high = uint32_t(key >> 32);
  high = (high & 0x80000000u) ? (high ^ 0x80000000u) : ~high;
  __builtin_memcpy(score, &high, sizeof high);
  *id = 0xffffffffu - uint32_t(key);
}

}  // namespace

struct CudaVectorSearch::Impl {
  size_t dim = 0;
  VectorStorage storage = VectorStorage::kF32;
  size_t size = 0;
  size_t capacity_panels = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  DeviceBuffer panels;  // capacity_panels x dim x 32 elements (float or half)
  DeviceBuffer staging;  // rows being added, or a pass's queries
  DeviceBuffer candidates, sorted, offsets, sort_temp;
  std::vector<uint64_t> keys;  // one pass's results on the host
  std::vector<int> host_offsets;

  cudaStream_t on() {
    CUDA_CHECK(cudaSetDevice(device));
    return stream;
  }
};

CudaVectorSearch::CudaVectorSearch(size_t dimension, VectorStorage storage) : impl_(std::make_unique<Impl>()) {
  if (dimension == 0) throw std::invalid_argument("CudaVectorSearch: dimension 0");
  impl_->storage = storage;
  if (cuda_device_count() == 0) throw std::runtime_error("CudaVectorSearch: no CUDA device: " + cuda_unavailable_reason());
  impl_->dim = dimension;
  CUDA_CHECK(cudaGetDevice(&impl_->device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
}

CudaVectorSearch::~CudaVectorSearch() {
  if (impl_ && impl_->stream) {
    cudaSetDevice(impl_->device);
    cudaStreamSynchronize(impl_->stream);
    cudaStreamDestroy(impl_->stream);
  }
}

size_t CudaVectorSearch::dimension() const { return impl_->dim; }
size_t CudaVectorSearch::size() const { return impl_->size; }
VectorStorage CudaVectorSearch::storage() const { return impl_->storage; }
size_t CudaVectorSearch::device_bytes() const {
  const Impl& m = *impl_;
  return m.panels.bytes() + m.staging.bytes() + m.candidates.bytes() + m.sorted.bytes() + m.offsets.bytes() +
         m.sort_temp.bytes();
}

void CudaVectorSearch::add(const float* vectors, size_t n) {
  if (n == 0) return;
  Impl& m = *impl_;
  if (m.size + n > size_t(0xfffffffeu)) throw std::invalid_argument("CudaVectorSearch: more than 2^32 - 2 vectors");
  cudaStream_t stream = m.on();
  const bool half = m.storage == VectorStorage::kF16;
  const size_t panel_bytes = m.dim * kPanelVectors * (half ? 2 : sizeof(float));
  const size_t need = (m.size + n + kPanelVectors - 1) / kPanelVectors;
  if (need > m.capacity_panels) {
    const size_t capacity = std::max({need, m.capacity_panels * 2, size_t(64)});
    DeviceBuffer grown(capacity * panel_bytes);
    const size_t used = (m.size + kPanelVectors - 1) / kPanelVectors;
    if (used > 0) {
      CUDA_CHECK(cudaMemcpyAsync(grown.data(), m.panels.data(), used * panel_bytes,
                                 cudaMemcpyDeviceToDevice, stream));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));  // the old panels are read before they are freed
    m.panels = std::move(grown);
    m.capacity_panels = capacity;
  }
  for (size_t done = 0; done < n; done += kAddChunkVectors) {
    const size_t count = std::min(kAddChunkVectors, n - done);
    reserve(m.staging, count * m.dim * sizeof(float));
    CUDA_CHECK(cudaMemcpyAsync(m.staging.data(), vectors + done * m.dim, count * m.dim * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
    cuda_detail::launch_scatter_to_panels(m.staging.as<float>(), int64_t(count), int(m.dim), int64_t(m.size + done),
                                          m.panels.data(), half, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));  // staging is reused by the next chunk
  }
  m.size += n;
}

void CudaVectorSearch::search(const float* queries, size_t nq, size_t k, uint32_t* ids, float* scores) {
  Impl& m = *impl_;
  if (k > kMaxK) throw std::invalid_argument("CudaVectorSearch: k " + std::to_string(k) + " is over " + std::to_string(kMaxK));
  if (m.dim > kMaxDim) {
    throw std::invalid_argument("CudaVectorSearch: dimension " + std::to_string(m.dim) + " is over " + std::to_string(kMaxDim));
  }
  if (nq > kMaxQueries) {
    throw std::invalid_argument("CudaVectorSearch: " + std::to_string(nq) + " queries in one call, over " +
                                std::to_string(kMaxQueries));
  }
  if (nq == 0 || k == 0 || m.size == 0) return;
  cudaStream_t stream = m.on();
  const size_t kk = k;  // k <= kVectorTile
  const size_t tiles = (m.size + kVectorTile - 1) / kVectorTile;
  const size_t keep = std::min(k, m.size);
  const size_t per_query = tiles * kk;
  const size_t pass_queries = std::max<size_t>(1, std::min(nq, kCandidateBytes / sizeof(uint64_t) / per_query));
  if (per_query * pass_queries > size_t(INT_MAX)) throw std::invalid_argument("CudaVectorSearch: too many candidates per query");

  for (size_t q0 = 0; q0 < nq; q0 += pass_queries) {
    const size_t pq = std::min(pass_queries, nq - q0);
    const size_t items = pq * per_query;
    reserve(m.staging, pq * m.dim * sizeof(float));
    CUDA_CHECK(cudaMemcpyAsync(m.staging.data(), queries + q0 * m.dim, pq * m.dim * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
    reserve(m.candidates, items * sizeof(uint64_t));
    cuda_detail::launch_score_tiles(m.panels.data(), m.storage == VectorStorage::kF16, int64_t(m.size), int(m.dim),
                                    m.staging.as<float>(), int(pq), int(kk), int(tiles), m.candidates.as<uint64_t>(),
                                    stream);
    const uint64_t* ranked = m.candidates.as<uint64_t>();
    if (tiles > 1) {  // one tile's keys are already in order
      m.host_offsets.resize(pq + 1);
      for (size_t s = 0; s <= pq; ++s) m.host_offsets[s] = int(s * per_query);
      reserve(m.offsets, (pq + 1) * sizeof(int));
      CUDA_CHECK(cudaMemcpyAsync(m.offsets.data(), m.host_offsets.data(), (pq + 1) * sizeof(int), cudaMemcpyHostToDevice,
                                 stream));
      reserve(m.sorted, items * sizeof(uint64_t));
      const size_t temp = cuda_detail::segmented_sort_bytes(int(items), int(pq), m.offsets.as<int>());
      reserve(m.sort_temp, std::max<size_t>(temp, 1));
      cuda_detail::launch_segmented_sort(m.sort_temp.data(), m.sort_temp.bytes(), m.candidates.as<uint64_t>(),
                                         m.sorted.as<uint64_t>(), int(items), int(pq), m.offsets.as<int>(), stream);
      ranked = m.sorted.as<uint64_t>();
    }
    m.keys.resize(pq * keep);
    CUDA_CHECK(cudaMemcpy2DAsync(m.keys.data(), keep * sizeof(uint64_t), ranked, per_query * sizeof(uint64_t),
                                 keep * sizeof(uint64_t), pq, cudaMemcpyDeviceToHost, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t q = 0; q < pq; ++q) {
      for (size_t r = 0; r < keep; ++r) {
        decode(m.keys[q * keep + r], &ids[(q0 + q) * k + r], &scores[(q0 + q) * k + r]);
      }
    }
  }
}

}  // namespace sluice::kernels
