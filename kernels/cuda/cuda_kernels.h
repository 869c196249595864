// The CUDA backend's kernel launchers: host functions that queue one kernel each on `stream`
// and check the launch. Internal to kernels/cuda/ (CudaBackend is the interface); every pointer
// is device memory and every size has been validated by the caller.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"

namespace sluice::kernels::cuda_detail {

// y (n x rows) = x (n x cols) W^T for F32 and F16 weights.
void launch_matmul_float(const MatrixView& w, const float* x, int64_t n, float* y, cudaStream_t stream);
// Q8_0 activations: qs n x cols int8, d n x (cols/32) float, as CPU's Q8Activations.
void launch_quantize_q8(const float* x, int64_t n, int64_t cols, int8_t* qs, float* d, cudaStream_t stream);
// y = W x for Q8_0 / Q4_0 weights over activations launch_quantize_q8 wrote.
void launch_matmul_quant(const MatrixView& w, const int8_t* qs, const float* d, int64_t n, float* y,
                         cudaStream_t stream);

void launch_rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out,
                     cudaStream_t stream);
void launch_rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base,
                 cudaStream_t stream);
void launch_swiglu(float* gate, const float* up, int64_t count, cudaStream_t stream);
void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream);
// Rows rows[0..n) of w (row ids in device memory, already checked) into out, n x w.cols.
void launch_get_rows(const MatrixView& w, const int32_t* rows, int64_t n, float* out, cudaStream_t stream);
void launch_kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                     const float* v, cudaStream_t stream);

// One segment of a batched attention launch, in device memory: the segment's tokens are the
// launch's global tokens [token_begin, token_begin + n).
struct AttentionTask {
  const float* q;
  const int32_t* block_table;
  int64_t pos0;
  int64_t n;
  float* out;
  int64_t token_begin;
};
constexpr int kAttentionMaxHeadDim = 512;
// `tasks` (device) holds `count` segments with `total_tokens` tokens in all.
void launch_attention(const KvLayerView& kv, const AttentionTask* tasks, int count, int64_t total_tokens,
                      const AttentionShape& shape, cudaStream_t stream);

}  // namespace sluice::kernels::cuda_detail
