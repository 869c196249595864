// Exact vector search on the GPU (cuda_vector_search.h): the panels' scatter, the tile kernel
// (scores, 64-bit keys, CUB block radix sort, the tile's best k) and CUB's segmented radix sort
// over each query's candidates.
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_device_util.cuh"
#include "kernels/cuda/cuda_vector_search_kernels.h"

namespace sluice::kernels::cuda_detail {
namespace {

constexpr int kThreads = 256;
constexpr int kItems = kVectorTile / kThreads;  // 8 vectors per thread
static_assert(kItems * kThreads == kVectorTile, "a tile is the block's threads times their items");

// One key orders (score, id) as retrieval's ranks_before does, highest key first: the score's
// bits made monotone (sign flipped for positives, all bits for negatives) above the id's
// complement (a lower id is a higher key). +0 stands for -0, which CPU comparisons equal to it.
// Key 0 marks padding: every real score's upper half is non-zero.
__device__ __forceinline__ uint64_t rank_key(float score, uint32_t id) {
  uint32_t b = __float_as_uint(score == 0.0f ? 0.0f : score);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (uint64_t(b) << 32) | uint64_t(0xffffffffu - id);
}

// T is the panels' element: float, or IEEE half rounded to nearest even (from_float).
template <typename T>
__global__ void scatter_to_panels(const float* rows, int64_t n, int dim, int64_t first_id, T* panels) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n * dim) return;
  const int64_t v = first_id + i / dim;
  const int64_t j = i % dim;
  panels[(v / kPanelVectors) * dim * kPanelVectors + j * kPanelVectors + v % kPanelVectors] = from_float<T>(rows[i]);
}

// Block (tile, query group): scores vectors [tile * kVectorTile, +kVectorTile) for queries
// [group * QB, +QB), then per query sorts the tile's keys and writes its best `kk` to
// candidates[(query * tiles + tile) * kk ..]. Thread t scores vectors tile_base + i * 256 + t,
// so each warp reads one panel's row per dimension.
template <int QB, typename T>
__global__ void __launch_bounds__(kThreads) score_tile(const T* __restrict__ panels, int64_t n_vectors, int dim,
                                                       const float* __restrict__ queries, int nq, int kk, int tiles,
                                                       uint64_t* __restrict__ candidates) {
  using Sort = cub::BlockRadixSort<uint64_t, kThreads, kItems>;
  __shared__ typename Sort::TempStorage sort_storage;
  extern __shared__ float shared_queries[];  // QB x dim

  const int tile = blockIdx.x;
  const int q0 = blockIdx.y * QB;
  const int nqb = min(QB, nq - q0);
  for (int i = threadIdx.x; i < QB * dim; i += kThreads) {
    const int q = i / dim;
    shared_queries[i] = q < nqb ? queries[int64_t(q0 + q) * dim + i % dim] : 0.0f;
  }
  __syncthreads();

  const int64_t base = int64_t(tile) * kVectorTile;
  const T* vec[kItems];
  bool valid[kItems];
#pragma unroll
  for (int i = 0; i < kItems; ++i) {
    const int64_t v = base + i * kThreads + threadIdx.x;
    valid[i] = v < n_vectors;
    const int64_t vv = valid[i] ? v : 0;
    vec[i] = panels + (vv / kPanelVectors) * int64_t(dim) * kPanelVectors + vv % kPanelVectors;
  }
  float acc[QB][kItems];
#pragma unroll
  for (int q = 0; q < QB; ++q)
#pragma unroll
    for (int i = 0; i < kItems; ++i) acc[q][i] = 0.0f;
  for (int j = 0; j < dim; ++j) {
    float x[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) x[i] = to_float(vec[i][int64_t(j) * kPanelVectors]);
#pragma unroll
    for (int q = 0; q < QB; ++q) {
      const float s = shared_queries[q * dim + j];
#pragma unroll
      for (int i = 0; i < kItems; ++i) acc[q][i] = __fmaf_rn(s, x[i], acc[q][i]);  // the CPU's chain
    }
  }

#pragma unroll
  for (int q = 0; q < QB; ++q) {
    if (q >= nqb) break;
    uint64_t keys[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int64_t v = base + i * kThreads + threadIdx.x;
      keys[i] = valid[i] ? rank_key(acc[q][i], uint32_t(v)) : 0;
    }
    Sort(sort_storage).SortDescending(keys);  // blocked: thread t holds ranks t*kItems ..
    uint64_t* out = candidates + (int64_t(q0 + q) * tiles + tile) * kk;
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int rank = threadIdx.x * kItems + i;
      if (rank < kk) out[rank] = keys[i];
    }
    __syncthreads();  // the sort's storage is reused by the next query
  }
}

template <int QB>
void launch_tiles(const void* panels, bool half, int64_t n_vectors, int dim, const float* queries, int nq, int kk,
                  int tiles, uint64_t* candidates, cudaStream_t stream) {
  const dim3 grid(unsigned(tiles), unsigned((nq + QB - 1) / QB));
  const size_t shared = size_t(QB) * size_t(dim) * sizeof(float);
  if (half)
    score_tile<QB, __half><<<grid, kThreads, shared, stream>>>(static_cast<const __half*>(panels), n_vectors, dim,
                                                               queries, nq, kk, tiles, candidates);
  else
    score_tile<QB, float><<<grid, kThreads, shared, stream>>>(static_cast<const float*>(panels), n_vectors, dim,
                                                              queries, nq, kk, tiles, candidates);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

int queries_per_tile_block(int dim) {
  // At most 16 KiB of queries in shared memory beside the sort's storage.
  if (dim <= 512) return 8;
  if (dim <= 1024) return 4;
  if (dim <= 2048) return 2;
  return 1;
}

void launch_scatter_to_panels(const float* rows, int64_t n, int dim, int64_t first_id, void* panels, bool half,
                              cudaStream_t stream) {
  const int64_t count = n * dim;
  if (count == 0) return;
  const int block = 256;
  const unsigned blocks = unsigned((count + block - 1) / block);
  if (half)
    scatter_to_panels<__half><<<blocks, block, 0, stream>>>(rows, n, dim, first_id, static_cast<__half*>(panels));
  else
    scatter_to_panels<float><<<blocks, block, 0, stream>>>(rows, n, dim, first_id, static_cast<float*>(panels));
  CUDA_CHECK(cudaGetLastError());
}

void launch_score_tiles(const void* panels, bool half, int64_t n_vectors, int dim, const float* queries, int nq,
                        int kk, int tiles, uint64_t* candidates, cudaStream_t stream) {
  switch (queries_per_tile_block(dim)) {
    case 8: return launch_tiles<8>(panels, half, n_vectors, dim, queries, nq, kk, tiles, candidates, stream);
    case 4: return launch_tiles<4>(panels, half, n_vectors, dim, queries, nq, kk, tiles, candidates, stream);
    case 2: return launch_tiles<2>(panels, half, n_vectors, dim, queries, nq, kk, tiles, candidates, stream);
    default: return launch_tiles<1>(panels, half, n_vectors, dim, queries, nq, kk, tiles, candidates, stream);
  }
}

size_t segmented_sort_bytes(int items, int segments, const int* offsets) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeysDescending(nullptr, bytes, static_cast<const uint64_t*>(nullptr),
                                                               static_cast<uint64_t*>(nullptr), items, segments,
                                                               offsets, offsets + 1));
  return bytes;
}

void launch_segmented_sort(void* temp, size_t temp_bytes, const uint64_t* keys_in, uint64_t* keys_out, int items,
                           int segments, const int* offsets, cudaStream_t stream) {
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeysDescending(temp, temp_bytes, keys_in, keys_out, items, segments,
                                                               offsets, offsets + 1, 0, 64, stream));
}

}  // namespace sluice::kernels::cuda_detail
