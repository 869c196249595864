// Launchers of the vector search kernels (cuda_vector_search.cu) for CudaVectorSearch
// (cuda_vector_search.h). Internal to kernels/cuda/; every pointer is device memory and every
// size has been checked by the caller.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace sluice::kernels::cuda_detail {

inline constexpr int kPanelVectors = 32;  // vectors per panel (one warp's loads)
inline constexpr int kVectorTile = 2048;  // vectors per thread block, and the largest k

// Queries one tile block scores together at this dimension (8, 4, 2 or 1).
int queries_per_tile_block(int dim);
// rows (n x dim, row-major) into the panels as vectors first_id .. first_id + n - 1; the panels
// hold floats, or halves (rounded to nearest even) when `half`.
void launch_scatter_to_panels(const float* rows, int64_t n, int dim, int64_t first_id, void* panels, bool half,
                              cudaStream_t stream);
// For every query and tile, the tile's best kk keys (kk <= kVectorTile; key 0 = padding), at
// candidates[(query * tiles + tile) * kk ..], best first.
void launch_score_tiles(const void* panels, bool half, int64_t n_vectors, int dim, const float* queries, int nq,
                        int kk, int tiles, uint64_t* candidates, cudaStream_t stream);
// CUB's segmented radix sort, keys descending; segment s is [offsets[s], offsets[s + 1]).
size_t segmented_sort_bytes(int items, int segments, const int* offsets);
void launch_segmented_sort(void* temp, size_t temp_bytes, const uint64_t* keys_in, uint64_t* keys_out, int items,
                           int segments, const int* offsets, cudaStream_t stream);

}  // namespace sluice::kernels::cuda_detail
