// The CUDA backend's non-matmul kernels: RMSNorm, rotary, SwiGLU, add, row lookup, and paged
// KV writes and attention. Each follows its CPU twin's formula (kernels/cpu/elementwise.cc,
// kernels/cpu/attention.cc); where the order of a sum differs, the header says so.
#include <cuda_fp16.h>

#include <cfloat>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_device_util.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::cuda_detail {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count, int threads = kThreads) { return unsigned((count + threads - 1) / threads); }

// Block-wide sum / max through `scratch` (32 entries); every thread gets the result. Ends with
// a barrier, so shared memory written before the call is visible after it.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  T total = 0;
  for (int i = 0; i < warps; ++i) total += scratch[i];
  __syncthreads();
  return total;
}

__device__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float m = -FLT_MAX;
  for (int i = 0; i < warps; ++i) m = fmaxf(m, scratch[i]);
  __syncthreads();
  return m;
}

// RMSNorm: the sum of squares in double, as on the CPU.
__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ weight, int64_t dim, float eps,
                                float* out) {
  __shared__ double scratch[32];
  const float* xr = x + int64_t(blockIdx.x) * dim;
  float* orow = out + int64_t(blockIdx.x) * dim;
  double ss = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) ss += double(xr[i]) * xr[i];
  ss = block_sum(ss, scratch);
  const float scale = 1.0f / sqrtf(float(ss / double(dim)) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) orow[i] = xr[i] * scale * weight[i];
}

// Rotates pair i of one head's features `v` for position `pos` (the CPU twin's formula).
__device__ __forceinline__ void rotate_pair(float* v, int i, int n_rot, int64_t pos, float freq_base) {
  const float freq = 1.0f / powf(freq_base, float(2 * i) / float(n_rot));
  const float theta = float(pos) * freq;
  float sn, cs;
  sincosf(theta, &sn, &cs);
  const float a = v[2 * i], b = v[2 * i + 1];
  v[2 * i] = a * cs - b * sn;
  v[2 * i + 1] = a * sn + b * cs;
}

// One thread per rotated pair.
__global__ void rope_kernel(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0,
                            float freq_base) {
  const int half = n_rot / 2;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * n_heads * half) return;
  const int64_t th = idx / half;  // token * n_heads + head
  rotate_pair(x + th * head_dim, int(idx % half), n_rot, pos0 + th / n_heads, freq_base);
}

__global__ void swiglu_kernel(float* gate, const float* __restrict__ up, int64_t count) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + expf(-g)) * up[i];
}

__global__ void add_kernel(float* x, const float* __restrict__ y, int64_t count) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) x[i] += y[i];
}

// One thread per (column, row of the launch): blockIdx.y picks the row id.
// A row id outside [0, n_rows) (possible only for ids staged in device memory, which the host
// has not checked) reads as zeros.
__global__ void get_rows_kernel(DType type, const uint8_t* __restrict__ base, int64_t row_bytes_n, int64_t n_rows,
                                const int32_t* __restrict__ rows, int64_t cols, float* out_all) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float* out = out_all + int64_t(blockIdx.y) * cols;
  const int32_t row = rows[blockIdx.y];
  if (row < 0 || row >= n_rows) {
    out[c] = 0.0f;
    return;
  }
  const uint8_t* row_bytes = base + int64_t(row) * row_bytes_n;
  switch (type) {
    case DType::kF32: out[c] = reinterpret_cast<const float*>(row_bytes)[c]; return;
    case DType::kF16: out[c] = __half2float(reinterpret_cast<const __half*>(row_bytes)[c]); return;
    case DType::kQ8_0: {
      const uint8_t* blk = row_bytes + (c / 32) * sizeof(BlockQ8_0);
      out[c] = load_f16(blk) * float(int8_t(blk[2 + c % 32]));
      return;
    }
    case DType::kQ4_0: {
      const uint8_t* blk = row_bytes + (c / 32) * sizeof(BlockQ4_0);
      const int j = int(c % 32);
      const int nibble = j < 16 ? (blk[2 + j] & 0x0f) : (blk[2 + j - 16] >> 4);
      out[c] = load_f16(blk) * float(nibble - 8);
      return;
    }
    default: return;
  }
}

// One thread per (token, feature): values row-major per slot, keys feature-major per block.
template <typename KV>
__global__ void kv_store_kernel(KV* k_pool, KV* v_pool, int block_size, int kv_dim, const int32_t* __restrict__ table,
                                int64_t pos0, int64_t n, const float* __restrict__ k, const float* __restrict__ v) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * kv_dim) return;
  const int64_t t = idx / kv_dim, f = idx % kv_dim;
  const int64_t pos = pos0 + t, block = table[pos / block_size], slot = pos % block_size;
  v_pool[(block * block_size + slot) * kv_dim + f] = from_float<KV>(v[idx]);
  k_pool[(block * kv_dim + f) * block_size + slot] = from_float<KV>(k[idx]);
}

constexpr int kAttentionThreads = 128;
constexpr int kAttentionChunk = 1024;  // positions scored per pass (shared memory: 4 KB)
constexpr int kDimsPerThread = kAttentionMaxHeadDim / kAttentionThreads;

// One thread block per (token, head). Positions are taken in chunks of kAttentionChunk: each
// thread scores a share of the chunk's positions (a dot over head_dim against the key block,
// feature-major, so neighbouring threads read neighbouring slots), then the chunk is folded
// into a running softmax (max, sum and the output rescaled when the max grows), each thread
// owning head_dim / blockDim output features. The result is softmax(q K^T / sqrt(d)) V as on
// the CPU, summed in another order. attend() is one (token, head): query q (this head's
// features), positions 0..pos through `table`, output `out` (this head's features).
template <typename KV>
__device__ void attend(const KV* __restrict__ k_pool, const KV* __restrict__ v_pool, int block_size, int kv_dim,
                       const float* q, const int32_t* __restrict__ table, int64_t pos, float* out, int kvh,
                       int head_dim, float scale) {
  extern __shared__ float smem[];
  float* qs = smem;                       // head_dim
  float* sc = smem + head_dim;            // kAttentionChunk
  float* scratch = sc + kAttentionChunk;  // 32
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) qs[d] = q[d];
  __syncthreads();

  float acc[kDimsPerThread];
#pragma unroll
  for (int k = 0; k < kDimsPerThread; ++k) acc[k] = 0.0f;
  float run_max = -FLT_MAX, run_sum = 0.0f;
  const int64_t head_off = int64_t(kvh) * head_dim;
  for (int64_t p0 = 0; p0 <= pos; p0 += kAttentionChunk) {
    const int m = int(imin64(kAttentionChunk, pos + 1 - p0));
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
      const int64_t p = p0 + i, block = table[p / block_size], slot = p % block_size;
      const KV* kb = k_pool + (block * kv_dim + head_off) * block_size + slot;
      float dot = 0.0f;
      for (int d = 0; d < head_dim; ++d) dot = fmaf(qs[d], to_float(kb[int64_t(d) * block_size]), dot);
      sc[i] = dot * scale;
    }
    float chunk_max = -FLT_MAX;
    for (int i = threadIdx.x; i < m; i += blockDim.x) chunk_max = fmaxf(chunk_max, sc[i]);
    chunk_max = block_max(chunk_max, scratch);  // its barriers publish sc
    const float new_max = fmaxf(run_max, chunk_max);
    const float correction = expf(run_max - new_max);
    float chunk_sum = 0.0f;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
      const float e = expf(sc[i] - new_max);
      sc[i] = e;
      chunk_sum += e;
    }
    chunk_sum = block_sum(chunk_sum, scratch);  // publishes the exponentials
    run_sum = run_sum * correction + chunk_sum;
    run_max = new_max;
#pragma unroll
    for (int k = 0; k < kDimsPerThread; ++k) {
      const int d = threadIdx.x + k * kAttentionThreads;
      if (d >= head_dim) continue;
      float a = acc[k] * correction;
      for (int i = 0; i < m; ++i) {
        const int64_t p = p0 + i, block = table[p / block_size], slot = p % block_size;
        a = fmaf(sc[i], to_float(v_pool[(block * block_size + slot) * kv_dim + head_off + d]), a);
      }
      acc[k] = a;
    }
    __syncthreads();  // sc is rewritten by the next chunk
  }
  const float inv = 1.0f / run_sum;
#pragma unroll
  for (int k = 0; k < kDimsPerThread; ++k) {
    const int d = threadIdx.x + k * kAttentionThreads;
    if (d < head_dim) out[d] = acc[k] * inv;
  }
}

// Block (global token, head) of a launch over segments: the segment is found by its first token.
template <typename KV>
__global__ void attention_kernel(const KV* __restrict__ k_pool, const KV* __restrict__ v_pool, int block_size,
                                 int kv_dim, const AttentionTask* __restrict__ tasks, int count, int n_heads,
                                 int group, int head_dim, float scale) {
  const int64_t g = blockIdx.x;
  int lo = 0, hi = count - 1;  // the last segment starting at or before token g
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (tasks[mid].token_begin <= g) lo = mid; else hi = mid - 1;
  }
  const AttentionTask& s = tasks[lo];
  const int64_t t = g - s.token_begin;
  const int h = blockIdx.y;
  const int64_t stride = int64_t(n_heads) * head_dim;
  attend(k_pool, v_pool, block_size, kv_dim, s.q + t * stride + int64_t(h) * head_dim, s.block_table, s.pos0 + t,
         s.out + t * stride + int64_t(h) * head_dim, h / group, head_dim, scale);
}

// Block (token, head) of a decode step whose positions and block tables are in device memory;
// a padding row (position < 0) gets zeros.
template <typename KV>
__global__ void attention_at_kernel(const KV* __restrict__ k_pool, const KV* __restrict__ v_pool, int block_size,
                                    int kv_dim, const int32_t* __restrict__ positions,
                                    const int32_t* __restrict__ tables, int64_t table_stride, const float* q,
                                    float* out, int n_heads, int group, int head_dim, float scale) {
  const int64_t g = blockIdx.x;
  const int h = blockIdx.y;
  const int64_t at = g * n_heads * head_dim + int64_t(h) * head_dim;
  const int64_t pos = positions[g];
  if (pos < 0) {
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) out[at + d] = 0.0f;
    return;
  }
  attend(k_pool, v_pool, block_size, kv_dim, q + at, tables + g * table_stride, pos, out + at, h / group, head_dim,
         scale);
}

// rope_kernel with each token's position read from device memory (padding rows skipped).
__global__ void rope_at_kernel(float* x, const int32_t* __restrict__ positions, int64_t n, int n_heads, int head_dim,
                               int n_rot, float freq_base) {
  const int half = n_rot / 2;
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * n_heads * half) return;
  const int64_t th = idx / half;
  const int32_t pos = positions[th / n_heads];
  if (pos >= 0) rotate_pair(x + th * head_dim, int(idx % half), n_rot, pos, freq_base);
}

// kv_store_kernel for a decode step: token t at positions[t] through tables + t * table_stride.
template <typename KV>
__global__ void kv_store_at_kernel(KV* k_pool, KV* v_pool, int block_size, int kv_dim,
                                   const int32_t* __restrict__ positions, const int32_t* __restrict__ tables,
                                   int64_t table_stride, int64_t n, const float* __restrict__ k,
                                   const float* __restrict__ v) {
  const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= n * kv_dim) return;
  const int64_t t = idx / kv_dim, f = idx % kv_dim;
  const int64_t pos = positions[t];
  if (pos < 0) return;
  const int64_t block = tables[t * table_stride + pos / block_size], slot = pos % block_size;
  v_pool[(block * block_size + slot) * kv_dim + f] = from_float<KV>(v[idx]);
  k_pool[(block * kv_dim + f) * block_size + slot] = from_float<KV>(k[idx]);
}

}  // namespace

void launch_rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out,
                     cudaStream_t stream) {
  if (n <= 0) return;
  rms_norm_kernel<<<unsigned(n), kThreads, 0, stream>>>(x, weight, dim, eps, out);
  CUDA_CHECK(cudaGetLastError());
}

void launch_rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base,
                 cudaStream_t stream) {
  const int64_t pairs = n * n_heads * (n_rot / 2);
  if (pairs <= 0) return;
  rope_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(x, n, n_heads, head_dim, n_rot, pos0, freq_base);
  CUDA_CHECK(cudaGetLastError());
}

void launch_swiglu(float* gate, const float* up, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  swiglu_kernel<<<blocks_for(count), kThreads, 0, stream>>>(gate, up, count);
  CUDA_CHECK(cudaGetLastError());
}

void launch_add(float* x, const float* y, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(x, y, count);
  CUDA_CHECK(cudaGetLastError());
}

void launch_get_rows(const MatrixView& w, const int32_t* rows, int64_t n, float* out, cudaStream_t stream) {
  if (w.cols <= 0) return;
  constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y
  for (int64_t first = 0; first < n; first += kMaxGridY) {
    const int64_t m = imin64(kMaxGridY, n - first);
    const dim3 grid(blocks_for(w.cols), unsigned(m));
    get_rows_kernel<<<grid, kThreads, 0, stream>>>(w.type, static_cast<const uint8_t*>(w.data),
                                                   dtype_row_bytes(w.type, w.cols), w.rows, rows + first, w.cols,
                                                   out + first * w.cols);
    CUDA_CHECK(cudaGetLastError());
  }
}

void launch_kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                     const float* v, cudaStream_t stream) {
  const int64_t count = n * kv.kv_dim;
  if (count <= 0) return;
  if (kv.type == DType::kF16)
    kv_store_kernel<__half><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<__half*>(kv.k), static_cast<__half*>(kv.v), kv.block_size, kv.kv_dim, block_table, pos0, n, k, v);
  else
    kv_store_kernel<float><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<float*>(kv.k), static_cast<float*>(kv.v), kv.block_size, kv.kv_dim, block_table, pos0, n, k, v);
  CUDA_CHECK(cudaGetLastError());
}

void launch_rope_at(float* x, const TokenPlaces& at, int n_heads, int head_dim, int n_rot, float freq_base,
                    cudaStream_t stream) {
  const int64_t pairs = at.n * n_heads * (n_rot / 2);
  if (pairs <= 0) return;
  rope_at_kernel<<<blocks_for(pairs), kThreads, 0, stream>>>(x, at.positions, at.n, n_heads, head_dim, n_rot,
                                                             freq_base);
  CUDA_CHECK(cudaGetLastError());
}

void launch_kv_store_at(const KvLayerView& kv, const TokenPlaces& at, const float* k, const float* v,
                        cudaStream_t stream) {
  const int64_t count = at.n * kv.kv_dim;
  if (count <= 0) return;
  if (kv.type == DType::kF16)
    kv_store_at_kernel<__half><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<__half*>(kv.k), static_cast<__half*>(kv.v), kv.block_size, kv.kv_dim, at.positions, at.tables,
        at.table_stride, at.n, k, v);
  else
    kv_store_at_kernel<float><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<float*>(kv.k), static_cast<float*>(kv.v), kv.block_size, kv.kv_dim, at.positions, at.tables,
        at.table_stride, at.n, k, v);
  CUDA_CHECK(cudaGetLastError());
}

void launch_attention_at(const KvLayerView& kv, const TokenPlaces& at, const float* q, const AttentionShape& shape,
                         float* out, cudaStream_t stream) {
  if (at.n <= 0) return;
  const dim3 grid(unsigned(at.n), unsigned(shape.n_heads));
  const size_t smem = size_t(shape.head_dim + kAttentionChunk + 32) * sizeof(float);
  const int group = shape.n_heads / shape.n_kv_heads;
  const float scale = 1.0f / sqrtf(float(shape.head_dim));
  if (kv.type == DType::kF16)
    attention_at_kernel<__half><<<grid, kAttentionThreads, smem, stream>>>(
        static_cast<const __half*>(kv.k), static_cast<const __half*>(kv.v), kv.block_size, kv.kv_dim, at.positions,
        at.tables, at.table_stride, q, out, shape.n_heads, group, shape.head_dim, scale);
  else
    attention_at_kernel<float><<<grid, kAttentionThreads, smem, stream>>>(
        static_cast<const float*>(kv.k), static_cast<const float*>(kv.v), kv.block_size, kv.kv_dim, at.positions,
        at.tables, at.table_stride, q, out, shape.n_heads, group, shape.head_dim, scale);
  CUDA_CHECK(cudaGetLastError());
}

void launch_attention(const KvLayerView& kv, const AttentionTask* tasks, int count, int64_t total_tokens,
                      const AttentionShape& shape, cudaStream_t stream) {
  if (total_tokens <= 0 || count <= 0) return;
  const dim3 grid(unsigned(total_tokens), unsigned(shape.n_heads));
  const size_t smem = size_t(shape.head_dim + kAttentionChunk + 32) * sizeof(float);
  const int group = shape.n_heads / shape.n_kv_heads;
  const float scale = 1.0f / sqrtf(float(shape.head_dim));
  if (kv.type == DType::kF16)
    attention_kernel<__half><<<grid, kAttentionThreads, smem, stream>>>(
        static_cast<const __half*>(kv.k), static_cast<const __half*>(kv.v), kv.block_size, kv.kv_dim, tasks, count,
        shape.n_heads, group, shape.head_dim, scale);
  else
    attention_kernel<float><<<grid, kAttentionThreads, smem, stream>>>(
        static_cast<const float*>(kv.k), static_cast<const float*>(kv.v), kv.block_size, kv.kv_dim, tasks, count,
        shape.n_heads, group, shape.head_dim, scale);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace sluice::kernels::cuda_detail
