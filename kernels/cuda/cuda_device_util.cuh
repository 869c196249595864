// Device helpers both kernel files use: warp reductions, a 64-bit min callable from host and
// device, and the float <-> storage conversions (F32, IEEE half; half from raw file bytes).
// Internal to kernels/cuda/; included by .cu files only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace sluice::kernels::cuda_detail {

__host__ __device__ __forceinline__ int64_t imin64(int64_t a, int64_t b) { return a < b ? a : b; }

// Sum / max over the 32 lanes of a warp; every lane gets the result.
template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// An IEEE half stored at a 2-byte-aligned address of a file's bytes (a quantised block's scale).
__device__ __forceinline__ float load_f16(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

template <typename T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ float to_float<__half>(__half v) { return __half2float(v); }

// Rounded to nearest even for half: the CPU's fp32_to_fp16.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }

}  // namespace sluice::kernels::cuda_detail
