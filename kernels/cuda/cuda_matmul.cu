// Matrix products on the GPU: F32 and F16 in float arithmetic, Q8_0 and Q4_0 as exact integer
// block dots (dp4a) over Q8_0-quantised activations, scaled and summed in float: the CPU twin's
// arithmetic per block (kernels/cpu/matmul.cc), accumulated in a different order.
//
// Layout of the work: one warp per output row, a tile of up to kTokens tokens per warp, so a
// weight block is read once per tile of tokens. Lanes stride over the row (columns for the
// float types, 32-element blocks for the quantised ones) and the tile's sums are reduced
// across the warp at the end. The quantised blocks (34 and 18 bytes) are only 2-byte aligned,
// so their 32-bit words are assembled from 16-bit loads.
//
// F16 weights with 16 or more tokens take the tensor cores instead (WMMA, 16x16x16 tiles, half
// inputs, float accumulation): the activations are rounded to half once per product (relative
// error 2^-11; values beyond 65,504 become infinite), so those products agree with the CPU twin
// within that rounding, not bit for bit.
#include <cuda_fp16.h>
#include <mma.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_device_util.cuh"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels::cuda_detail {
namespace {

constexpr int kTokens = 8;         // tokens per warp
constexpr int kWarpsPerBlock = 4;  // rows per thread block

// A 32-bit word from a 2-byte-aligned address (little-endian, as the bytes lie in the file).
__device__ __forceinline__ int load_i32_a2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return int(uint32_t(h[0]) | (uint32_t(h[1]) << 16));
}

// Writes the tile's sums: lane 0 after the warp reductions.
__device__ __forceinline__ void store_tile(float (&acc)[kTokens], int nt, int64_t t0, int64_t rows, int64_t row,
                                           float* y) {
#pragma unroll
  for (int t = 0; t < kTokens; ++t) {
    const float s = warp_sum(acc[t]);
    if (t < nt && (threadIdx.x & 31) == 0) y[(t0 + t) * rows + row] = s;
  }
}

template <typename W>
__global__ void matmul_float_kernel(const W* __restrict__ w, int64_t rows, int64_t cols, const float* __restrict__ x,
                                    int64_t n, float* __restrict__ y) {
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const int64_t t0 = int64_t(blockIdx.y) * kTokens;
  const int nt = int(imin64(kTokens, n - t0));
  const W* wr = w + row * cols;
  float acc[kTokens] = {};
  for (int64_t c = lane; c < cols; c += 32) {
    const float wv = to_float(wr[c]);
#pragma unroll
    for (int t = 0; t < kTokens; ++t)
      if (t < nt) acc[t] = fmaf(wv, x[(t0 + t) * cols + c], acc[t]);
  }
  store_tile(acc, nt, t0, rows, row, y);
}

// One warp per 32-element block: amax / 127 as the scale, x * (1 / d) rounded to nearest even,
// the operations of the CPU's scalar_quantize_q8 in the same order (so the same bytes).
__global__ void quantize_q8_kernel(const float* __restrict__ x, int64_t blocks, int8_t* __restrict__ qs,
                                   float* __restrict__ d) {
  const int64_t b = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (b >= blocks) return;
  const int lane = threadIdx.x & 31;
  const float v = x[b * 32 + lane];
  const float amax = warp_max(fabsf(v));
  const float di = amax / 127.0f;
  const float id = di != 0.0f ? 1.0f / di : 0.0f;
  qs[b * 32 + lane] = int8_t(__float2int_rn(__fmul_rn(v, id)));
  if (lane == 0) d[b] = di;
}

template <bool kQ4>
__global__ void matmul_quant_kernel(const uint8_t* __restrict__ w, int64_t rows, int64_t cols,
                                    const int8_t* __restrict__ xq, const float* __restrict__ xd, int64_t n,
                                    float* __restrict__ y) {
  constexpr int kBlockBytes = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x & 31;
  const int64_t t0 = int64_t(blockIdx.y) * kTokens;
  const int nt = int(imin64(kTokens, n - t0));
  const int64_t nb = cols / 32;
  float acc[kTokens] = {};
  for (int64_t j = lane; j < nb; j += 32) {
    const uint8_t* blk = w + (row * nb + j) * kBlockBytes;
    const float dw = load_f16(blk);
    int wq[8];
    if constexpr (kQ4) {
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int v = load_i32_a2(blk + 2 + 4 * k);
        wq[k] = v & 0x0f0f0f0f;             // weights 4k..4k+3 (low nibbles)
        wq[4 + k] = (v >> 4) & 0x0f0f0f0f;  // weights 16+4k.. (high nibbles)
      }
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) wq[k] = load_i32_a2(blk + 2 + 4 * k);
    }
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= nt) continue;
      const int* xt = reinterpret_cast<const int*>(xq + (t0 + t) * cols + j * 32);
      int dot = 0, xsum = 0;
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int xv = xt[k];
        dot = __dp4a(wq[k], xv, dot);
        if constexpr (kQ4) xsum = __dp4a(0x01010101, xv, xsum);
      }
      if constexpr (kQ4) dot -= 8 * xsum;  // nibbles are stored as weight + 8
      acc[t] += float(dot) * dw * xd[(t0 + t) * nb + j];
    }
  }
  store_tile(acc, nt, t0, rows, row, y);
}

dim3 matmul_grid(int64_t rows, int64_t n) {
  return dim3(unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned((n + kTokens - 1) / kTokens));
}

// x (n x cols floats) rounded to half into xh (n_pad x cols), rows n..n_pad-1 zero.
__global__ void to_half_kernel(const float* __restrict__ x, int64_t n, int64_t n_pad, int64_t cols, __half* xh) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_pad * cols) return;
  xh[i] = i < n * cols ? __float2half_rn(x[i]) : __float2half_rn(0.0f);
}

constexpr int kTensorWarps = 4;  // 2 x 2 warps: a block covers 32 tokens x 32 rows

// Warp (token tile, row tile) of 16 x 16 outputs: y[t][r] = sum_k xh[t][k] * w[r][k]. The
// weights read as the column-major B operand (B[k][r] = w[r][k]). A partial last token tile is
// staged in shared memory and only its real tokens written.
__global__ void __launch_bounds__(32 * kTensorWarps) matmul_f16_tensor_kernel(const __half* __restrict__ xh,
                                                                             const __half* __restrict__ w, int64_t n,
                                                                             int64_t rows, int64_t cols, float* y) {
  using namespace nvcuda;
  __shared__ float stage[kTensorWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int64_t t0 = (int64_t(blockIdx.y) * 2 + warp / 2) * 16;
  const int64_t r0 = (int64_t(blockIdx.x) * 2 + warp % 2) * 16;
  if (t0 >= n || r0 >= rows) return;  // whole warps leave; no block barrier follows
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  for (int64_t k = 0; k < cols; k += 16) {
    wmma::load_matrix_sync(a, xh + t0 * cols + k, unsigned(cols));
    wmma::load_matrix_sync(b, w + r0 * cols + k, unsigned(cols));
    wmma::mma_sync(c, a, b, c);
  }
  if (t0 + 16 <= n) {
    wmma::store_matrix_sync(y + t0 * rows + r0, c, unsigned(rows), wmma::mem_row_major);
    return;
  }
  wmma::store_matrix_sync(stage[warp], c, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = lane; i < 256; i += 32)
    if (t0 + i / 16 < n) y[(t0 + i / 16) * rows + r0 + i % 16] = stage[warp][i];
}

}  // namespace

bool tensor_core_eligible(const MatrixView& w, const float* x, int64_t n, const float* y) {
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 32 == 0; };
  return w.type == DType::kF16 && n >= kTensorMinTokens && w.rows % 16 == 0 && w.cols % 16 == 0 && aligned(w.data) &&
         aligned(x) && aligned(y);
}

void launch_to_half(const float* x, int64_t n, int64_t n_pad, int64_t cols, void* xh, cudaStream_t stream) {
  const int64_t count = n_pad * cols;
  if (count <= 0) return;
  to_half_kernel<<<unsigned((count + 255) / 256), 256, 0, stream>>>(x, n, n_pad, cols, static_cast<__half*>(xh));
  CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_f16_tensor(const MatrixView& w, const void* xh, int64_t n, float* y, cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0) return;
  const dim3 grid(unsigned((w.rows + 31) / 32), unsigned((n + 31) / 32));
  matmul_f16_tensor_kernel<<<grid, 32 * kTensorWarps, 0, stream>>>(
      static_cast<const __half*>(xh), static_cast<const __half*>(w.data), n, w.rows, w.cols, y);
  CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_float(const MatrixView& w, const float* x, int64_t n, float* y, cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0) return;
  const dim3 grid = matmul_grid(w.rows, n);
  if (w.type == DType::kF32)
    matmul_float_kernel<float><<<grid, 32 * kWarpsPerBlock, 0, stream>>>(static_cast<const float*>(w.data), w.rows,
                                                                         w.cols, x, n, y);
  else
    matmul_float_kernel<__half><<<grid, 32 * kWarpsPerBlock, 0, stream>>>(static_cast<const __half*>(w.data),
                                                                          w.rows, w.cols, x, n, y);
  CUDA_CHECK(cudaGetLastError());
}

void launch_quantize_q8(const float* x, int64_t n, int64_t cols, int8_t* qs, float* d, cudaStream_t stream) {
  const int64_t blocks = n * (cols / 32);
  if (blocks <= 0) return;
  quantize_q8_kernel<<<unsigned((blocks + kWarpsPerBlock - 1) / kWarpsPerBlock), 32 * kWarpsPerBlock, 0, stream>>>(
      x, blocks, qs, d);
  CUDA_CHECK(cudaGetLastError());
}

void launch_matmul_quant(const MatrixView& w, const int8_t* qs, const float* d, int64_t n, float* y,
                         cudaStream_t stream) {
  if (n <= 0 || w.rows <= 0) return;
  const dim3 grid = matmul_grid(w.rows, n);
  const auto* wb = static_cast<const uint8_t*>(w.data);
  if (w.type == DType::kQ4_0)
    matmul_quant_kernel<true><<<grid, 32 * kWarpsPerBlock, 0, stream>>>(wb, w.rows, w.cols, qs, d, n, y);
  else
    matmul_quant_kernel<false><<<grid, 32 * kWarpsPerBlock, 0, stream>>>(wb, w.rows, w.cols, qs, d, n, y);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace sluice::kernels::cuda_detail
