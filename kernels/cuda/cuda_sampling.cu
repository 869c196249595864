// Token sampling on the GPU (kernels/token_sampling.h's rule): penalties, then per row either the
// first largest logit (greedy) or CUB's segmented radix sort of the rows' 64-bit rank keys and one
// block per row walking the sorted candidates through top-k, top-p, min-p and the draw. The sums
// are in double like the host's, taken as block scans instead of one running sum.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include <cfloat>
#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"

namespace sluice::kernels::cuda_detail {
namespace {

constexpr int kThreads = 256;

// The order of token_sampling.h as one key, highest first: the logit's bits made monotone above
// the id's complement (a lower id is a higher key). +0 stands for -0, which the host's
// comparisons equal to it.
__device__ __forceinline__ uint64_t rank_key(float logit, uint32_t id) {
  uint32_t b = __float_as_uint(logit == 0.0f ? 0.0f : logit);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (uint64_t(b) << 32) | uint64_t(0xffffffffu - id);
}
__device__ __forceinline__ float key_logit(uint64_t key) {
  const uint32_t b = uint32_t(key >> 32);
  return __uint_as_float((b & 0x80000000u) ? (b & 0x7fffffffu) : ~b);
}
__device__ __forceinline__ int32_t key_id(uint64_t key) { return int32_t(0xffffffffu - uint32_t(key)); }

__device__ __forceinline__ bool penalised(const DeviceSampling& p) {
  return p.penalty_count > 0 &&
         (p.repetition_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f);
}

// Block per row; each listed token is distinct, so no two threads touch one logit.
__global__ void penalties_kernel(float* logits, int64_t vocab, const DeviceSampling* __restrict__ params,
                                 const TokenPenalty* __restrict__ penalties) {
  const DeviceSampling p = params[blockIdx.x];
  if (!penalised(p)) return;
  float* row = logits + int64_t(blockIdx.x) * vocab;
  for (int i = threadIdx.x; i < p.penalty_count; i += blockDim.x) {
    const TokenPenalty e = penalties[p.penalty_begin + i];
    if (e.token < 0 || e.token >= vocab) continue;
    float l = row[e.token];
    l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    row[e.token] = l - (p.presence_penalty + p.frequency_penalty * float(e.count));
  }
}

__global__ void keys_kernel(const float* __restrict__ logits, int64_t rows, int64_t vocab, uint64_t* keys,
                            int32_t* offsets) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i <= rows && i < rows + 1) offsets[i] = int32_t(i * vocab);
  if (i < rows * vocab) keys[i] = rank_key(logits[i], uint32_t(i % vocab));
}

struct MinInt {
  __device__ int operator()(int a, int b) const { return a < b ? a : b; }
};

struct ArgMax {
  float value;
  int32_t id;
};
struct FirstLargest {
  __device__ ArgMax operator()(const ArgMax& a, const ArgMax& b) const {
    if (b.value > a.value || (b.value == a.value && b.id < a.id)) return b;
    return a;
  }
};

using ReduceArg = cub::BlockReduce<ArgMax, kThreads>;
using ReduceInt = cub::BlockReduce<int, kThreads>;
using ReduceDouble = cub::BlockReduce<double, kThreads>;
using ScanDouble = cub::BlockScan<double, kThreads>;

union SelectStorage {
  typename ReduceArg::TempStorage arg;
  typename ReduceInt::TempStorage count;
  typename ReduceDouble::TempStorage sum;
  typename ScanDouble::TempStorage scan;
};

// The first index i < keep whose inclusive running sum of weight(i) passes `reached` (reached(sum)
// true), or keep when none does. Block-uniform result.
template <typename Weight, typename Reached>
__device__ int64_t first_passing(int64_t keep, Weight weight, Reached reached, SelectStorage& storage,
                                 int64_t& found) {
  double carry = 0;
  for (int64_t base = 0; base < keep; base += kThreads) {
    const int64_t i = base + threadIdx.x;
    const double w = i < keep ? weight(i) : 0.0;
    double inclusive, chunk_total;
    ScanDouble(storage.scan).InclusiveSum(w, inclusive, chunk_total);
    __syncthreads();
    const int hit = (i < keep && reached(carry + inclusive)) ? int(threadIdx.x) : kThreads;
    const int first = ReduceInt(storage.count).Reduce(hit, MinInt());
    if (threadIdx.x == 0) found = first < kThreads ? base + first : -1;
    __syncthreads();
    if (found >= 0) return found;
    carry += chunk_total;
  }
  return keep;
}

__device__ double block_total(double v, SelectStorage& storage, double& shared) {
  const double total = ReduceDouble(storage.sum).Sum(v);
  if (threadIdx.x == 0) shared = total;
  __syncthreads();
  const double out = shared;
  __syncthreads();
  return out;
}

// Block per row: greedy rows take the first largest logit; the others walk their sorted keys.
__global__ void __launch_bounds__(kThreads) select_kernel(const float* __restrict__ logits, int64_t vocab,
                                                           const DeviceSampling* __restrict__ params,
                                                           const uint64_t* __restrict__ sorted, int32_t* tokens) {
  __shared__ SelectStorage storage;
  __shared__ double shared_total;
  __shared__ int64_t shared_found;
  __shared__ int shared_count;
  const DeviceSampling p = params[blockIdx.x];
  const float* row = logits + int64_t(blockIdx.x) * vocab;
  if (p.temperature <= 0 || sorted == nullptr) {
    ArgMax best{-INFINITY, 0};
    bool any = false;
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      const ArgMax c{row[i], int32_t(i)};
      if (!any || c.value > best.value) best = c;  // strided ids rise, so a tie keeps the first
      any = true;
    }
    if (!any) best = ArgMax{-INFINITY, int32_t(vocab)};
    const ArgMax winner = ReduceArg(storage.arg).Reduce(best, FirstLargest());
    if (threadIdx.x == 0) tokens[blockIdx.x] = winner.id < vocab ? winner.id : 0;
    return;
  }
  const uint64_t* keys = sorted + int64_t(blockIdx.x) * vocab;
  // -inf sorts last: drop those unless every logit is -inf.
  int finite = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += kThreads) finite += key_logit(keys[i]) != -INFINITY;
  finite = ReduceInt(storage.count).Sum(finite);
  if (threadIdx.x == 0) shared_count = finite;
  __syncthreads();
  finite = shared_count;
  __syncthreads();  // read by all before thread 0 writes shared_count again
  int64_t keep = vocab;
  if (finite > 0 && finite < keep) keep = finite;
  if (p.top_k > 0 && p.top_k < keep) keep = p.top_k;
  const float mx = key_logit(keys[0]);
  auto prob = [&](int64_t i) { return exp(double(key_logit(keys[i]) - mx)); };
  if (p.top_p < 1.0f) {
    double part = 0;
    for (int64_t i = threadIdx.x; i < keep; i += kThreads) part += prob(i);
    const double sum = block_total(part, storage, shared_total);
    const int64_t at = first_passing(
        keep, [&](int64_t i) { return prob(i) / sum; }, [&](double acc) { return acc >= double(p.top_p); },
        storage, shared_found);
    if (at < keep) keep = at + 1;
  }
  if (p.min_p > 0) {
    // Probabilities fall along the sorted keys, so the survivors are a prefix; prob(0) is 1.
    int n = 0;
    for (int64_t i = threadIdx.x; i < keep; i += kThreads) n += i == 0 || prob(i) >= double(p.min_p);
    n = ReduceInt(storage.count).Sum(n);
    if (threadIdx.x == 0) shared_count = n;
    __syncthreads();
    keep = shared_count;
    __syncthreads();
  }
  auto weight = [&](int64_t i) { return exp(double(key_logit(keys[i]) - mx) / double(p.temperature)); };
  double part = 0;
  for (int64_t i = threadIdx.x; i < keep; i += kThreads) part += weight(i);
  const double total = block_total(part, storage, shared_total);
  const double r = p.uniform * total;
  const int64_t at = first_passing(keep, weight, [&](double acc) { return acc > r; }, storage, shared_found);
  if (threadIdx.x == 0) tokens[blockIdx.x] = key_id(keys[at < keep ? at : keep - 1]);
}

}  // namespace

size_t sampling_sort_bytes(int64_t rows, int64_t vocab) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeysDescending(
      nullptr, bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr), int(rows * vocab),
      int(rows), static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(nullptr)));
  return bytes;
}

void launch_sample(float* logits, int64_t rows, int64_t vocab, const DeviceSampling* params,
                   const TokenPenalty* penalties, bool greedy_only, const SamplingScratch& scratch, int32_t* tokens,
                   cudaStream_t stream) {
  if (rows <= 0 || vocab <= 0) return;
  penalties_kernel<<<unsigned(rows), kThreads, 0, stream>>>(logits, vocab, params, penalties);
  CUDA_CHECK(cudaGetLastError());
  const uint64_t* sorted = nullptr;
  if (!greedy_only) {
    const int64_t items = rows * vocab;
    keys_kernel<<<unsigned((items + rows + kThreads) / kThreads), kThreads, 0, stream>>>(logits, rows, vocab,
                                                                                        scratch.keys, scratch.offsets);
    CUDA_CHECK(cudaGetLastError());
    size_t temp_bytes = scratch.temp_bytes;
    CUDA_CHECK(cub::DeviceSegmentedRadixSort::SortKeysDescending(scratch.temp, temp_bytes, scratch.keys,
                                                                 scratch.sorted, int(items), int(rows),
                                                                 scratch.offsets, scratch.offsets + 1, 0, 64, stream));
    sorted = scratch.sorted;
  }
  select_kernel<<<unsigned(rows), kThreads, 0, stream>>>(logits, vocab, params, sorted, tokens);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace sluice::kernels::cuda_detail
