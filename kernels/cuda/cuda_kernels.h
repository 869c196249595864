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
// The tensor-core path for F16 weights (cuda_matmul.cu): used from kTensorMinTokens tokens on,
// when rows and cols are multiples of 16 and the operands 32-byte aligned.
inline constexpr int64_t kTensorMinTokens = 16;
bool tensor_core_eligible(const MatrixView& w, const float* x, int64_t n, const float* y);
// x (n x cols) rounded to half into xh (n_pad x cols halves, the rows past n zero).
void launch_to_half(const float* x, int64_t n, int64_t n_pad, int64_t cols, void* xh, cudaStream_t stream);
// y (n x rows) = xh W^T on the tensor cores; xh holds n rounded up to 16 rows.
void launch_matmul_f16_tensor(const MatrixView& w, const void* xh, int64_t n, float* y, cudaStream_t stream);
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

// Decode-step forms reading positions and block tables from device memory (backend.h's *_at).
void launch_rope_at(float* x, const TokenPlaces& at, int n_heads, int head_dim, int n_rot, float freq_base,
                    cudaStream_t stream);
void launch_kv_store_at(const KvLayerView& kv, const TokenPlaces& at, const float* k, const float* v,
                        cudaStream_t stream);
void launch_attention_at(const KvLayerView& kv, const TokenPlaces& at, const float* q, const AttentionShape& shape,
                         float* out, cudaStream_t stream);

// One row's sampling parameters in device memory (TokenSampling with its penalties at
// [penalty_begin, +penalty_count) of one staged array).
struct DeviceSampling {
  float temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  int32_t top_k, penalty_begin, penalty_count;
  double uniform;
};
// Device scratch of one sampling launch over rows x vocab logits (not needed when greedy only):
// rank keys and their sorted copy (rows x vocab each), rows + 1 segment offsets, CUB's storage.
struct SamplingScratch {
  uint64_t* keys;
  uint64_t* sorted;
  int32_t* offsets;
  void* temp;
  size_t temp_bytes;
};
size_t sampling_sort_bytes(int64_t rows, int64_t vocab);  // SamplingScratch::temp's size
// Penalties, then one token per row into `tokens` (device memory).
void launch_sample(float* logits, int64_t rows, int64_t vocab, const DeviceSampling* params,
                   const TokenPenalty* penalties, bool greedy_only, const SamplingScratch& scratch, int32_t* tokens,
                   cudaStream_t stream);

}  // namespace sluice::kernels::cuda_detail
